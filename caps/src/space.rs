//! A capability space: the slots of one process. Slots hold node names;
//! the lowest free slot is found from a hint, so filling slots in order
//! costs O(1) each (file descriptors want the lowest free number).

use alloc::vec::Vec;

use crate::{CapError, CapId, Placement, Slot};

/// Whether a space takes new capabilities.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SpaceState {
    Active,
    /// Its process is gone; the record lives until its last node is removed.
    Dying,
}

pub(crate) struct Space {
    slots: Vec<Option<CapId>>,
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
            slots: Vec::new(),
            slot_limit,
            lowest_free_hint: 0,
            nodes: 0,
            state: SpaceState::Active,
            destroy_cursor: 0,
        }
    }

    pub(crate) fn get(&self, slot: Slot) -> Option<CapId> {
        self.slots.get(slot as usize).copied().flatten()
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
        if slot >= self.slots.len() {
            let more = slot + 1 - self.slots.len();
            self.slots.try_reserve(more).map_err(|_| CapError::OutOfMemory)?;
        }
        Ok(slot as Slot)
    }

    fn lowest_free_from(&self, from: usize) -> usize {
        let start = from.max(self.lowest_free_hint);
        (start..self.slots.len())
            .find(|&slot| self.slots[slot].is_none())
            .unwrap_or(self.slots.len().max(start))
    }

    /// Puts `cap` into `slot`, which `choose` returned.
    pub(crate) fn fill(&mut self, slot: Slot, cap: CapId) {
        let slot = slot as usize;
        if slot >= self.slots.len() {
            self.slots.resize(slot + 1, None);
        }
        debug_assert!(self.slots[slot].is_none(), "choose picked a free slot");
        self.slots[slot] = Some(cap);
        if slot == self.lowest_free_hint {
            self.lowest_free_hint = slot + 1;
        }
        self.nodes += 1;
    }

    pub(crate) fn clear(&mut self, slot: Slot) {
        let slot = slot as usize;
        self.slots[slot] = None;
        self.lowest_free_hint = self.lowest_free_hint.min(slot);
        self.nodes -= 1;
    }

    /// Every occupied slot with its node.
    pub(crate) fn occupied(&self) -> impl Iterator<Item = (Slot, CapId)> + '_ {
        self.slots.iter().enumerate().filter_map(|(slot, cap)| cap.map(|cap| (slot as Slot, cap)))
    }

    /// The first occupied slot at or after `from`, with its node.
    pub(crate) fn next_occupied(&self, from: usize) -> Option<(Slot, CapId)> {
        (from..self.slots.len())
            .find_map(|slot| self.slots[slot].map(|cap| (slot as Slot, cap)))
    }
}
