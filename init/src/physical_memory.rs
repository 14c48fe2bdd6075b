//! The kernel's physical frame allocator, built from the machine layer's
//! hand-off, and the frame source the machine layer maps stacks with.

use alloc::boxed::Box;
use alloc::vec;

use frames::{BitmapFrameAllocator, FrameNumber, FrameRange, PhysicalAddress};
use machine::irq_lock::IrqLock;
use machine::layout::Range;
use machine::paging::TableFrameSource;

/// The allocator (layer 2); `None` until [`init`] ran.
static FRAMES: IrqLock<Option<BitmapFrameAllocator<'static>>> = IrqLock::new(None);

/// Builds the allocator over the free ranges the machine layer left.
/// Returns the number of free frames.
pub fn init(free_memory: &[Range]) -> u64 {
    let end = free_memory.iter().map(|range| range.end).max().unwrap_or(0);
    let frame_count = end >> frames::FRAME_SHIFT;
    let storage: &'static mut [u64] = Box::leak(vec![0u64; frame_count.div_ceil(64) as usize].into_boxed_slice());
    let mut allocator = BitmapFrameAllocator::new(storage, FrameNumber(0));
    for range in free_memory {
        let frames = FrameRange::within_addresses(PhysicalAddress(range.start), PhysicalAddress(range.end));
        // The machine layer hands over disjoint ranges; an overlap would be
        // a machine-layer bug, so it is reported rather than ignored.
        if let Err(error) = allocator.add_free(frames) {
            machine::println!("lamina: warning: free range {:#x}..{:#x} refused: {error}", range.start, range.end);
        }
    }
    let free = allocator.free_count();
    *FRAMES.lock() = Some(allocator);
    free
}

/// Runs `body` with the allocator.
#[cfg_attr(not(feature = "ktest"), allow(dead_code))]
pub fn with_frames<R>(body: impl FnOnce(&mut BitmapFrameAllocator<'static>) -> R) -> R {
    let mut guard = FRAMES.lock();
    let allocator = guard.as_mut().expect("the frame allocator is built before anything allocates frames");
    body(allocator)
}

/// Free frames right now.
#[cfg(feature = "ktest")]
pub fn free_frames() -> u64 {
    with_frames(|allocator| allocator.free_count())
}

/// A new guarded kernel stack (the threads layer's stack source).
pub fn kernel_stack() -> Option<machine::stacks::KernelStack> {
    machine::stacks::allocate_kernel_stack(&mut KernelFrameSource).ok()
}

/// Gives the machine layer frames for page tables and kernel stacks.
pub struct KernelFrameSource;

impl TableFrameSource for KernelFrameSource {
    fn allocate_table(&mut self) -> Option<u64> {
        with_frames(|allocator| allocator.allocate().ok()).map(|frame| frame.start_address().0)
    }
}
