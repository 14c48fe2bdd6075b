//! A database with `n` spaces, each holding a process capability (all
//! rights) to every space at slot = that space's number, as a kernel gives
//! processes that may talk to each other.

use crate::{CapDatabase, ObjectKind, Placement, Rights, Slot, SpaceId};

/// Slots below this hold the process capabilities.
pub(super) const PROCESS_SLOTS: Slot = 4;

pub(super) struct World {
    pub(super) database: CapDatabase,
    pub(super) spaces: std::vec::Vec<SpaceId>,
}

impl World {
    pub(super) fn new(count: usize, slot_limit: Slot) -> Self {
        assert!(count <= PROCESS_SLOTS as usize);
        let mut database = CapDatabase::new(0);
        let spaces: std::vec::Vec<SpaceId> =
            (0..count).map(|_| database.create_space(slot_limit).expect("space")).collect();
        for &holder in &spaces {
            for (number, &named) in spaces.iter().enumerate() {
                database
                    .create_object(holder, ObjectKind::Process, named.to_bits(), 0, Rights::ALL, Placement::At(number as Slot))
                    .expect("process capability");
            }
        }
        Self { database, spaces }
    }

    /// A new memory object of `size` bytes in space `space`, with `rights`.
    pub(super) fn memory(&mut self, space: usize, size: u64, rights: Rights) -> Slot {
        self.database
            .create_object(self.spaces[space], ObjectKind::Memory, 0x1000, size, rights, Placement::LowestFrom(PROCESS_SLOTS))
            .expect("memory object")
    }
}

/// Runs a revoke nobody else interferes with from mark to end, a batch
/// at a time; returns every removal in order.
pub(super) fn revoke_to_the_end(database: &mut crate::CapDatabase, space: crate::SpaceId, slot: Slot, scope: crate::RevokeScope) -> Result<std::vec::Vec<crate::Removed>, crate::CapError> {
    let crate::RevokeStart::Started(revoke) = database.begin_revoke(space, slot, scope)? else {
        panic!("no other revocation runs in a sequential test");
    };
    let mut removed = std::vec::Vec::new();
    loop {
        let mut batch = crate::RemovedBatch::new();
        let status = database.sweep(revoke, &mut batch);
        removed.extend(batch.iter().copied());
        database.effects_done(revoke, batch.len());
        if status == crate::SweepStatus::Swept {
            removed.extend(database.end_revoke(revoke));
            return Ok(removed);
        }
    }
}
