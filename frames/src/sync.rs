//! The atomics the cached allocator is built from: `core`'s in a normal
//! build, loom's under `--cfg loom`, so that loom model-checks the very code
//! the kernel runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
