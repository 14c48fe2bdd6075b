//! The CPUs that have run an address space, and the TLB flush an operation
//! asks the kernel to carry out on exactly those CPUs.

use crate::sync::{AtomicU64, Ordering};

/// Up to 256 CPUs by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuSet(pub [u64; 4]);

impl CpuSet {
    /// Whether CPU `index` is in the set.
    pub fn contains(&self, index: usize) -> bool {
        index < 256 && self.0[index / 64] & (1 << (index % 64)) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|word| *word == 0)
    }
}

/// The CPUs that ever activated a space; updated from every CPU.
#[derive(Debug, Default)]
pub(crate) struct RanOn([AtomicU64; 4]);

impl RanOn {
    pub(crate) fn insert(&self, index: usize) {
        if index < 256 {
            // Relaxed: the set is read under the space's lock, which the
            // activating CPU took too.
            self.0[index / 64].fetch_or(1 << (index % 64), Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> CpuSet {
        CpuSet(core::array::from_fn(|word| self.0[word].load(Ordering::Relaxed)))
    }
}

/// Translations the kernel must invalidate, and where: the pages
/// `[start, start + pages * 4096)` (or everything, when `everything`) on
/// every CPU of `cpus`. Empty when nothing was taken away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[must_use = "stale translations stay usable on other CPUs until the flush is carried out"]
pub struct TlbFlush {
    /// First page.
    pub start: u64,
    /// Pages from `start`.
    pub pages: u64,
    /// Flush every user translation instead.
    pub everything: bool,
    /// The CPUs that have run the space.
    pub cpus: CpuSet,
}

impl TlbFlush {
    /// Whether there is nothing to flush.
    pub fn is_empty(&self) -> bool {
        !self.everything && self.pages == 0
    }

    /// Adds page `address` to the flush (widening the range).
    pub(crate) fn add_page(&mut self, address: u64) {
        if self.pages == 0 {
            self.start = address;
            self.pages = 1;
        } else {
            let end = (self.start + self.pages * 4096).max(address + 4096);
            self.start = self.start.min(address);
            self.pages = (end - self.start) / 4096;
        }
    }
}
