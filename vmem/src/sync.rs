//! The atomics the owner table and CPU sets are built from: `core`'s in a
//! normal build, loom's under `--cfg loom`. Nothing else belongs here.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
