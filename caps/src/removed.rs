//! What the database tells its caller when a capability goes: enough to
//! undo its effects (unmap the use site, destroy the object when it was the
//! last capability naming it). Removals come in fixed-size batches so that
//! the caller can undo them without holding the database lock and without
//! the layer allocating.

use crate::{CapId, ObjectInfo, Rights, Slot, SpaceId, UseSite, View};

/// A capability that has been removed from the database.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Removed {
    /// Its (now stale) name.
    pub cap: CapId,
    /// The space and slot it was in; the slot is free again.
    pub owner: SpaceId,
    /// Its slot.
    pub slot: Slot,
    /// The object it named.
    pub object: ObjectInfo,
    /// Its rights.
    pub rights: Rights,
    /// Its view.
    pub view: View,
    /// Where it was in use: the caller undoes that.
    pub use_site: Option<UseSite>,
    /// No capability names the object any more: the caller destroys it.
    pub last_reference: LastReference,
}

/// Whether a removal took away the last capability to the object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LastReference {
    /// Others still name the object.
    No,
    /// It was the last: the object is now unreachable.
    Yes,
}

/// How many removals one batch holds: the most a revoke or a space
/// destruction does per hold of the database lock. Two under loom, so that
/// the models interleave other operations between the batches of a sweep.
pub const BATCH: usize = if cfg!(loom) { 2 } else { 32 };

/// Up to [`BATCH`] removals.
#[derive(Clone, Debug)]
pub struct RemovedBatch {
    items: [Option<Removed>; BATCH],
    length: usize,
}

impl RemovedBatch {
    /// An empty batch.
    pub const fn new() -> Self {
        Self { items: [None; BATCH], length: 0 }
    }

    /// Whether it has no room left.
    pub fn is_full(&self) -> bool {
        self.length == BATCH
    }

    /// How many removals it holds.
    pub fn len(&self) -> usize {
        self.length
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub(crate) fn push(&mut self, removed: Removed) {
        debug_assert!(!self.is_full(), "callers check for room first");
        self.items[self.length] = Some(removed);
        self.length += 1;
    }

    /// The removals, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Removed> {
        self.items[..self.length].iter().flatten()
    }
}

impl Default for RemovedBatch {
    fn default() -> Self {
        Self::new()
    }
}
