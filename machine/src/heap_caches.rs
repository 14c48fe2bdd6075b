//! Per-CPU caches of free heap blocks in front of the kernel heap's shared
//! list, and the drain that empties them all before a request fails.
//!
//! Each CPU keeps up to [`CACHE_BLOCKS`] free blocks per size class in a
//! cache behind a lock of its own, which only that CPU takes on the common
//! path: it allocates from and frees to its cache and takes the list's
//! lock only to refill an empty class (half a cache's worth) or hand back
//! half of a full one. The one lock every CPU took on every allocation
//! stalled them all when a host ran fewer cores than vCPUs (a holder
//! descheduled with the lock).
//!
//! Blocks left in other CPUs' caches must not make a request fail: a
//! request the list cannot serve raises the **drain gate**, empties every
//! CPU's cache into the list (taking each cache's lock in turn) and tries
//! the list once more before lowering the gate. While the gate is up a
//! cache is neither refilled nor given freed blocks (they go to the list),
//! so once drained it stays empty: at the retry every free block is on the
//! list, and a request fails only if the list alone, at that moment, could
//! not serve it — as with no caches at all. A CPU checks the gate under its
//! cache's lock, which the drainer takes after raising the gate: either the
//! CPU saw the gate up or the drainer empties its cache after it.
//!
//! Lock order: a cache, then the list. Pure logic over a lock trait and
//! atomics (host-tested, model-checked with loom below); the hardware heap
//! plugs in its `IrqLock`s and its free list. Must never hand a block out
//! twice, lose one, or fail a request while a free block sits in a cache.

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};

#[cfg(not(loom))]
use core::sync::atomic::{AtomicUsize, Ordering};

use core::marker::PhantomData;

/// Blocks of each class one CPU keeps at most.
pub const CACHE_BLOCKS: usize = 8;

/// Mutual exclusion over a `T` (the kernel's `IrqLock`; a loom mutex in
/// the model).
pub trait Exclusive<T> {
    /// Runs `work` with the value, excluding every other holder.
    fn with<R>(&self, work: impl FnOnce(&mut T) -> R) -> R;
}

/// The shared list of free blocks behind the caches.
pub trait BlockList {
    /// A free block of `class`, now off the list.
    fn take_class(&mut self, class: usize) -> Option<usize>;

    /// Puts a free block of `class` on the list.
    ///
    /// # Safety
    /// `address` must be a block of `class` that the heap handed out for
    /// that class, no longer in use and on no list or cache.
    unsafe fn give_class(&mut self, address: usize, class: usize);
}

/// One CPU's free blocks, per class (LIFO).
pub struct ClassCache<const CLASSES: usize> {
    counts: [usize; CLASSES],
    blocks: [[usize; CACHE_BLOCKS]; CLASSES],
}

impl<const CLASSES: usize> ClassCache<CLASSES> {
    pub const fn new() -> Self {
        Self { counts: [0; CLASSES], blocks: [[0; CACHE_BLOCKS]; CLASSES] }
    }

    fn pop(&mut self, class: usize) -> Option<usize> {
        let count = self.counts[class].checked_sub(1)?;
        self.counts[class] = count;
        Some(self.blocks[class][count])
    }

    /// Adds a block; the caller made room.
    fn push(&mut self, class: usize, address: usize) {
        let count = self.counts[class];
        self.blocks[class][count] = address;
        self.counts[class] = count + 1;
    }

    /// Moves blocks of `class` to `list` until `keep` are left; returns how many moved.
    fn spill(&mut self, class: usize, keep: usize, list: &mut impl BlockList) -> usize {
        let mut moved = 0;
        while self.counts[class] > keep {
            let Some(address) = self.pop(class) else { break };
            // SAFETY: a cached block is a free block of its class that the
            // heap handed out for that class; popped, it is in no cache.
            unsafe { list.give_class(address, class) };
            moved += 1;
        }
        moved
    }
}

impl<const CLASSES: usize> Default for ClassCache<CLASSES> {
    fn default() -> Self {
        Self::new()
    }
}

/// One CPU's cache with its size in bytes, readable without the lock.
pub struct CpuSlot<C> {
    cache: C,
    bytes: AtomicUsize,
}

impl<C> CpuSlot<C> {
    #[cfg(not(loom))]
    pub const fn new(cache: C) -> Self {
        Self { cache, bytes: AtomicUsize::new(0) }
    }

    #[cfg(loom)]
    pub fn new(cache: C) -> Self {
        Self { cache, bytes: AtomicUsize::new(0) }
    }

