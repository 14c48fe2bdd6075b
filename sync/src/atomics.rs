//! The atomics the word ring and the generation counter are built from:
//! `core`'s in a normal build, loom's under `--cfg loom`. Nothing else
//! belongs here.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
