//! The atomics the containers are built from: `core`'s in a normal build,
//! loom's under `--cfg loom`, so that loom model-checks the very code the
//! kernel runs. Nothing else belongs here.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
