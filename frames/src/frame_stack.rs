//! One CPU's cache of free frames: a fixed-size stack (no heap, so a cache
//! can never fail to take a frame back for lack of memory).

use crate::FrameNumber;

/// Frames one CPU keeps; refilled from and drained to the global bitmap
/// [`BATCH`] at a time.
pub const CACHE_CAPACITY: usize = 64;
/// Frames moved between a CPU cache and the global bitmap at once: half a
/// cache, so that a CPU alternating allocations and frees at a boundary
/// does not go to the global lock on every operation.
pub const BATCH: usize = CACHE_CAPACITY / 2;

/// A stack of at most [`CACHE_CAPACITY`] frames.
pub(crate) struct FrameStack {
    frames: [FrameNumber; CACHE_CAPACITY],
    length: usize,
}

impl FrameStack {
    pub(crate) const fn new() -> Self {
        Self { frames: [FrameNumber(0); CACHE_CAPACITY], length: 0 }
    }

    pub(crate) fn pop(&mut self) -> Option<FrameNumber> {
        self.length = self.length.checked_sub(1)?;
        Some(self.frames[self.length])
    }

    /// Pushes `frame`; gives it back when the stack is full.
    pub(crate) fn push(&mut self, frame: FrameNumber) -> Result<(), FrameNumber> {
        let Some(slot) = self.frames.get_mut(self.length) else { return Err(frame) };
        *slot = frame;
        self.length += 1;
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.length
    }

    pub(crate) fn is_full(&self) -> bool {
        self.length == CACHE_CAPACITY
    }
}
