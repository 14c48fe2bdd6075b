//! Deriving and exchanging capabilities: `derive` (a copy in the caller's
//! own space, possibly narrowed), `delegate` (a copy into another process's
//! space, in two steps like SemperOS's two-way handshake: prepare checks
//! and changes nothing, commit re-checks the parent and inserts), `offer`
//! and `obtain` (the owner agrees first, then the other process takes a
//! copy), and `drop_capability` (one capability goes; what was derived from
//! it moves up to its parent and keeps working).
//!
//! Rights only ever shrink: a copy carries the intersection of what was
//! asked for and what the parent has. Nothing may be derived from a
//! capability that a revocation has claimed.

use crate::database::CapDatabase;
use crate::node::Mark;
use crate::{CapError, CapId, ObjectKind, Placement, Removed, Rights, Slot, SpaceId, View};

/// A checked delegation, ready to commit: SemperOS's delegate request
/// between "the receiver agreed" and "the parent records the child".
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DelegateOffer {
    parent: CapId,
    target: SpaceId,
    rights: Rights,
    view: View,
}

impl DelegateOffer {
    /// The space the copy goes to.
    pub fn target(&self) -> SpaceId {
        self.target
    }
}

/// How to narrow a memory capability when deriving: a byte range relative
/// to the source's view.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Narrowing {
    /// Keep the whole view.
    Whole,
    /// Only `offset..offset + length` of it (memory capabilities only).
    Bytes {
        /// First byte, relative to the source's view.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
}

impl CapDatabase {
    /// A copy of the capability in `slot`, in the same space, with
    /// `rights ∩` its rights and the view narrowed as asked.
    pub fn derive(
        &mut self,
        space: SpaceId,
        slot: Slot,
        rights: Rights,
        narrowing: Narrowing,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let (parent, view) = self.derivable(space, slot, Rights::NONE, narrowing)?;
        let new_slot = self.active_space_mut(space)?.choose(placement)?;
        self.reserve_node()?;
        let node = *self.node(parent);
        self.insert_node(space, new_slot, node.object, node.rights.intersect(rights), view, Some(parent));
        Ok(new_slot)
    }

    /// Step one of a delegation: checks that the caller may pass the
    /// capability in `slot` on (grant right) to the process named by its
    /// capability in `process_slot` (write right). Changes nothing.
    pub fn prepare_delegate(
        &self,
        space: SpaceId,
        slot: Slot,
        process_slot: Slot,
        rights: Rights,
        narrowing: Narrowing,
    ) -> Result<DelegateOffer, CapError> {
        let (parent, view) = self.derivable(space, slot, Rights::GRANT, narrowing)?;
        let process = self.access(space, process_slot, ObjectKind::Process, Rights::WRITE)?;
        let target = self.process_space(&process)?;
        let rights = self.node(parent).rights.intersect(rights);
        Ok(DelegateOffer { parent, target, rights, view })
    }

    /// Step two of a delegation: inserts the copy into the target's space,
    /// if the parent still works and the target still lives.
    pub fn commit_delegate(&mut self, offer: DelegateOffer, placement: Placement) -> Result<Slot, CapError> {
        if !self.node_exists(offer.parent) || self.node(offer.parent).mark != Mark::Live {
            return Err(CapError::Revoked);
        }
        let slot = self.active_space_mut(offer.target).map_err(|_| CapError::TargetGone)?.choose(placement)?;
        self.reserve_node()?;
        let object = self.node(offer.parent).object;
        self.insert_node(offer.target, slot, object, offer.rights, offer.view, Some(offer.parent));
        Ok(slot)
    }

    /// Both steps of a delegation at once (the parent and the target live
    /// in this kernel).
    pub fn delegate(
        &mut self,
        space: SpaceId,
        slot: Slot,
        process_slot: Slot,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let offer = self.prepare_delegate(space, slot, process_slot, rights, Narrowing::Whole)?;
        self.commit_delegate(offer, placement)
    }

