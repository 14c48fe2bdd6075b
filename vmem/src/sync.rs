//! The atomics (and `Arc`) the owner table, CPU sets and owed flushes are
//! built from: `core`'s and `alloc`'s in a normal build, loom's under
//! `--cfg loom`. Nothing else belongs here.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use alloc::sync::Arc;
