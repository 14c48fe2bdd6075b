//! `const fn` constructors that become plain `fn`s under loom.
//!
//! The spinlock layer builds its locks in constants (so that kernel objects
//! can be statics) except under `--cfg loom`, whose atomics cannot be built
//! in a constant; constructors of this layer follow suit.

/// Declares a `const fn` in a normal build and a plain `fn` under loom.
macro_rules! loom_const_fn {
    ($(#[$attribute:meta])* $visibility:vis fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attribute])* $visibility const fn $($rest)*
        #[cfg(loom)]
        $(#[$attribute])* $visibility fn $($rest)*
    };
}
