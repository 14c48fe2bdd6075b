//! The atomics the fail points are built from: `core`'s, or loom's under
//! `--cfg loom` so that loom checks the very code the kernel runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
