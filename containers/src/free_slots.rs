//! `FreeSlots`: which slots of the container table a new container may
//! take, lowest first. Plain data under the tree lock; a bit per slot, so
//! it must never allocate after construction.

use alloc::vec::Vec;

use crate::QuotaError;

/// A set of slot numbers below the table's capacity.
pub(crate) struct FreeSlots {
    /// Bit `i % 64` of word `i / 64` is set when slot `i` is free.
    words: Vec<u64>,
    /// Every word before this one is zero: where the search starts.
    first_candidate: usize,
}

impl FreeSlots {
    /// Every slot of a table of `capacity` slots free.
    ///
    /// Errors: [`QuotaError::OutOfKernelMemory`] when the heap cannot hold it.
    pub(crate) fn all_free(capacity: usize) -> Result<Self, QuotaError> {
        let mut words = Vec::new();
        words
            .try_reserve_exact(capacity.div_ceil(64))
            .map_err(|_| QuotaError::OutOfKernelMemory)?;
        words.extend((0..capacity.div_ceil(64)).map(|word| full_word(capacity - word * 64)));
        Ok(Self {
            words,
            first_candidate: 0,
        })
    }

    /// The lowest free slot, if any (still free: see [`take`](Self::take)).
    pub(crate) fn lowest(&mut self) -> Option<usize> {
        let offset = self.words[self.first_candidate..]
            .iter()
            .position(|&word| word != 0);
        let Some(offset) = offset else {
            self.first_candidate = self.words.len();
            return None;
        };
        self.first_candidate += offset;
        let word = self.words[self.first_candidate];
        Some(self.first_candidate * 64 + word.trailing_zeros() as usize)
    }

    /// Marks `slot` in use.
    pub(crate) fn take(&mut self, slot: usize) {
        self.words[slot / 64] &= !(1 << (slot % 64));
    }

    /// Marks `slot` free again.
    pub(crate) fn give_back(&mut self, slot: usize) {
        self.words[slot / 64] |= 1 << (slot % 64);
        self.first_candidate = self.first_candidate.min(slot / 64);
    }
}

/// A word with its lowest `slots` bits set (all 64 when there are more).
fn full_word(slots: usize) -> u64 {
    match slots {
        64.. => u64::MAX,
        _ => (1 << slots) - 1,
    }
}
