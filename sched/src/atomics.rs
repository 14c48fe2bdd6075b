//! The atomics of this layer's portable state: `core`'s in a normal build,
//! loom's under `--cfg loom`, so that loom model-checks the code the
//! kernel runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// Declares a `const fn` in a normal build and a plain `fn` under loom,
/// whose atomics cannot be built in a constant.
macro_rules! loom_const_fn {
    ($(#[$attribute:meta])* $visibility:vis fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attribute])* $visibility const fn $($rest)*
        #[cfg(loom)]
        $(#[$attribute])* $visibility fn $($rest)*
    };
}
