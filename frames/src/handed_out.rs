//! Which frames are out with a caller: one atomic bit per frame.
//!
//! Frames sitting in a per-CPU cache are neither free in the bitmap nor
//! out with a caller; this table tells the two apart without a shared lock,
//! so a double free (or a free of a frame never handed out) is caught even
//! when the frame went through a cache. It must never be the only record of
//! a frame: the bitmap and the caches own frames, this table only checks.

use crate::sync::{AtomicU64, Ordering};
use crate::{FrameError, FrameNumber};

/// One bit per frame from `first_frame` on: set while a caller holds it.
pub(crate) struct HandedOut<'a> {
    bits: &'a [AtomicU64],
    first_frame: FrameNumber,
}

impl<'a> HandedOut<'a> {
    /// A table over `bits` (all must be zero: nothing is out yet).
    pub(crate) fn new(bits: &'a [AtomicU64], first_frame: FrameNumber) -> Self {
        Self { bits, first_frame }
    }

    /// Records that `frame` goes to a caller. `Err` if it already was out
    /// (the caller must then not hand it over: an allocator bug).
    pub(crate) fn hand_out(&self, frame: FrameNumber) -> Result<(), FrameError> {
        let (word, mask) = self.position(frame)?;
        // AcqRel: orders this hand-over after the free that brought the
        // frame back (its release) and before the new owner's use.
        let before = word.fetch_or(mask, Ordering::AcqRel);
        if before & mask != 0 {
            return Err(FrameError::AlreadyFree);
        }
        Ok(())
    }

    /// Records that the caller gave `frame` back. `Err(NotAllocated)` when
    /// it was not out, and then nothing changes.
    pub(crate) fn take_back(&self, frame: FrameNumber) -> Result<(), FrameError> {
        let (word, mask) = self.position(frame)?;
        // AcqRel: as in `hand_out`; of two racing frees of one frame,
        // exactly one sees the bit set.
        let before = word.fetch_and(!mask, Ordering::AcqRel);
        if before & mask == 0 {
            return Err(FrameError::NotAllocated);
        }
        Ok(())
    }

    /// How many frames are out now (a snapshot).
    pub(crate) fn count(&self) -> u64 {
        self.bits.iter().map(|word| u64::from(word.load(Ordering::Relaxed).count_ones())).sum()
    }

    fn position(&self, frame: FrameNumber) -> Result<(&AtomicU64, u64), FrameError> {
        let index = frame.0.checked_sub(self.first_frame.0).ok_or(FrameError::OutOfRange)?;
        let word = self.bits.get((index / 64) as usize).ok_or(FrameError::OutOfRange)?;
        Ok((word, 1 << (index % 64)))
    }
}
