//! The executable abstract specification of the frame allocator.
//!
//! The abstract state is the range of covered frames and the set of free
//! frames; nothing else (no bitmap, no hint, no order). Each operation of
//! `BitmapFrameAllocator` refines the operation of the same name here.
//!
//! Allocation is nondeterministic: the abstract allocator may return *any*
//! free frame (any fitting run). The `choice` argument resolves that freedom:
//! the spec returns `choice` when it is a permitted answer, and its lowest
//! permitted answer otherwise. So an implementation refines the spec exactly
//! when, given the implementation's own answer as `choice`, the spec returns
//! the same result: then the returned frame was free, errors coincide (out of
//! memory exactly when nothing fits), and both states step alike.

use alloc::collections::BTreeSet;

use crate::address::{FrameNumber, FrameRange};
use crate::error::FrameError;

/// The abstract frame allocator: a set of free frames inside a covered range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbstractFrameAllocator {
    covered: FrameRange,
    free: BTreeSet<FrameNumber>,
}

impl AbstractFrameAllocator {
    /// The state of `BitmapFrameAllocator::new` over `word_count` words: the
    /// `word_count * 64` frames from `first_frame` that have a 64-bit start
    /// address, none of them free.
    pub fn new(word_count: usize, first_frame: FrameNumber) -> Self {
        let wanted_end = u128::from(first_frame.0) + word_count as u128 * 64;
        let highest_end = u128::from(FrameNumber::MAX.0) + 1;
        let end = wanted_end.min(highest_end).max(u128::from(first_frame.0));
        // `end` is at most max(2^52, first_frame), so it fits.
        let covered = FrameRange::new(first_frame, FrameNumber(end as u64));
        Self {
            covered,
            free: BTreeSet::new(),
        }
    }

    /// Adds the covered frames of `range` to the free set; returns how many.
    /// `AlreadyFree` (and no change) if one of them is free already.
    pub fn add_free(&mut self, range: FrameRange) -> Result<u64, FrameError> {
        let start = range.start.max(self.covered.start);
        let end = range.end.min(self.covered.end);
        if start >= end {
            return Ok(0);
        }
        let clipped = FrameRange::new(start, end);
        if clipped.frames().any(|frame| self.free.contains(&frame)) {
            return Err(FrameError::AlreadyFree);
        }
        self.free.extend(clipped.frames());
        Ok(clipped.len())
    }

    /// Removes and returns a free frame: `choice` if it is free, else the
    /// lowest. `OutOfMemory` when the free set is empty.
    pub fn allocate(&mut self, choice: Option<FrameNumber>) -> Result<FrameNumber, FrameError> {
        let permitted = choice.filter(|frame| self.free.contains(frame));
        let frame = permitted
            .or_else(|| self.free.first().copied())
            .ok_or(FrameError::OutOfMemory)?;
        self.free.remove(&frame);
        Ok(frame)
    }

    /// Removes and returns the start of `count` free consecutive frames whose
    /// first frame number is a multiple of `align_frames`: `choice` if it
    /// starts such a run, else the lowest such start. Errors in this order:
    /// `ZeroCount`, `InvalidAlignment` (not a power of two), `OutOfMemory`.
    pub fn allocate_contiguous(
        &mut self,
        count: u64,
        align_frames: u64,
        choice: Option<FrameNumber>,
    ) -> Result<FrameNumber, FrameError> {
        if count == 0 {
            return Err(FrameError::ZeroCount);
        }
        if !align_frames.is_power_of_two() {
            return Err(FrameError::InvalidAlignment);
        }
        let fits = |start: &FrameNumber| self.starts_free_run(*start, count, align_frames);
        let permitted = choice.filter(fits);
        let start = permitted
            .or_else(|| self.free.iter().copied().find(fits))
            .ok_or(FrameError::OutOfMemory)?;
        for frame in start.0..start.0 + count {
            self.free.remove(&FrameNumber(frame));
        }
        Ok(start)
    }

