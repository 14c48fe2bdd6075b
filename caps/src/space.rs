//! A capability space: the slots of one process. Slots hold node names;
//! the lowest free slot is found from a hint, so filling slots in order
//! costs O(1) each (file descriptors want the lowest free number).
//!
//! Slots live in chunks of 64 with a bit per slot, made only where a slot
//! is used: a process holds descriptors near 0 and its own capability at
//! the top (slot 4095), and a flat array between them cost every fork and
//! exit a 64 KiB allocation, its zeroing and a scan of 4,096 slots.

use alloc::vec::Vec;

use crate::{CapError, CapId, Placement, Slot};

/// Whether a space takes new capabilities.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SpaceState {
    Active,
    /// Its process is gone; the record lives until its last node is removed.
    Dying,
}

/// Slots per chunk (one bit each in `Chunk::used`).
const CHUNK_SLOTS: usize = 64;

/// 64 consecutive slots.
struct Chunk {
    /// Bit `i`: slot `i` of the chunk holds `caps[i]`.
    used: u64,
    caps: [CapId; CHUNK_SLOTS],
}

/// What an unused slot of a chunk holds (never read: `used` says so).
const NO_CAP: CapId = CapId::from_bits(0);

pub(crate) struct Space {
    /// The chunks made, in the order made.
    chunks: Vec<Chunk>,
    /// For chunk number `n` (slots `64n..64n + 64`): its place in
    /// `chunks` plus one, or 0 when it was never made (all free).
    chunk_at: Vec<u16>,
    slot_limit: Slot,
    /// No slot below this one is free.
    lowest_free_hint: usize,
    /// Nodes owned, including doomed ones not yet swept.
    pub(crate) nodes: u32,
    pub(crate) state: SpaceState,
    /// Where the destruction of the space has got to.
    pub(crate) destroy_cursor: usize,
}

impl Space {
    pub(crate) const fn new(slot_limit: Slot) -> Self {
        Self {
            chunks: Vec::new(),
            chunk_at: Vec::new(),
            slot_limit,
            lowest_free_hint: 0,
            nodes: 0,
            state: SpaceState::Active,
            destroy_cursor: 0,
        }
    }

    /// Chunk number `number`, if made.
    fn chunk(&self, number: usize) -> Option<&Chunk> {
        let place = *self.chunk_at.get(number)?;
        self.chunks.get(usize::from(place).checked_sub(1)?)
    }

    fn chunk_mut(&mut self, number: usize) -> Option<&mut Chunk> {
        let place = *self.chunk_at.get(number)?;
        self.chunks.get_mut(usize::from(place).checked_sub(1)?)
    }

    pub(crate) fn get(&self, slot: Slot) -> Option<CapId> {
        let slot = slot as usize;
        let chunk = self.chunk(slot / CHUNK_SLOTS)?;
        let bit = slot % CHUNK_SLOTS;
        (chunk.used & 1 << bit != 0).then(|| chunk.caps[bit])
    }

    /// The slot a new capability would take, making room for it; changes
    /// nothing visible.
    pub(crate) fn choose(&mut self, placement: Placement) -> Result<Slot, CapError> {
        let slot = match placement {
            Placement::At(slot) if slot >= self.slot_limit => return Err(CapError::SlotOutOfRange),
            Placement::At(slot) if self.get(slot).is_some() => return Err(CapError::SlotInUse),
            Placement::At(slot) => slot as usize,
            Placement::LowestFrom(from) => self.lowest_free_from(from as usize),
        };
        if slot >= self.slot_limit as usize {
            return Err(CapError::SpaceFull);
        }
        self.make_chunk(slot / CHUNK_SLOTS)?;
        Ok(slot as Slot)
    }

    /// Makes chunk `number` (empty) unless it exists.
    fn make_chunk(&mut self, number: usize) -> Result<(), CapError> {
        if self.chunk(number).is_some() {
            return Ok(());
        }
        let place = u16::try_from(self.chunks.len() + 1).map_err(|_| CapError::OutOfMemory)?;
        if number >= self.chunk_at.len() {
            self.chunk_at.try_reserve(number + 1 - self.chunk_at.len()).map_err(|_| CapError::OutOfMemory)?;
        }
        self.chunks.try_reserve(1).map_err(|_| CapError::OutOfMemory)?;
        if number >= self.chunk_at.len() {
            self.chunk_at.resize(number + 1, 0);
        }
        self.chunks.push(Chunk { used: 0, caps: [NO_CAP; CHUNK_SLOTS] });
        self.chunk_at[number] = place;
        Ok(())
    }

