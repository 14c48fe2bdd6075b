//! The kernel's physical frame allocator, built from the machine layer's
//! hand-off, and the frame source the machine layer maps stacks with.
//!
//! One [`CachedFrameAllocator`] per CPU group (issue 20): the free frames
//! are cut into equal parts in address order (`groups::partition_ranges`)
//! and each group's kernel hands out only its own part, from a cache per
//! online CPU in front of its own bitmap. A frame is allocated from the
//! group of the CPU asking and freed to the group whose part holds it.
//! Without groups there is one part: the whole machine. The allocators are
//! published once in a [`SetOnce`], so allocating takes no lock beyond the
//! CPU's own cache lock.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU64;

use frames::{BitmapFrameAllocator, CachedFrameAllocator, FrameError, FrameNumber, FrameRange, PhysicalAddress};
use groups::FrameSpan;
use machine::layout::Range;
use machine::frame_access::Frame;
use machine::paging::TableFrameSource;
use machine::percpu;
use machine::set_once::SetOnce;
use spinlock::kernel::{IrqOff, KernelCpu, PerCpuLevels};

/// The kernel's frame allocator type: CPUs by index, interrupts off while
/// a cache or the bitmap is locked, lock order checked per CPU.
pub type KernelFrames = CachedFrameAllocator<'static, KernelCpu, IrqOff, PerCpuLevels>;

/// Each group's allocator and the first frame of its part.
struct GroupFrames {
    /// By group; a group whose part is empty has none.
    allocators: Vec<Option<KernelFrames>>,
    /// (first frame of the part, group), in address order, for frees.
    starts: Vec<(u64, usize)>,
}

/// The allocators; empty until [`init`] ran.
static FRAMES: SetOnce<GroupFrames> = SetOnce::new();

/// Builds one allocator per group (`crate::groups`, chosen before) over
/// its part of the free ranges the machine layer left, each with a cache
/// for each online CPU. Returns the number of free frames in all.
pub fn init(free_memory: &[Range]) -> u64 {
    let spans: Vec<FrameSpan> = free_memory
        .iter()
        .map(|range| {
            let frames = FrameRange::within_addresses(PhysicalAddress(range.start), PhysicalAddress(range.end));
            FrameSpan { start: frames.start.0, end: frames.end.0 }
        })
        .collect();
    let parts = groups::partition_ranges(&spans, crate::groups::count());
    let mut allocators = Vec::with_capacity(parts.len());
    let mut starts = Vec::with_capacity(parts.len());
    for (group, part) in parts.iter().enumerate() {
        let allocator = build(part);
        if let (Some(first), Some(_)) = (part.first(), allocator.as_ref()) {
            starts.push((first.start, group));
        }
        allocators.push(allocator);
    }
    let free = allocators.iter().flatten().map(KernelFrames::free_count).sum();
    if FRAMES.set(Box::leak(Box::new(GroupFrames { allocators, starts }))).is_err() {
        machine::println!("lamina: warning: the frame allocator was built twice; keeping the first");
    }
    free
}

/// One group's allocator over the frames of `part` (in address order).
fn build(part: &[FrameSpan]) -> Option<KernelFrames> {
    let (first, last) = (part.first()?.start, part.last()?.end);
    let words = (last - first).div_ceil(64) as usize;
    let storage: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
    let table: &'static [AtomicU64] = Box::leak((0..words).map(|_| AtomicU64::new(0)).collect::<Vec<_>>().into_boxed_slice());
    let mut bitmap = BitmapFrameAllocator::new(storage, FrameNumber(first));
    for span in part {
        // The machine layer hands over disjoint ranges; an overlap would be
        // a machine-layer bug, so it is reported rather than ignored.
        if let Err(error) = bitmap.add_free(FrameRange::new(FrameNumber(span.start), FrameNumber(span.end))) {
            machine::println!("lamina: warning: free frames {:#x}..{:#x} refused: {error}", span.start, span.end);
        }
    }
    match CachedFrameAllocator::new(bitmap, table, percpu::online_count()) {
        Ok(allocator) => Some(allocator),
        Err(error) => {
            machine::println!("lamina: frame allocator cannot be built: {error}");
            None
        }
    }
}

/// The allocator of the group whose part holds `frame`.
fn owner_of(frame: FrameNumber) -> Option<&'static KernelFrames> {
    let table = FRAMES.get()?;
    let index = table.starts.partition_point(|(start, _)| *start <= frame.0).checked_sub(1)?;
    table.allocators.get(table.starts[index].1)?.as_ref()
}

/// The free frames of this CPU's group: what an allocation here can get
/// (all free frames without groups).
pub fn free_frames_here() -> u64 {
    free_frames_of(crate::groups::current_group())
}

/// Group `group`'s free frames.
pub fn free_frames_of(group: usize) -> u64 {
    FRAMES.get().and_then(|table| table.allocators.get(group)?.as_ref()).map_or(0, KernelFrames::free_count)
}

/// The allocator of this CPU's group; `None` only before [`init`] (or if
/// it could not be built, or the group has no memory).
pub fn frames() -> Option<&'static KernelFrames> {
    FRAMES.get()?.allocators.get(crate::groups::current_group())?.as_ref()
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
    if crate::allocation_failures::should_fail(crate::allocation_failures::AllocationSite::Frame) {
        return Err(FrameError::OutOfMemory);
    }
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
    if let Err(error) = owner_of(number).ok_or(FrameError::OutOfRange).and_then(|frames| frames.free(number)) {
        machine::println!("lamina: warning: freeing frame {number:?} refused: {error}");
    }
}

/// Free frames right now, in every group's bitmap and CPU caches.
pub fn free_frames() -> u64 {
    FRAMES.get().map_or(0, |table| table.allocators.iter().flatten().map(KernelFrames::free_count).sum())
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
