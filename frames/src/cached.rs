//! `CachedFrameAllocator`: the bitmap allocator behind per-CPU caches, safe
//! to call from every CPU at once.
//!
//! Refines [`spec::AbstractFrameAllocator`](crate::spec) (a set of free
//! frames) as seen by its callers: a frame is handed out only if it is free
//! (never twice), every freed frame can be handed out again, and a free of a
//! frame that is not out is refused with an error, changing nothing — also
//! when the frame sits in a CPU's cache, which the per-frame
//! [`HandedOut`] table tells apart.
//!
//! Each CPU allocates from and frees to its own cache of up to
//! [`CACHE_CAPACITY`] frames under its own lock, which only it takes in the
//! common case; it goes to the global bitmap (one lock for everyone) only
//! to move [`BATCH`] frames in or out. When the bitmap is empty, an
//! allocation first drains every CPU's cache back into it, so it fails only
//! when no frame is free anywhere.
//!
//! **Lock order.** A CPU holding its cache lock ([`FRAME_CACHE_LEVEL`], 2)
//! takes the global lock ([`FRAMES_GLOBAL_LEVEL`], 1); never the other way,
//! never two cache locks at once.
//!
//! Must never touch a frame's contents, or panic on anything a caller
//! passes (a bad free is an error value).

use alloc::boxed::Box;
use core::marker::PhantomData;

use spinlock::{CpuSlot, GuardPolicy, HeldLevels, Level, SpinLock, TicketLock};

use crate::frame_stack::{FrameStack, BATCH};
use crate::handed_out::HandedOut;
use crate::sync::AtomicU64;
use crate::{BitmapFrameAllocator, FrameError, FrameNumber};

/// The level of the global bitmap's lock: the bottom of the frame layer.
pub const FRAMES_GLOBAL_LEVEL: Level = Level::new(1);
/// The level of each CPU's cache lock, held while taking the global lock.
pub const FRAME_CACHE_LEVEL: Level = Level::new(2);

type Locked<T, G, H> = SpinLock<T, TicketLock, G, H>;

/// The frame allocator of a multi-CPU kernel: CPUs numbered by `S`, locks
/// that switch off what `G` says and check the lock order through `H`.
pub struct CachedFrameAllocator<'a, S: CpuSlot, G: GuardPolicy, H: HeldLevels> {
    global: Locked<BitmapFrameAllocator<'a>, G, H>,
    caches: Box<[Locked<FrameStack, G, H>]>,
    handed_out: HandedOut<'a>,
    slot: PhantomData<fn() -> S>,
}

impl<'a, S: CpuSlot, G: GuardPolicy, H: HeldLevels> CachedFrameAllocator<'a, S, G, H> {
    /// Puts `bitmap` behind `cpus` caches (at least one). `handed_out` is
    /// the per-frame table, one bit per frame `bitmap` covers, all zero.
    ///
    /// Errors: [`FrameError::OutOfRange`] when `handed_out` is too short.
    pub fn new(bitmap: BitmapFrameAllocator<'a>, handed_out: &'a [AtomicU64], cpus: usize) -> Result<Self, FrameError> {
        let covered = bitmap.covered_range();
        if (handed_out.len() as u64).saturating_mul(64) < covered.len() {
            return Err(FrameError::OutOfRange);
        }
        Ok(Self {
            global: SpinLock::new(FRAMES_GLOBAL_LEVEL, bitmap),
            caches: (0..cpus.max(1)).map(|_| SpinLock::new(FRAME_CACHE_LEVEL, FrameStack::new())).collect(),
            handed_out: HandedOut::new(handed_out, covered.start),
            slot: PhantomData,
        })
    }

    /// One free frame, from this CPU's cache when it has one.
    ///
    /// Errors: [`FrameError::OutOfMemory`] when no frame is free anywhere.
    pub fn allocate(&self) -> Result<FrameNumber, FrameError> {
        let frame = match self.allocate_from_own_cache() {
            Some(frame) => frame,
            None => {
                self.drain_caches();
                self.allocate_from_own_cache().ok_or(FrameError::OutOfMemory)?
            }
        };
        self.handed_out.hand_out(frame)?;
        Ok(frame)
    }

    /// Takes `frame` back into this CPU's cache.
    ///
    /// Errors, changing nothing: [`FrameError::OutOfRange`] for a frame the
    /// allocator does not cover, [`FrameError::NotAllocated`] for one that
    /// is not out (a double free).
    pub fn free(&self, frame: FrameNumber) -> Result<(), FrameError> {
        self.handed_out.take_back(frame)?;
        let mut cache = self.own_cache().lock();
        if cache.is_full() {
            let mut global = self.global.lock();
            for _ in 0..BATCH {
                cache.pop().map(|cached| give_back(&mut global, cached));
            }
        }
        // Not full: at most CACHE_CAPACITY - BATCH frames are left.
        if let Err(frame) = cache.push(frame) {
            give_back(&mut self.global.lock(), frame);
        }
        Ok(())
    }

    /// Frames free now, in the bitmap and in every cache (a snapshot: exact
    /// when no other CPU allocates or frees meanwhile).
    pub fn free_count(&self) -> u64 {
        let cached: usize = self.caches.iter().map(|cache| cache.lock().len()).sum();
        self.global.lock().free_count() + cached as u64
    }

    /// Frames out with callers now (a snapshot).
    pub fn handed_out_count(&self) -> u64 {
        self.handed_out.count()
    }

    /// Frames the allocator manages in all.
    pub fn total_count(&self) -> u64 {
        self.global.lock().total_count()
    }

    /// Moves every cached frame back to the bitmap.
    pub fn drain_caches(&self) {
        for cache in self.caches.iter() {
            let mut cache = cache.lock();
            let mut global = self.global.lock();
            while let Some(frame) = cache.pop() {
                give_back(&mut global, frame);
            }
        }
    }

    fn own_cache(&self) -> &Locked<FrameStack, G, H> {
        // A slot beyond the caches would break no invariant (every cache
        // is locked), only the speed-up: wrap it.
        &self.caches[S::current() % self.caches.len()]
    }

    /// Pops from this CPU's cache, refilling it with up to a batch first
    /// when it is empty; `None` when the bitmap had nothing either.
    fn allocate_from_own_cache(&self) -> Option<FrameNumber> {
        let mut cache = self.own_cache().lock();
        if let Some(frame) = cache.pop() {
            return Some(frame);
        }
        let mut global = self.global.lock();
        for _ in 0..BATCH {
            let Ok(frame) = global.allocate() else { break };
            // The cache is empty, so a batch fits.
            if let Err(frame) = cache.push(frame) {
                give_back(&mut global, frame);
                break;
            }
        }
        drop(global);
        cache.pop()
    }
}

/// Returns a cached frame to the bitmap. It was taken from the bitmap and
/// has been in no other place since, so the bitmap has it as allocated; a
/// refusal would be a bug of this file.
fn give_back(global: &mut BitmapFrameAllocator<'_>, frame: FrameNumber) {
    let returned = global.free(frame);
    debug_assert!(returned.is_ok(), "cached frame {frame:?} refused by the bitmap: {returned:?}");
}