    /// A copy of the capability in `slot` of `space`, with `rights ∩` its
    /// rights, put into `target` by the kernel itself — as a parent process
    /// hands capabilities to a child it creates. Needs neither the grant
    /// right nor a process capability; the copy is still the original's
    /// child, so revoking the original reaches it.
    pub fn grant(
        &mut self,
        space: SpaceId,
        slot: Slot,
        target: SpaceId,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let (parent, view) = self.derivable(space, slot, Rights::NONE, Narrowing::Whole)?;
        let rights = self.node(parent).rights.intersect(rights);
        self.commit_delegate(DelegateOffer { parent, target, rights, view }, placement)
    }

    /// Lets the process named by the caller's capability in `process_slot`
    /// obtain one copy of the capability in `slot` (grant right needed).
    /// A later offer replaces an earlier one.
    pub fn offer(&mut self, space: SpaceId, slot: Slot, process_slot: Slot) -> Result<(), CapError> {
        let (cap, _) = self.derivable(space, slot, Rights::GRANT, Narrowing::Whole)?;
        let process = self.access(space, process_slot, ObjectKind::Process, Rights::NONE)?;
        let taker = self.process_space(&process)?;
        self.node_mut(cap).offered_to = Some(taker);
        Ok(())
    }

    /// Takes a copy of what the process named by the caller's capability in
    /// `process_slot` (read right) offered to the caller in its `their_slot`.
    pub fn obtain(
        &mut self,
        space: SpaceId,
        process_slot: Slot,
        their_slot: Slot,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let process = self.access(space, process_slot, ObjectKind::Process, Rights::READ)?;
        let owner = self.process_space(&process)?;
        let parent = self.occupied_slot(owner, their_slot)?;
        if self.node(parent).offered_to != Some(space) {
            return Err(CapError::NotOffered);
        }
        let (parent, view) = self.derivable(owner, their_slot, Rights::GRANT, Narrowing::Whole)?;
        let slot = self.active_space_mut(space)?.choose(placement)?;
        self.reserve_node()?;
        let node = *self.node(parent);
        self.node_mut(parent).offered_to = None;
        self.insert_node(space, slot, node.object, node.rights.intersect(rights), view, Some(parent));
        Ok(slot)
    }

    /// Removes the capability in `slot`. What was derived from it stays,
    /// now derived from its parent (or standing alone if it had none), so
    /// a later revoke of the parent still reaches it.
    pub fn drop_capability(&mut self, space: SpaceId, slot: Slot) -> Result<Removed, CapError> {
        let cap = self.occupied_slot(space, slot)?;
        match self.node(cap).mark {
            Mark::Live => {}
            Mark::Doomed(_) => return Err(CapError::Revoked),
            Mark::RevokingBelow(_) => return Err(CapError::InRevocation),
        }
        let parent = self.node(cap).links.parent;
        self.unlink(cap);
        self.hand_children_to(cap, parent);
        Ok(self.remove_node(cap))
    }

    /// The live capability in `slot` that may be copied (it carries
    /// `needed`, and no revocation has claimed it), with the view a copy
    /// gets.
    fn derivable(
        &self,
        space: SpaceId,
        slot: Slot,
        needed: Rights,
        narrowing: Narrowing,
    ) -> Result<(CapId, View), CapError> {
        let capability = self.capability(space, slot)?;
        let missing = needed.missing_from(capability.rights);
        if missing != Rights::NONE {
            return Err(CapError::MissingRights(missing));
        }
        if self.node(capability.cap).mark != Mark::Live {
            return Err(CapError::InRevocation);
        }
        let view = match narrowing {
            Narrowing::Whole => capability.view,
            Narrowing::Bytes { .. } if capability.object.kind() != ObjectKind::Memory => {
                return Err(CapError::BadRange)
            }
            Narrowing::Bytes { offset, length } => {
                capability.view.narrow(offset, length).ok_or(CapError::BadRange)?
            }
        };
        Ok((capability.cap, view))
    }

    fn reserve_node(&mut self) -> Result<(), CapError> {
        self.nodes_reserve_one()
    }
}