    /// The lowest free slot at or after `from` (possibly past the limit).
    fn lowest_free_from(&self, from: usize) -> usize {
        let start = from.max(self.lowest_free_hint);
        for number in start / CHUNK_SLOTS..self.chunk_at.len() {
            let first = (number * CHUNK_SLOTS).max(start);
            let Some(chunk) = self.chunk(number) else { return first };
            let free = !chunk.used & (u64::MAX << (first % CHUNK_SLOTS));
            if free != 0 {
                return number * CHUNK_SLOTS + free.trailing_zeros() as usize;
            }
        }
        start.max(self.chunk_at.len() * CHUNK_SLOTS)
    }

    /// Puts `cap` into `slot`, which `choose` returned.
    pub(crate) fn fill(&mut self, slot: Slot, cap: CapId) {
        let slot = slot as usize;
        let Some(chunk) = self.chunk_mut(slot / CHUNK_SLOTS) else { return };
        let bit = slot % CHUNK_SLOTS;
        debug_assert!(chunk.used & 1 << bit == 0, "choose picked a free slot");
        chunk.used |= 1 << bit;
        chunk.caps[bit] = cap;
        if slot == self.lowest_free_hint {
            self.lowest_free_hint = slot + 1;
        }
        self.nodes += 1;
    }

    pub(crate) fn clear(&mut self, slot: Slot) {
        let slot = slot as usize;
        let Some(chunk) = self.chunk_mut(slot / CHUNK_SLOTS) else { return };
        let bit = 1 << (slot % CHUNK_SLOTS);
        if chunk.used & bit == 0 {
            return;
        }
        chunk.used &= !bit;
        self.lowest_free_hint = self.lowest_free_hint.min(slot);
        self.nodes -= 1;
    }

    /// Every occupied slot with its node, in slot order.
    pub(crate) fn occupied(&self) -> impl Iterator<Item = (Slot, CapId)> + '_ {
        let mut from = 0;
        core::iter::from_fn(move || {
            let found = self.next_occupied(from)?;
            from = found.0 as usize + 1;
            Some(found)
        })
    }

    /// The first occupied slot at or after `from`, with its node.
    pub(crate) fn next_occupied(&self, from: usize) -> Option<(Slot, CapId)> {
        for number in from / CHUNK_SLOTS..self.chunk_at.len() {
            let Some(chunk) = self.chunk(number) else { continue };
            let first = (number * CHUNK_SLOTS).max(from) % CHUNK_SLOTS;
            let used = chunk.used & (u64::MAX << first);
            if used != 0 {
                let bit = used.trailing_zeros() as usize;
                return Some(((number * CHUNK_SLOTS + bit) as Slot, chunk.caps[bit]));
            }
        }
        None
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn cap(number: u64) -> CapId {
        CapId::from_bits(number + 1)
    }

    fn fill(space: &mut Space, placement: Placement, number: u64) -> Slot {
        let slot = space.choose(placement).unwrap();
        space.fill(slot, cap(number));
        slot
    }

    #[test]
    fn slots_far_apart_are_found_in_order_and_the_lowest_free_is_lowest() {
        let mut space = Space::new(4096);
        assert_eq!(fill(&mut space, Placement::At(4095), 0), 4095);
        for expected in 0..70 {
            assert_eq!(fill(&mut space, Placement::LowestFrom(0), expected + 1), expected as Slot);
        }
        assert_eq!(space.chunks.len(), 3, "chunks 0, 1 and 63 only");
        space.clear(3);
        space.clear(64);
        assert_eq!(space.get(3), None);
        assert_eq!(space.get(4095), Some(cap(0)));
        assert_eq!(fill(&mut space, Placement::LowestFrom(10), 100), 64);
        assert_eq!(fill(&mut space, Placement::LowestFrom(0), 101), 3);
        assert_eq!(fill(&mut space, Placement::LowestFrom(200), 102), 200, "a chunk never made is all free");
        let slots: Vec<Slot> = space.occupied().map(|(slot, _)| slot).collect();
        let mut expected: Vec<Slot> = (0..70).chain([200, 4095]).collect();
        expected.sort_unstable();
        assert_eq!(slots, expected);
        assert_eq!(space.next_occupied(71), Some((200, cap(102))));
        assert_eq!(space.next_occupied(4096), None);
        assert_eq!(space.nodes, 72);
        assert_eq!(space.choose(Placement::At(4095)), Err(CapError::SlotInUse));
        assert_eq!(space.choose(Placement::At(4096)), Err(CapError::SlotOutOfRange));
    }
}
