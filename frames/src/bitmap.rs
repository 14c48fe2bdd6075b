//! The bitmap frame allocator: one bit per frame, set while the frame is in use.
//!
//! Refines `spec::AbstractFrameAllocator` (each operation refines the spec
//! operation of the same name): the abstract set of free frames is the set of
//! covered frames whose bit is clear.

use core::fmt;

use crate::address::{FrameNumber, FrameRange};
use crate::bit_array::BitArray;
use crate::error::FrameError;

/// The physical frame allocator.
///
/// Covers `storage.len() * 64` frames from `first_frame` (fewer only where
/// that would pass [`FrameNumber::MAX`]). Bit `i` of the storage stands for
/// frame `first_frame + i`: set means in use (allocated, or never added as
/// free: firmware, the kernel image, holes in the memory map), clear means
/// free. Single frames come from the lowest free frame; contiguous runs from
/// the lowest run that fits.
///
/// Invariants, kept by every operation:
/// 1. bits beyond the covered frames are set;
/// 2. `free_count` is the number of clear bits;
/// 3. every word below `search_hint` is full (`u64::MAX`), so no search
///    looks there.
pub struct BitmapFrameAllocator<'a> {
    bits: BitArray<'a>,
    covered: FrameRange,
    free_count: u64,
    search_hint: usize,
}

impl<'a> BitmapFrameAllocator<'a> {
    /// An allocator over `storage`, with every frame in use. The previous
    /// contents of `storage` do not matter.
    pub fn new(storage: &'a mut [u64], first_frame: FrameNumber) -> Self {
        let mut bits = BitArray::new(storage);
        bits.set_all();
        let highest_end = FrameNumber::MAX.0 + 1;
        let end = first_frame
            .0
            .saturating_add(bits.bit_count())
            .min(highest_end);
        let covered = FrameRange::new(first_frame, FrameNumber(end.max(first_frame.0)));
        let search_hint = bits.word_count();
        Self {
            bits,
            covered,
            free_count: 0,
            search_hint,
        }
    }

    /// Marks the frames of `range` free, after clipping it to the covered
    /// frames, and returns how many it added. Refines the spec's `add_free`.
    ///
    /// Errors: [`FrameError::AlreadyFree`] if a frame of the clipped range is
    /// free already (then nothing is added).
    pub fn add_free(&mut self, range: FrameRange) -> Result<u64, FrameError> {
        let clipped = range.intersection(self.covered);
        let (start, end) = self.bit_span(clipped);
        if !self.bits.all_set(start, end) {
            return Err(FrameError::AlreadyFree);
        }
        self.release_bits(start, end);
        Ok(clipped.len())
    }

    /// Allocates one frame, the lowest free one. Refines the spec's `allocate`.
    ///
    /// Errors: [`FrameError::OutOfMemory`] when no frame is free.
    pub fn allocate(&mut self) -> Result<FrameNumber, FrameError> {
        if self.free_count == 0 {
            return Err(FrameError::OutOfMemory);
        }
        // Invariant 2 promises a clear bit, invariant 3 that it is at or past the hint.
        let bit = self
            .bits
            .first_clear_from_word(self.search_hint)
            .ok_or(FrameError::OutOfMemory)?;
        self.search_hint = BitArray::word_of(bit);
        self.take_bits(bit, bit + 1);
        Ok(self.frame_at(bit))
    }

    /// Allocates `count` contiguous frames whose first frame number is a
    /// multiple of `align_frames` (a physical alignment of
    /// `align_frames * FRAME_SIZE` bytes), and returns the first.
    /// Refines the spec's `allocate_contiguous`.
    ///
    /// Errors, checked in this order: [`FrameError::ZeroCount`],
    /// [`FrameError::InvalidAlignment`] unless `align_frames` is a power of
    /// two, [`FrameError::OutOfMemory`] when no free run fits.
    pub fn allocate_contiguous(
        &mut self,
        count: u64,
        align_frames: u64,
    ) -> Result<FrameNumber, FrameError> {
        if count == 0 {
            return Err(FrameError::ZeroCount);
        }
        if !align_frames.is_power_of_two() {
            return Err(FrameError::InvalidAlignment);
        }
        if count > self.free_count {
            return Err(FrameError::OutOfMemory);
        }
        let start = self
            .find_free_run(count, align_frames)
            .ok_or(FrameError::OutOfMemory)?;
        self.take_bits(start, start + count);
        Ok(self.frame_at(start))
    }

    /// Frees one allocated frame. Refines the spec's `free`.
    ///
    /// One bit cannot tell an allocated frame from one never added (reserved),
    /// so freeing a reserved frame succeeds and makes it free, as in the spec.
    /// The layers above only free frames they were handed.
    ///
    /// Errors: [`FrameError::OutOfRange`] if the frame is not covered,
    /// [`FrameError::NotAllocated`] if it is free already.
    pub fn free(&mut self, frame: FrameNumber) -> Result<(), FrameError> {
        self.free_contiguous(frame, 1)
    }

