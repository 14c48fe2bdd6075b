//! The kernel's physical frame allocator, built from the machine layer's
//! hand-off, and the frame source the machine layer maps stacks with.
//!
//! One [`CachedFrameAllocator`] for the whole machine: a cache of free
//! frames per online CPU in front of the bitmap. It is published once in a
//! [`SetOnce`], so allocating takes no lock beyond the CPU's own cache lock.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU64;

use frames::{BitmapFrameAllocator, CachedFrameAllocator, FrameError, FrameNumber, FrameRange, PhysicalAddress};
use machine::layout::Range;
use machine::paging::TableFrameSource;
use machine::percpu;
use machine::set_once::SetOnce;
use spinlock::kernel::{IrqOff, KernelCpu, PerCpuLevels};

/// The kernel's frame allocator type: CPUs by index, interrupts off while
/// a cache or the bitmap is locked, lock order checked per CPU.
pub type KernelFrames = CachedFrameAllocator<'static, KernelCpu, IrqOff, PerCpuLevels>;

/// The allocator (layer 2); empty until [`init`] ran.
static FRAMES: SetOnce<KernelFrames> = SetOnce::new();

/// Builds the allocator over the free ranges the machine layer left, with a
/// cache for each online CPU. Returns the number of free frames.
pub fn init(free_memory: &[Range]) -> u64 {
    let end = free_memory.iter().map(|range| range.end).max().unwrap_or(0);
    let words = (end >> frames::FRAME_SHIFT).div_ceil(64) as usize;
    let storage: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
    let table: &'static [AtomicU64] = Box::leak((0..words).map(|_| AtomicU64::new(0)).collect::<Vec<_>>().into_boxed_slice());
    let mut bitmap = BitmapFrameAllocator::new(storage, FrameNumber(0));
    for range in free_memory {
        let frames = FrameRange::within_addresses(PhysicalAddress(range.start), PhysicalAddress(range.end));
        // The machine layer hands over disjoint ranges; an overlap would be
        // a machine-layer bug, so it is reported rather than ignored.
        if let Err(error) = bitmap.add_free(frames) {
            machine::println!("lamina: warning: free range {:#x}..{:#x} refused: {error}", range.start, range.end);
        }
    }
    let allocator = match CachedFrameAllocator::new(bitmap, table, percpu::online_count()) {
        Ok(allocator) => allocator,
        Err(error) => {
            machine::println!("lamina: frame allocator cannot be built: {error}");
            return 0;
        }
    };
    let free = allocator.free_count();
    if FRAMES.set(Box::leak(Box::new(allocator))).is_err() {
        machine::println!("lamina: warning: the frame allocator was built twice; keeping the first");
    }
    free
}

/// The allocator; `None` only before [`init`] (or if it could not be built).
pub fn frames() -> Option<&'static KernelFrames> {
    FRAMES.get()
}

/// One free frame, charged to no container, held by the caller alone:
/// for the kernel's own structures and tests. Dropping it frees it.
pub fn allocate_frame() -> Result<KernelFrame, FrameError> {
    allocate_frame_number().map(KernelFrame)
}

/// A frame from the allocator with one holder (not `Copy`, not `Clone`);
/// the number says which frame, and only dropping the handle frees it, so
/// no code outside this crate frees a frame it does not hold.
#[must_use = "dropping a kernel frame frees it"]
#[derive(Debug)]
pub struct KernelFrame(FrameNumber);

impl KernelFrame {
    /// Which frame it is.
    pub fn number(&self) -> FrameNumber {
        self.0
    }
}

impl Drop for KernelFrame {
    fn drop(&mut self) {
        if let Err(error) = free_frame(self.0) {
            machine::println!("lamina: warning: freeing kernel frame {:?} refused: {error}", self.0);
        }
    }
}

/// One free frame for this crate's handles (`kernel_containers` charges
/// before it calls).
pub(crate) fn allocate_frame_number() -> Result<FrameNumber, FrameError> {
    frames().ok_or(FrameError::OutOfMemory)?.allocate()
}

/// Gives `frame` back (this crate's handles, when they are dropped).
pub(crate) fn free_frame(frame: FrameNumber) -> Result<(), FrameError> {
    frames().ok_or(FrameError::OutOfRange)?.free(frame)
}

/// Free frames right now, in the bitmap and every CPU cache.
pub fn free_frames() -> u64 {
    frames().map_or(0, |frames| frames.free_count())
}

/// How the threads layer gets stacks and charges them to containers.
pub static STACK_SOURCE: sched::StackSource = sched::StackSource {
    allocate: || allocate_kernel_stack().ok(),
    free: free_kernel_stack,
    charge: crate::kernel_containers::charge,
    release: crate::kernel_containers::release,
};

/// A new kernel stack in the kernel's tables, its frames from the allocator.
pub fn allocate_kernel_stack() -> Result<machine::stacks::KernelStack, machine::paging::MapError> {
    let key = crate::untyped_memory::key().ok_or(machine::paging::MapError::OutOfFrames)?;
    machine::stacks::allocate_kernel_stack(&mut KernelFrameSource, key)
}

/// Unmaps `stack` (made by [`allocate_kernel_stack`]) and frees its frames;
/// nothing may run on it any more, and no spinlock may be held.
pub fn free_kernel_stack(stack: machine::stacks::KernelStack) {
    if let Some(key) = crate::untyped_memory::key() {
        machine::stacks::free_kernel_stack(stack, &mut KernelFrameSource, key);
    }
}

/// Gives the machine layer frames for page tables and kernel stacks
/// (private: only this file hands the machine layer frames).
struct KernelFrameSource;

impl TableFrameSource for KernelFrameSource {
    fn allocate_table(&mut self) -> Option<u64> {
        allocate_frame_number().ok().map(|frame| frame.start_address().0)
    }

    fn free_table(&mut self, frame: u64) {
        if let Err(error) = free_frame(FrameNumber::containing(PhysicalAddress(frame))) {
            machine::println!("lamina: warning: freeing table frame {frame:#x} refused: {error}");
        }
    }
}
