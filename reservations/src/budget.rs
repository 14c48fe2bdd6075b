//! `Budget`: the kernel memory requests may reserve, shared by every CPU.

use crate::sync::{AtomicU64, Ordering};
use crate::ReservationError;

/// Pages of kernel memory not yet reserved or kept. Reserving is a CAS
/// loop that never takes the count below zero, so the pages reserved and
/// kept never exceed what the kernel set aside.
pub struct Budget {
    available: AtomicU64,
}

impl Budget {
    /// A budget of `pages`.
    #[cfg(not(loom))]
    pub const fn new(pages: u64) -> Self {
        Self { available: AtomicU64::new(pages) }
    }

    /// A budget of `pages`.
    #[cfg(loom)]
    pub fn new(pages: u64) -> Self {
        Self { available: AtomicU64::new(pages) }
    }

    /// Pages that can be reserved now (a snapshot).
    pub fn available(&self) -> u64 {
        self.available.load(Ordering::Relaxed)
    }

    /// Takes `pages` from the budget, all or nothing.
    pub(crate) fn take(&self, pages: u64) -> Result<(), ReservationError> {
        // Relaxed: the count is the only shared state; no other memory is
        // published through it.
        let mut available = self.available.load(Ordering::Relaxed);
        loop {
            let Some(left) = available.checked_sub(pages) else {
                return Err(ReservationError::KernelMemory { asked: pages, available });
            };
            match self.available.compare_exchange_weak(available, left, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => available = now,
            }
        }
    }

    /// Gives `pages` back: unused reservations, or kept pages now freed.
    pub(crate) fn give(&self, pages: u64) {
        // Relaxed: as in `take`. Cannot overflow: only pages taken come back.
        self.available.fetch_add(pages, Ordering::Relaxed);
    }

    /// Adds `pages` the kernel sets aside for requests (at boot).
    pub fn set_aside(&self, pages: u64) {
        self.give(pages);
    }

    /// Gives back `pages` a finished request kept and that are now freed.
    pub fn release_kept(&self, pages: u64) {
        self.give(pages);
    }
}

impl core::fmt::Debug for Budget {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        formatter.debug_struct("Budget").field("available", &self.available()).finish()
    }
}