    /// Counts `bytes` more in the cache. Only the cache's holder writes the
    /// count, so a load and a store do (no locked instruction); readers
    /// only sum.
    fn add_bytes(&self, bytes: usize) {
        self.bytes.store(self.bytes.load(Ordering::Relaxed) + bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` fewer in the cache (as [`Self::add_bytes`]).
    fn remove_bytes(&self, bytes: usize) {
        self.bytes.store(self.bytes.load(Ordering::Relaxed) - bytes, Ordering::Relaxed);
    }
}

/// How many drains are under way: while any is, caches are neither
/// refilled nor given freed blocks (see the module comment).
pub struct DrainGate(AtomicUsize);

impl DrainGate {
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self(AtomicUsize::new(0))
    }

    #[cfg(loom)]
    pub fn new() -> Self {
        Self(AtomicUsize::new(0))
    }

    /// Read under a cache's lock. SeqCst with the drainer's raise (the
    /// cache lock's hand-over already orders them; this keeps it plain).
    fn is_up(&self) -> bool {
        self.0.load(Ordering::SeqCst) != 0
    }
}

impl Default for DrainGate {
    fn default() -> Self {
        Self::new()
    }
}

/// The caches of every CPU in front of one list (see the module comment).
pub struct CpuCaches<'a, const CLASSES: usize, C, E, L> {
    pub slots: &'a [CpuSlot<C>],
    pub list: &'a E,
    pub gate: &'a DrainGate,
    /// Bytes of each class's blocks.
    pub sizes: &'a [usize; CLASSES],
    pub _list: PhantomData<L>,
}

impl<const CLASSES: usize, C, E, L> CpuCaches<'_, CLASSES, C, E, L>
where
    C: Exclusive<ClassCache<CLASSES>>,
    E: Exclusive<L>,
    L: BlockList,
{
    /// A block of `class` for CPU `cpu`: from its cache, refilled from the
    /// list when empty; else from the list (`slow` serves the list), after
    /// emptying every cache into it if the list cannot serve at first.
    #[inline]
    pub fn allocate_class(&self, cpu: usize, class: usize, slow: impl Fn(&mut L) -> Option<usize>) -> Option<usize> {
        self.take(cpu, class).or_else(|| self.allocate_uncached(slow))
    }

    /// A block `slow` takes from the list, after emptying every cache into
    /// it if the list cannot serve at first.
    #[inline(never)]
    pub fn allocate_uncached(&self, slow: impl Fn(&mut L) -> Option<usize>) -> Option<usize> {
        self.list.with(&slow).or_else(|| self.drain_then(slow))
    }

    /// Frees a block of `class` into CPU `cpu`'s cache (handing half of a
    /// full class back first), or straight to the list while a drain is
    /// under way.
    ///
    /// # Safety
    /// `address` must be a block of `class` that the heap handed out for
    /// that class, no longer in use.
    #[inline]
    pub unsafe fn free_class(&self, cpu: usize, class: usize, address: usize) {
        let slot = &self.slots[cpu];
        slot.cache.with(|cache| {
            if cache.counts[class] == CACHE_BLOCKS || self.gate.is_up() {
                // SAFETY: the caller's promise.
                unsafe { self.free_class_slowly(slot, cache, class, address) };
                return;
            }
            cache.push(class, address);
            slot.add_bytes(self.sizes[class]);
        });
    }

    /// [`Self::free_class`] with `slot`'s cache (held) full or a drain
    /// under way: to the list while a drain is, else into the cache after
    /// half of the class went back.
    ///
    /// # Safety
    /// As for [`Self::free_class`].
    #[inline(never)]
    unsafe fn free_class_slowly(&self, slot: &CpuSlot<C>, cache: &mut ClassCache<CLASSES>, class: usize, address: usize) {
        if self.gate.is_up() {
            // SAFETY: the caller's promise; the block goes to no cache.
            self.list.with(|list| unsafe { list.give_class(address, class) });
            return;
        }
        let moved = self.list.with(|list| cache.spill(class, CACHE_BLOCKS / 2, list));
        slot.remove_bytes(moved * self.sizes[class]);
        cache.push(class, address);
        slot.add_bytes(self.sizes[class]);
    }

    /// Bytes held in every CPU's cache (free memory the list does not count).
    pub fn cached_bytes(&self) -> usize {
        self.slots.iter().map(|slot| slot.bytes.load(Ordering::Relaxed)).sum()
    }

    /// A block of `class` from CPU `cpu`'s cache, refilling an empty class
    /// with half a cache's worth unless a drain is under way.
    #[inline]
    fn take(&self, cpu: usize, class: usize) -> Option<usize> {
        let slot = &self.slots[cpu];
        slot.cache.with(|cache| {
            if cache.counts[class] == 0 {
                self.refill(slot, cache, class);
            }
            let address = cache.pop(class)?;
            slot.remove_bytes(self.sizes[class]);
            Some(address)
        })
    }

    /// Fills an empty class of `slot`'s cache (held) with half a cache's
    /// worth from the list, unless a drain is under way.
    #[inline(never)]
    fn refill(&self, slot: &CpuSlot<C>, cache: &mut ClassCache<CLASSES>, class: usize) {
        if self.gate.is_up() {
            return;
        }
        let added = self.list.with(|list| {
            let mut added = 0;
            while cache.counts[class] < CACHE_BLOCKS / 2 {
                let Some(address) = list.take_class(class) else { break };
                cache.push(class, address);
                added += 1;
            }
            added
        });
        slot.add_bytes(added * self.sizes[class]);
    }

    /// Raises the gate, empties every cache into the list, runs `attempt`
    /// on the list and lowers the gate.
    pub fn drain_then<R>(&self, attempt: impl FnOnce(&mut L) -> R) -> R {
        self.gate.0.fetch_add(1, Ordering::SeqCst);
        let result = self.empty_caches_then(attempt);
        self.gate.0.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Empties every cache into the list, then runs `attempt` on it (the
    /// drain without its gate: alone, a CPU may refill behind it).
    fn empty_caches_then<R>(&self, attempt: impl FnOnce(&mut L) -> R) -> R {
        for slot in self.slots {
            slot.cache.with(|cache| {
                let moved: usize = self.list.with(|list| (0..CLASSES).map(|class| cache.spill(class, 0, list) * self.sizes[class]).sum());
                slot.remove_bytes(moved);
            });
        }
        self.list.with(attempt)
    }
}

/// The list and lock the tests and the loom model plug in (std's mutex
/// or loom's).
#[cfg(test)]
mod fakes {
    use super::{BlockList, Exclusive};

    #[cfg(loom)]
    pub use loom::sync::Mutex;
    #[cfg(not(loom))]
    pub use std::sync::Mutex;

    pub struct Locked<T>(pub Mutex<T>);

    impl<T> Exclusive<T> for Locked<T> {
        fn with<R>(&self, work: impl FnOnce(&mut T) -> R) -> R {
            work(&mut self.0.lock().unwrap())
        }
    }

    /// One class of 16-byte blocks, by address.
    pub struct Blocks(pub Vec<usize>);

    impl BlockList for Blocks {
        fn take_class(&mut self, _class: usize) -> Option<usize> {
            self.0.pop()
        }

        unsafe fn give_class(&mut self, address: usize, _class: usize) {
            assert!(!self.0.contains(&address), "block {address:#x} freed twice");
            self.0.push(address);
        }
    }

    pub const SIZES: [usize; 1] = [16];
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use super::fakes::{Blocks, Locked, Mutex, SIZES};

    fn with_caches(cpus: usize, blocks: usize, test: impl FnOnce(&CpuCaches<'_, 1, Locked<ClassCache<1>>, Locked<Blocks>, Blocks>)) {
        let slots: Vec<_> = (0..cpus).map(|_| CpuSlot::new(Locked(Mutex::new(ClassCache::new())))).collect();
        let list = Locked(Mutex::new(Blocks((0..blocks).map(|block| 0x1000 + 16 * block).collect())));
        let gate = DrainGate::new();
        test(&CpuCaches { slots: &slots, list: &list, gate: &gate, sizes: &SIZES, _list: PhantomData });
    }

    fn from_list(list: &mut Blocks) -> Option<usize> {
        list.take_class(0)
    }

    #[test]
    fn an_empty_cache_takes_half_a_cache_from_the_list() {
        with_caches(1, 10, |caches| {
            assert!(caches.allocate_class(0, 0, from_list).is_some());
            assert_eq!(caches.cached_bytes(), (CACHE_BLOCKS / 2 - 1) * 16);
            assert_eq!(caches.list.0.lock().unwrap().0.len(), 10 - CACHE_BLOCKS / 2);
        });
    }

    #[test]
    fn a_full_cache_hands_half_back_before_keeping_a_block() {
        with_caches(1, 3 * CACHE_BLOCKS, |caches| {
            let taken: Vec<usize> = (0..2 * CACHE_BLOCKS).map(|_| caches.allocate_class(0, 0, from_list).unwrap()).collect();
            for &block in &taken {
                // SAFETY: each block was handed out above and is freed once.
                unsafe { caches.free_class(0, 0, block) };
            }
            assert!(caches.cached_bytes() <= CACHE_BLOCKS * 16);
            let listed = caches.list.0.lock().unwrap().0.len();
            assert_eq!(listed * 16 + caches.cached_bytes(), 3 * CACHE_BLOCKS * 16, "every block is on the list or cached");
        });
    }

    #[test]
    fn blocks_in_another_cpus_cache_serve_a_request_the_list_cannot() {
        with_caches(2, 2, |caches| {
            let first = caches.allocate_class(0, 0, from_list).unwrap();
            // SAFETY: handed out above, freed once.
            unsafe { caches.free_class(0, 0, first) };
            assert_eq!(caches.cached_bytes(), 32, "both blocks sit in CPU 0's cache");
            let second = caches.allocate_class(1, 0, from_list);
            assert!(second.is_some(), "CPU 1 found a block in CPU 0's cache");
            assert_eq!(caches.cached_bytes(), 0, "the drain emptied every cache");
            assert!(caches.allocate_class(1, 0, from_list).is_some());
            assert_eq!(caches.allocate_class(0, 0, from_list), None, "two blocks, two taken");
        });
    }

    #[test]
    fn requests_without_a_class_drain_the_caches_too() {
        with_caches(1, 1, |caches| {
            let block = caches.allocate_class(0, 0, from_list).unwrap();
            // SAFETY: handed out above, freed once.
            unsafe { caches.free_class(0, 0, block) };
            assert_eq!(caches.allocate_uncached(from_list), Some(block));
        });
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use super::fakes::{Blocks, Locked, Mutex, SIZES};
    use loom::sync::Arc;

    struct Heap {
        slots: [CpuSlot<Locked<ClassCache<1>>>; 2],
        list: Locked<Blocks>,
        gate: DrainGate,
    }

    impl Heap {
        fn with_two_blocks() -> Arc<Self> {
            let slot = || CpuSlot::new(Locked(Mutex::new(ClassCache::new())));
            Arc::new(Self { slots: [slot(), slot()], list: Locked(Mutex::new(Blocks(vec![1, 2]))), gate: DrainGate::new() })
        }

        fn caches(&self) -> CpuCaches<'_, 1, Locked<ClassCache<1>>, Locked<Blocks>, Blocks> {
            CpuCaches { slots: &self.slots, list: &self.list, gate: &self.gate, sizes: &SIZES, _list: PhantomData }
        }
    }

    fn from_list(list: &mut Blocks) -> Option<usize> {
        list.take_class(0)
    }

    /// CPU 0 takes a block, frees it (both blocks may now sit in its
    /// cache) and takes one again, while CPU 1 takes one: two blocks, never
    /// more than two wanted at once, so both CPUs always get one, and
    /// different ones. `allocate` is the code under test or its gate-less
    /// negative control.
    fn two_cpus_share_two_blocks(allocate: fn(&Heap, usize) -> Option<usize>) {
        loom::model(move || {
            let heap = Heap::with_two_blocks();
            let other = {
                let heap = heap.clone();
                loom::thread::spawn(move || allocate(&heap, 1))
            };
            let first = allocate(&heap, 0).expect("CPU 0's first block");
            // SAFETY: handed out above, freed once.
            unsafe { heap.caches().free_class(0, 0, first) };
            let mine = allocate(&heap, 0);
            let theirs = other.join().unwrap();
            assert!(mine.is_some() && theirs.is_some(), "a request failed with a block free: CPU 0 {mine:?}, CPU 1 {theirs:?}");
            assert_ne!(mine, theirs, "one block handed to both CPUs");
        });
    }

    #[test]
    fn a_block_in_another_cpus_cache_never_makes_a_request_fail() {
        two_cpus_share_two_blocks(|heap, cpu| heap.caches().allocate_class(cpu, 0, from_list));
    }

    /// Negative control: the same drain without its gate fails the model
    /// (CPU 0 refills its cache from the list behind CPU 1's drain and
    /// takes both blocks back before CPU 1's retry).
    #[test]
    #[should_panic(expected = "a request failed with a block free")]
    fn without_the_gate_a_cpu_refills_behind_the_drain() {
        two_cpus_share_two_blocks(|heap, cpu| {
            let caches = heap.caches();
            caches.take(cpu, 0).or_else(|| caches.list.with(from_list)).or_else(|| caches.empty_caches_then(from_list))
        });
    }
}
