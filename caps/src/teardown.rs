//! Destroying a capability space when its process goes: every capability
//! it holds is dropped (what was derived from them moves up and keeps
//! working, as with `close` in Linux: a child keeps the pipe its parent
//! passed on), a batch at a time so that the caller can undo effects
//! outside the lock. Capabilities that a revocation has claimed are left
//! to it; the space's record goes with its last capability.

use crate::database::CapDatabase;
use crate::node::Mark;
use crate::space::SpaceState;
use crate::{CapError, CapId, RemovedBatch, SpaceId};

/// Where a space's destruction stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TeardownStatus {
    /// The batch is full; call again.
    More,
    /// Every capability the space held is dropped or left to a revocation.
    Done,
}

impl CapDatabase {
    /// Marks `space` dying (it takes nothing new from now on) and drops
    /// its capabilities into `batch` until it is full or none is left.
    pub fn destroy_space_step(&mut self, space: SpaceId, batch: &mut RemovedBatch) -> Result<TeardownStatus, CapError> {
        let record = self.spaces.get_mut(space.0).ok_or(CapError::NoSuchSpace)?;
        record.state = SpaceState::Dying;
        loop {
            // Gone first, full second: when the capability that fills the
            // batch was the space's last, its record went along, and a
            // "more" here would make the next step fail with NoSuchSpace.
            if self.spaces.get(space.0).is_none() {
                return Ok(TeardownStatus::Done); // its last capability took the record along
            }
            if batch.is_full() {
                return Ok(TeardownStatus::More);
            }
            let Some(record) = self.spaces.get_mut(space.0) else {
                return Ok(TeardownStatus::Done);
            };
            let Some((slot, cap)) = record.next_occupied(record.destroy_cursor) else {
                if record.nodes == 0 {
                    self.spaces.remove(space.0);
                }
                return Ok(TeardownStatus::Done);
            };
            record.destroy_cursor = slot as usize + 1;
            self.work += 1;
            if self.node(cap).mark == Mark::Live {
                batch.push(self.drop_capability(space, slot)?);
            }
        }
    }

    pub(crate) fn owner_is_dying(&self, cap: CapId) -> bool {
        let owner = self.node(cap).owner;
        self.spaces.get(owner.0).is_some_and(|space| space.state == SpaceState::Dying)
    }
}