    /// Puts `frame` back in the free set. `OutOfRange` if it is not covered,
    /// `NotAllocated` if it is free already.
    pub fn free(&mut self, frame: FrameNumber) -> Result<(), FrameError> {
        if !self.covered.contains(frame) {
            return Err(FrameError::OutOfRange);
        }
        if !self.free.insert(frame) {
            return Err(FrameError::NotAllocated);
        }
        Ok(())
    }

    /// Puts the `count` frames from `start` back in the free set, all or
    /// none. Errors in this order: `ZeroCount`, `OutOfRange` if one is not
    /// covered, `NotAllocated` if one is free.
    pub fn free_contiguous(&mut self, start: FrameNumber, count: u64) -> Result<(), FrameError> {
        if count == 0 {
            return Err(FrameError::ZeroCount);
        }
        let end = start.0.checked_add(count).ok_or(FrameError::OutOfRange)?;
        if start < self.covered.start || end > self.covered.end.0 {
            return Err(FrameError::OutOfRange);
        }
        let run = FrameRange::new(start, FrameNumber(end));
        if run.frames().any(|frame| self.free.contains(&frame)) {
            return Err(FrameError::NotAllocated);
        }
        self.free.extend(run.frames());
        Ok(())
    }

    /// Number of free frames.
    pub fn free_count(&self) -> u64 {
        self.free.len() as u64
    }

    /// Number of covered frames.
    pub fn total_count(&self) -> u64 {
        self.covered.len()
    }

    /// The covered frames.
    pub fn covered_range(&self) -> FrameRange {
        self.covered
    }

    /// True when `frame` is free.
    pub fn is_free(&self, frame: FrameNumber) -> bool {
        self.free.contains(&frame)
    }

    /// The free frames, in ascending order.
    pub fn free_frames(&self) -> &BTreeSet<FrameNumber> {
        &self.free
    }

    /// True when `start` is a multiple of `align` and it and the `count - 1`
    /// frames after it are all free.
    fn starts_free_run(&self, start: FrameNumber, count: u64, align: u64) -> bool {
        if !start.0.is_multiple_of(align) || count > self.free_count() {
            return false;
        }
        (0..count).all(|offset| {
            start
                .checked_add(offset)
                .is_some_and(|frame| self.free.contains(&frame))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocate_honours_a_free_choice_and_falls_back_to_the_lowest() {
        let mut spec = AbstractFrameAllocator::new(1, FrameNumber(0));
        spec.add_free(FrameRange::new(FrameNumber(3), FrameNumber(6)))
            .unwrap();
        assert_eq!(spec.allocate(Some(FrameNumber(5))), Ok(FrameNumber(5)));
        assert_eq!(spec.allocate(Some(FrameNumber(5))), Ok(FrameNumber(3)));
        assert_eq!(spec.allocate(None), Ok(FrameNumber(4)));
        assert_eq!(spec.allocate(None), Err(FrameError::OutOfMemory));
    }

    #[test]
    fn allocate_contiguous_refuses_a_choice_that_is_not_a_fitting_run() {
        let mut spec = AbstractFrameAllocator::new(1, FrameNumber(0));
        spec.add_free(FrameRange::new(FrameNumber(1), FrameNumber(12)))
            .unwrap();
        assert_eq!(
            spec.allocate_contiguous(4, 4, Some(FrameNumber(2))),
            Ok(FrameNumber(4))
        );
        assert_eq!(
            spec.allocate_contiguous(4, 4, Some(FrameNumber(8))),
            Ok(FrameNumber(8))
        );
        assert_eq!(
            spec.allocate_contiguous(2, 4, None),
            Err(FrameError::OutOfMemory)
        );
        assert_eq!(spec.allocate_contiguous(3, 1, None), Ok(FrameNumber(1)));
    }

    #[test]
    fn coverage_stops_at_the_highest_addressable_frame() {
        let spec = AbstractFrameAllocator::new(4, FrameNumber(FrameNumber::MAX.0 - 2));
        assert_eq!(spec.total_count(), 3);
        let beyond = AbstractFrameAllocator::new(4, FrameNumber(u64::MAX));
        assert_eq!(beyond.total_count(), 0);
    }
}
