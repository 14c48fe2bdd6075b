//! The boot-time frame allocator: hands out frames from the memory map
//! until the frame layer takes over.
//!
//! It starts from the usable regions of the memory map minus the first MiB,
//! the kernel image and the boot modules, and takes frames from the front of
//! the lowest range. What is left when boot ends is exactly the free memory
//! given to the frame layer ([`BootFrames::free_ranges`]).

use super::layout::{physical_to_virtual, Range, PAGE_SIZE};
use crate::bootinfo::{BootInformation, MemoryKind};

const MAX_RANGES: usize = 128;
const LOW_MEMORY_END: u64 = 1 << 20;

/// Free physical memory during boot.
pub struct BootFrames {
    ranges: [Range; MAX_RANGES],
    count: usize,
    /// Frames handed out so far.
    pub allocated: u64,
}

impl BootFrames {
    /// Free memory = usable regions minus low memory, the kernel and modules.
    pub fn new(boot: &BootInformation, kernel: Range) -> Self {
        let mut frames = Self { ranges: [Range { start: 0, end: 0 }; MAX_RANGES], count: 0, allocated: 0 };
        for region in boot.memory_regions().iter().filter(|region| region.kind == MemoryKind::Usable) {
            let start = align_up(region.start.max(LOW_MEMORY_END), PAGE_SIZE);
            let end = align_down(region.end, PAGE_SIZE);
            if start < end {
                frames.add(Range { start, end });
            }
        }
        frames.remove(kernel);
        for module in boot.modules() {
            frames.remove(Range { start: module.start, end: module.end });
        }
        frames
    }

    fn add(&mut self, range: Range) {
        if self.count < MAX_RANGES {
            self.ranges[self.count] = range;
            self.count += 1;
            self.ranges[..self.count].sort_unstable_by_key(|range| range.start);
        }
    }

    /// Removes `hole` (rounded out to pages) from every range.
    fn remove(&mut self, hole: Range) {
        let hole = Range { start: align_down(hole.start, PAGE_SIZE), end: align_up(hole.end, PAGE_SIZE) };
        let old = self.ranges;
        let old_count = self.count;
        self.count = 0;
        for range in &old[..old_count] {
            let below = Range { start: range.start, end: range.end.min(hole.start) };
            let above = Range { start: range.start.max(hole.end), end: range.end };
            for piece in [below, above] {
                if piece.start < piece.end {
                    self.add(piece);
                }
            }
        }
    }

    /// One zeroed 4 KiB frame (physical address), or `None` when memory is gone.
    pub fn allocate_zeroed(&mut self) -> Option<u64> {
        let range = self.ranges[..self.count].iter_mut().find(|range| range.start < range.end)?;
        let frame = range.start;
        range.start += PAGE_SIZE;
        self.allocated += 1;
        zero_frame(frame);
        Some(frame)
    }

    /// `count` zeroed frames in a row (the first's physical address), or
    /// `None` when no free range holds that many.
    pub fn allocate_contiguous(&mut self, count: u64) -> Option<u64> {
        let bytes = count.checked_mul(PAGE_SIZE)?;
        let range = self.ranges[..self.count].iter_mut().find(|range| range.end - range.start >= bytes)?;
        let first = range.start;
        range.start += bytes;
        self.allocated += count;
        for index in 0..count {
            zero_frame(first + index * PAGE_SIZE);
        }
        Some(first)
    }

    /// The memory still free, sorted by address.
    pub fn free_ranges(&self) -> impl Iterator<Item = Range> + '_ {
        self.ranges[..self.count].iter().copied().filter(|range| range.start < range.end)
    }
}

/// Fills a frame with zeros through the direct map.
pub(crate) fn zero_frame(frame: u64) {
    // SAFETY: `frame` is a page-aligned free frame below the direct-map limit
    // that nothing else references yet (it was just taken from the free list).
    unsafe { core::ptr::write_bytes(physical_to_virtual(frame) as *mut u8, 0, PAGE_SIZE as usize) };
}

pub const fn align_up(value: u64, alignment: u64) -> u64 {
    (value + alignment - 1) & !(alignment - 1)
}

pub const fn align_down(value: u64, alignment: u64) -> u64 {
    value & !(alignment - 1)
}
