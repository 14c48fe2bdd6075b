//! Test helpers: a thread-local CPU slot, an allocator over a small
//! leaked bitmap, and a deterministic PRNG.

use alloc::vec;
use core::cell::Cell;

use spinlock::{CpuSlot, NoGuard};

use crate::sync::AtomicU64;
use crate::{BitmapFrameAllocator, CachedFrameAllocator, FrameNumber, FrameRange};

#[cfg(not(loom))]
std::thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    static SLOT: Cell<usize> = Cell::new(0);
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

#[cfg(not(loom))]
type Levels = spinlock::ThreadLevels;
#[cfg(loom)]
type Levels = spinlock::Untracked;

/// The allocator as the tests use it.
pub(crate) type TestAllocator = CachedFrameAllocator<'static, ThreadSlot, NoGuard, Levels>;

/// The first frame the test allocators cover (not 0, so that frame numbers
/// and indices differ).
pub(crate) const FIRST_FRAME: u64 = 0x100;

/// An allocator of `frames` free frames from [`FIRST_FRAME`] on, behind
/// `cpus` caches. Its storage is leaked: a few words per test.
pub(crate) fn allocator(frames: u64, cpus: usize) -> TestAllocator {
    let words = frames.div_ceil(64) as usize;
    let bitmap_storage: &'static mut [u64] = std::boxed::Box::leak(vec![0u64; words].into_boxed_slice());
    let table: &'static [AtomicU64] =
        std::boxed::Box::leak((0..words).map(|_| AtomicU64::new(0)).collect::<std::vec::Vec<_>>().into_boxed_slice());
    let mut bitmap = BitmapFrameAllocator::new(bitmap_storage, FrameNumber(FIRST_FRAME));
    let range = FrameRange { start: FrameNumber(FIRST_FRAME), end: FrameNumber(FIRST_FRAME + frames) };
    bitmap.add_free(range).expect("a fresh bitmap takes its range");
    CachedFrameAllocator::new(bitmap, table, cpus).expect("the table covers the bitmap")
}

/// The shared test PRNG.
#[cfg(not(loom))]
pub(crate) use testkit::Rng;
