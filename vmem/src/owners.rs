//! The owner table: for every frame, how many address spaces own it.
//!
//! A private page is owned by one space; fork makes parent and child both
//! owners until one of them writes (and copies) or lets go; a shared-memory
//! page is owned by every space that maps it. A frame is freed exactly
//! when its last owner leaves: [`OwnerTable::leave`] says so to exactly
//! one caller. One table serves the whole machine, from every CPU at once,
//! lock-free: one atomic counter per frame, allocated once.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::sync::{AtomicU32, Ordering};
use crate::{VmError, PAGE_SIZE};

/// What a [`OwnerTable::leave`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaveOutcome {
    /// The caller was the last owner: it must free the frame.
    Last,
    /// Other owners remain.
    StillShared,
    /// The frame had no owner (a caller bug, refused; nothing changed).
    NotOwned,
}

/// Owner counts for the frames `[first, first + count)`.
pub struct OwnerTable {
    first_frame: u64,
    counts: Box<[AtomicU32]>,
}

impl OwnerTable {
    /// A table covering `frames` frames from physical address `first`
    /// (page-aligned). `None` when the heap cannot hold it.
    pub fn new(first: u64, frames: usize) -> Option<OwnerTable> {
        let mut counts = Vec::new();
        counts.try_reserve_exact(frames).ok()?;
        counts.extend((0..frames).map(|_| AtomicU32::new(0)));
        Some(OwnerTable { first_frame: first / PAGE_SIZE, counts: counts.into_boxed_slice() })
    }

    #[inline]
    fn slot(&self, frame: u64) -> Option<&AtomicU32> {
        if !frame.is_multiple_of(PAGE_SIZE) {
            return None;
        }
        let index = (frame / PAGE_SIZE).checked_sub(self.first_frame)?;
        self.counts.get(usize::try_from(index).ok()?)
    }

    /// Whether the table covers `frame`.
    pub fn covers(&self, frame: u64) -> bool {
        self.slot(frame).is_some()
    }

    /// Adds an owner to `frame` (the first, for a fresh frame). Returns the
    /// new count.
    #[inline]
    pub fn join(&self, frame: u64) -> Result<u32, VmError> {
        let slot = self.slot(frame).ok_or(VmError::UnknownFrame)?;
        // Relaxed: a joiner already holds a reference through an owner (or
        // the fresh frame), so the count cannot be at zero concurrently
        // with a free; the frame's contents are ordered by `leave`.
        let previous = slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| count.checked_add(1));
        previous.map(|count| count + 1).map_err(|_| VmError::OutOfMemory)
    }

    /// Removes an owner from `frame`.
    #[inline]
    pub fn leave(&self, frame: u64) -> LeaveOutcome {
        let Some(slot) = self.slot(frame) else { return LeaveOutcome::NotOwned };
        // AcqRel: the last leaver sees every other owner's writes to the
        // frame before it frees it (as `Arc`'s drop).
        match slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| count.checked_sub(1)) {
            Ok(1) => LeaveOutcome::Last,
            Ok(_) => LeaveOutcome::StillShared,
            Err(_) => LeaveOutcome::NotOwned,
        }
    }

    /// Owners of `frame` now (0 for frames the table does not cover).
    pub fn owners(&self, frame: u64) -> u32 {
        // Acquire: pairs with `leave`, so a sole owner sees the others'
        // writes before it takes the frame over.
        self.slot(frame).map_or(0, |slot| slot.load(Ordering::Acquire))
    }
}
