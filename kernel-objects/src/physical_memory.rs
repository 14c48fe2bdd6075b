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
use machine::frame_access::Frame;
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
    allocate_held_frame().map(|frame| KernelFrame(Some(frame)))
}

/// A frame from the allocator with one holder (not `Copy`, not `Clone`);
/// only dropping the handle frees it, so no code outside this crate frees
/// a frame it does not hold.
#[must_use = "dropping a kernel frame frees it"]
#[derive(Debug)]
pub struct KernelFrame(Option<Frame>);

impl KernelFrame {
    /// Which frame it is.
    pub fn number(&self) -> FrameNumber {
        FrameNumber::containing(PhysicalAddress(self.0.as_ref().map_or(0, Frame::address)))
    }

    /// The machine's handle, for this crate's wrappers (a DMA frame).
    pub(crate) fn into_frame(mut self) -> Option<Frame> {
        self.0.take()
    }
}

impl Drop for KernelFrame {
    fn drop(&mut self) {
        if let Some(frame) = self.0.take() {
            free_held_frame(frame);
        }
    }
}

/// One free frame from the allocator, claimed from the machine's record
/// (`kernel_containers` charges before it calls). A frame the allocator
/// offers but the machine does not record as free is a bug below: it is
/// left out of circulation and the allocation fails.
pub(crate) fn allocate_held_frame() -> Result<Frame, FrameError> {
    let number = frames().ok_or(FrameError::OutOfMemory)?.allocate()?;
    Frame::claim(number.start_address().0).ok_or_else(|| {
        machine::println!("lamina: warning: the allocator offered frame {number:?}, which the machine does not record as free");
        FrameError::OutOfRange
    })
}

/// Gives a held frame back to the allocator (this crate's handles, when
/// they are dropped).
pub(crate) fn free_held_frame(frame: Frame) {
    let number = FrameNumber::containing(PhysicalAddress(frame.release()));
    if let Err(error) = frames().ok_or(FrameError::OutOfRange).and_then(|frames| frames.free(number)) {
        machine::println!("lamina: warning: freeing frame {number:?} refused: {error}");
    }
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
    machine::stacks::allocate_kernel_stack(&mut KernelFrameSource)
}

/// Unmaps `stack` (made by [`allocate_kernel_stack`]) and frees its frames;
/// nothing may run on it any more, and no spinlock may be held.
pub fn free_kernel_stack(stack: machine::stacks::KernelStack) {
    machine::stacks::free_kernel_stack(stack, &mut KernelFrameSource);
}

/// Gives the machine layer frames for page tables and kernel stacks
/// (private: only this file hands the machine layer frames).
struct KernelFrameSource;

impl TableFrameSource for KernelFrameSource {
    fn allocate_table(&mut self) -> Option<Frame> {
        allocate_held_frame().ok()
    }

    fn free_table(&mut self, frame: Frame) {
        free_held_frame(frame);
    }
}
