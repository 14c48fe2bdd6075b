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

/// SplitMix64: small, deterministic, good enough to pick test steps.
#[cfg(not(loom))]
pub(crate) struct Rng(u64);

#[cfg(not(loom))]
impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound`.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}