    /// Frees the `count` frames from `start`. Refines the spec's `free_contiguous`.
    ///
    /// Errors, checked in this order, each before anything changes:
    /// [`FrameError::ZeroCount`], [`FrameError::OutOfRange`] if a frame of the
    /// run is not covered, [`FrameError::NotAllocated`] if one is free.
    pub fn free_contiguous(&mut self, start: FrameNumber, count: u64) -> Result<(), FrameError> {
        if count == 0 {
            return Err(FrameError::ZeroCount);
        }
        let run = FrameRange::with_count(start, count).ok_or(FrameError::OutOfRange)?;
        if !self.covered.contains_range(run) {
            return Err(FrameError::OutOfRange);
        }
        let (start_bit, end_bit) = self.bit_span(run);
        if !self.bits.all_set(start_bit, end_bit) {
            return Err(FrameError::NotAllocated);
        }
        self.release_bits(start_bit, end_bit);
        Ok(())
    }

    /// Number of free frames, in O(1).
    pub fn free_count(&self) -> u64 {
        self.free_count
    }

    /// Number of frames covered, free or in use.
    pub fn total_count(&self) -> u64 {
        self.covered.len()
    }

    /// The frames this allocator covers.
    pub fn covered_range(&self) -> FrameRange {
        self.covered
    }

    /// True when `frame` is covered and free.
    pub fn is_free(&self, frame: FrameNumber) -> bool {
        self.covered.contains(frame) && !self.bits.is_set(frame.0 - self.covered.start.0)
    }

    /// The lowest bit at which `count` clear bits start, with the frame
    /// number of the start a multiple of `align` (a power of two).
    fn find_free_run(&self, count: u64, align: u64) -> Option<u64> {
        let limit = self.covered.len();
        let mut candidate = BitArray::first_bit_of(self.search_hint);
        // Loop invariant: no fitting run starts below `candidate`.
        loop {
            let free_bit = self.bits.first_clear_in(candidate, limit)?;
            let start = self.align_bit_up(free_bit, align)?;
            let end = start.checked_add(count).filter(|&end| end <= limit)?;
            match self.bits.first_set_in(start, end) {
                None => return Some(start),
                Some(used) => candidate = used + 1,
            }
        }
    }

    /// The first bit at or after `bit` whose frame number is a multiple of `align`.
    fn align_bit_up(&self, bit: u64, align: u64) -> Option<u64> {
        let first = self.covered.start.0;
        let aligned_frame = (first + bit).checked_next_multiple_of(align)?;
        Some(aligned_frame - first)
    }

    /// The bit indices `start..end` of a range of covered frames.
    fn bit_span(&self, range: FrameRange) -> (u64, u64) {
        let first = self.covered.start.0;
        (range.start.0 - first, range.end.0 - first)
    }

    fn frame_at(&self, bit: u64) -> FrameNumber {
        FrameNumber(self.covered.start.0 + bit)
    }

    /// Marks the set bits `start..end` in use. Caller checked they were clear.
    fn take_bits(&mut self, start: u64, end: u64) {
        self.bits.set_range(start, end);
        self.free_count -= end - start;
    }

    /// Marks the bits `start..end` free. Caller checked they were set.
    fn release_bits(&mut self, start: u64, end: u64) {
        if start == end {
            return;
        }
        self.bits.clear_range(start, end);
        self.free_count += end - start;
        self.search_hint = self.search_hint.min(BitArray::word_of(start));
    }
}

impl fmt::Debug for BitmapFrameAllocator<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("BitmapFrameAllocator")
            .field("covered", &self.covered)
            .field("free_count", &self.free_count)
            .field("search_hint", &self.search_hint)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64) -> FrameRange {
        FrameRange::new(FrameNumber(start), FrameNumber(end))
    }

    #[test]
    fn allocate_takes_the_lowest_free_frame_again_after_a_free() {
        let mut storage = [0u64; 4];
        let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
        frames.add_free(range(0, 256)).unwrap();
        for expected in 0..200 {
            assert_eq!(frames.allocate(), Ok(FrameNumber(expected)));
        }
        assert_eq!(frames.search_hint, 3);
        frames.free(FrameNumber(5)).unwrap();
        assert_eq!(
            frames.search_hint, 0,
            "a free below the hint moves the hint back"
        );
        assert_eq!(frames.allocate(), Ok(FrameNumber(5)));
        assert_eq!(frames.allocate(), Ok(FrameNumber(200)));
    }

    #[test]
    fn words_below_the_hint_stay_full() {
        let mut storage = [0u64; 8];
        let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(3));
        frames.add_free(range(0, 1000)).unwrap();
        for _ in 0..300 {
            frames.allocate().unwrap();
        }
        frames.allocate_contiguous(70, 64).unwrap();
        frames.free_contiguous(FrameNumber(130), 10).unwrap();
        frames.allocate().unwrap();
        let hint = frames.search_hint;
        let first_clear = frames.bits.first_clear_in(0, BitArray::first_bit_of(hint));
        assert_eq!(first_clear, None, "a clear bit below the hint word {hint}");
    }

    #[test]
    fn bits_beyond_the_covered_frames_stay_set() {
        let mut storage = [0u64; 2];
        let first = FrameNumber(FrameNumber::MAX.0 - 9);
        let mut frames = BitmapFrameAllocator::new(&mut storage, first);
        assert_eq!(frames.total_count(), 10);
        assert_eq!(frames.add_free(range(0, u64::MAX)), Ok(10));
        assert!((10..128).all(|bit| frames.bits.is_set(bit)));
    }

    #[test]
    fn debug_output_names_the_counts_not_the_bitmap() {
        let mut storage = [0u64; 1];
        let frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
        let text = alloc::format!("{frames:?}");
        assert!(
            text.starts_with("BitmapFrameAllocator { covered:"),
            "saw {text}"
        );
        assert!(text.contains("free_count: 0"), "saw {text}");
    }
}
