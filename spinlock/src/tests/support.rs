//! Test helpers: a thread-local CPU slot and a deterministic PRNG.

use core::cell::Cell;

use crate::CpuSlot;

#[cfg(not(loom))]
std::thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[cfg(loom)]
loom::thread_local! {
    static SLOT: Cell<usize> = Cell::new(usize::MAX);
}

/// The slot a test thread set for itself, standing in for the CPU number.
pub(crate) struct ThreadSlot;

impl ThreadSlot {
    /// Gives the calling thread `slot`.
    pub(crate) fn set(slot: usize) {
        SLOT.with(|cell| cell.set(slot));
    }
}

impl CpuSlot for ThreadSlot {
    fn current() -> usize {
        SLOT.with(|cell| cell.get())
    }
}

/// The shared test PRNG.
#[cfg(not(loom))]
pub(crate) use testkit::Rng;
