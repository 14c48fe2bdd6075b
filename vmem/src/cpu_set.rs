//! The CPUs that have run an address space, and the TLB flush an operation
//! asks the kernel to carry out on exactly those CPUs.

use crate::sync::{Arc, AtomicU32, AtomicU64, Ordering};

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

    /// Whether CPU `index` is the only one in the set (or it is empty).
    pub fn is_only(&self, index: usize) -> bool {
        self.0.iter().enumerate().all(|(word, bits)| {
            let allowed = if index / 64 == word { 1u64 << (index % 64) } else { 0 };
            bits & !allowed == 0
        })
    }
}

/// The CPUs that ever activated a space; updated from every CPU.
#[derive(Debug, Default)]
pub(crate) struct RanOn([AtomicU64; 4]);

impl RanOn {
    #[inline]
    pub(crate) fn insert(&self, index: usize) {
        if index < 256 {
            let (word, bit) = (&self.0[index / 64], 1 << (index % 64));
            // Relaxed: the set is read under the space's lock, which the
            // activating CPU took too. Read first: every entry to user
            // mode inserts, and the CPU is almost always in already (no
            // locked write to a line every CPU of the space shares).
            if word.load(Ordering::Relaxed) & bit == 0 {
                word.fetch_or(bit, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn snapshot(&self) -> CpuSet {
        CpuSet(core::array::from_fn(|word| self.0[word].load(Ordering::Relaxed)))
    }
}

/// How many flushes a space handed out that are not yet carried out;
/// shared by the space and each such flush, which pays its part when it
/// is dropped (after the kernel carried it out). While any is owed, stale
/// translations may still let another CPU write a page the space no
/// longer maps that way: the space copies no copy-on-write page and
/// frees no frame it let go until the count is back to zero.
#[derive(Debug, Default)]
pub(crate) struct FlushesOwed(AtomicU32);

impl FlushesOwed {
    /// Whether every flush handed out has been carried out.
    pub(crate) fn all_paid(&self) -> bool {
        // Acquire: pairs with the Release of the drop that paid the last
        // one, which the kernel does after the flush is acknowledged.
        self.0.load(Ordering::Acquire) == 0
    }
}

/// Translations the kernel must invalidate, and where: the pages
/// `[start, start + pages * 4096)` (or everything, when `everything`) on
/// every CPU of `cpus`. Empty when nothing was taken away.
///
/// A flush a space hands out for a change it made is owed to that space
/// until dropped: drop it only once it is carried out.
#[derive(Debug, Default)]
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
    /// The space's root table (0: not known). A CPU of `cpus` that has
    /// another root loaded holds none of the space's translations (user
    /// entries are not global and no PCID keeps them across a CR3 load),
    /// so the kernel may leave it out.
    pub root: u64,
    /// The space's count this flush is part of (none: not owed).
    owed: Option<Arc<FlushesOwed>>,
}

impl PartialEq for TlbFlush {
    /// The same translations on the same CPUs (whether owed is not compared).
    fn eq(&self, other: &Self) -> bool {
        (self.start, self.pages, self.everything, self.cpus) == (other.start, other.pages, other.everything, other.cpus)
    }
}

impl Eq for TlbFlush {}

impl Drop for TlbFlush {
    fn drop(&mut self) {
        if let Some(owed) = self.owed.take() {
            // Release: what the flush made safe happens before the space
            // sees the count at zero.
            owed.0.fetch_sub(1, Ordering::Release);
        }
    }
}

impl TlbFlush {
    /// A flush of `cpus`, nothing in it yet.
    pub(crate) fn on(cpus: CpuSet, root: u64) -> Self {
        Self { start: 0, pages: 0, everything: false, cpus, root, owed: None }
    }

    /// Whether there is nothing to flush.
    pub fn is_empty(&self) -> bool {
        !self.everything && self.pages == 0
    }

    /// Makes the flush (when not empty) one `owed` counts until dropped.
    pub(crate) fn owed_to(mut self, owed: &Arc<FlushesOwed>) -> Self {
        if !self.is_empty() && self.owed.is_none() {
            owed.0.fetch_add(1, Ordering::Relaxed);
            self.owed = Some(owed.clone());
        }
        self
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
