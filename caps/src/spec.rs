//! The executable specification of the capability layer: a set of
//! capabilities, each with a space and slot, an object, rights, a view and
//! a parent. Operations are atomic (a revoke removes exactly the subtree in
//! one step). [`CapDatabase`](crate::CapDatabase) refines it: the
//! refinement tests apply random operations to both and compare every
//! result and every space's contents. The spec states the layer's laws
//! directly:
//! - a copy's rights are the intersection of what was asked and what its
//!   parent has, so rights never grow along a derivation;
//! - revoke removes exactly the descendants (and, with `WithSelf`, the
//!   capability), wherever they are;
//! - drop removes one capability; its children move to its parent.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::{CapError, ObjectKind, Placement, RevokeScope, Rights, Slot, UseSite, View};

/// A capability in the spec.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SpecCap {
    /// Its space (spec numbering).
    pub space: u32,
    /// Its slot.
    pub slot: Slot,
    /// Its object's id (the `object` of the global key).
    pub object: u64,
    /// Its rights.
    pub rights: Rights,
    /// Its view.
    pub view: View,
    /// The capability it was derived from.
    pub parent: Option<u64>,
    /// Who may obtain a copy.
    pub offered_to: Option<u32>,
    /// Where it is in use.
    pub use_site: Option<UseSite>,
}

/// An object in the spec.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SpecObject {
    /// Its kind.
    pub kind: ObjectKind,
    /// The kernel's handle (for a process: the spec number of its space).
    pub handle: u64,
}

/// What a spec removal reports: where, which object, and whether it was
/// the object's last capability.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct SpecRemoved {
    /// Space (spec numbering).
    pub space: u32,
    /// Slot.
    pub slot: Slot,
    /// Object id.
    pub object: u64,
    /// Whether no capability names the object any more.
    pub last_reference: bool,
}

/// The specification's state.
#[derive(Clone, Debug, Default)]
pub struct CapsSpec {
    spaces: BTreeMap<u32, Slot>,
    caps: BTreeMap<u64, SpecCap>,
    objects: BTreeMap<u64, SpecObject>,
    next_space: u32,
    next_cap: u64,
    next_object: u64,
}

impl CapsSpec {
    /// No spaces, no capabilities. Object ids start at 1, as the database's.
    pub fn new() -> Self {
        Self { next_object: 1, ..Self::default() }
    }

    /// A new space; returns its spec number (0, 1, 2, … in creation order).
    pub fn create_space(&mut self, slot_limit: Slot) -> u32 {
        let space = self.next_space;
        self.next_space += 1;
        self.spaces.insert(space, slot_limit);
        space
    }

    /// See [`CapDatabase::create_object`](crate::CapDatabase::create_object).
    pub fn create_object(
        &mut self,
        space: u32,
        kind: ObjectKind,
        handle: u64,
        size: u64,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let slot = self.choose_own(space, placement)?;
        let object = self.next_object;
        self.next_object += 1;
        self.objects.insert(object, SpecObject { kind, handle });
        self.add(space, slot, object, rights, View { offset: 0, length: size }, None);
        Ok(slot)
    }

    /// The capability in a slot: its id and contents.
    pub fn capability(&self, space: u32, slot: Slot) -> Result<(u64, SpecCap), CapError> {
        if !self.spaces.contains_key(&space) {
            return Err(CapError::NoSuchSpace);
        }
        self.caps
            .iter()
            .find(|(_, cap)| cap.space == space && cap.slot == slot)
            .map(|(id, cap)| (*id, *cap))
            .ok_or(CapError::EmptySlot)
    }

    /// See [`CapDatabase::access`](crate::CapDatabase::access).
    pub fn access(&self, space: u32, slot: Slot, kind: ObjectKind, needed: Rights) -> Result<(u64, SpecCap), CapError> {
        let (id, cap) = self.capability(space, slot)?;
        let found = self.objects[&cap.object].kind;
        if found != kind {
            return Err(CapError::WrongKind { expected: kind, found });
        }
        let missing = needed.missing_from(cap.rights);
        if missing != Rights::NONE {
            return Err(CapError::MissingRights(missing));
        }
        Ok((id, cap))
    }

    /// See [`CapDatabase::derive`](crate::CapDatabase::derive).
    pub fn derive(
        &mut self,
        space: u32,
        slot: Slot,
        rights: Rights,
        narrowing: crate::Narrowing,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let (parent, view) = self.derivable(space, slot, Rights::NONE, narrowing)?;
        let new_slot = self.choose_own(space, placement)?;
        let cap = self.caps[&parent];
        self.add(space, new_slot, cap.object, cap.rights.intersect(rights), view, Some(parent));
        Ok(new_slot)
    }

    /// See [`CapDatabase::delegate`](crate::CapDatabase::delegate).
    pub fn delegate(
        &mut self,
        space: u32,
        slot: Slot,
        process_slot: Slot,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let (parent, view) = self.derivable(space, slot, Rights::GRANT, crate::Narrowing::Whole)?;
        let target = self.process_target(space, process_slot, Rights::WRITE)?;
        let new_slot = self.choose(target, placement)?;
        let cap = self.caps[&parent];
        self.add(target, new_slot, cap.object, cap.rights.intersect(rights), view, Some(parent));
        Ok(new_slot)
    }

    /// See [`CapDatabase::grant`](crate::CapDatabase::grant).
    pub fn grant(&mut self, space: u32, slot: Slot, target: u32, rights: Rights, placement: Placement) -> Result<Slot, CapError> {
        let (parent, view) = self.derivable(space, slot, Rights::NONE, crate::Narrowing::Whole)?;
        let new_slot = self.choose(target, placement)?;
        let cap = self.caps[&parent];
        self.add(target, new_slot, cap.object, cap.rights.intersect(rights), view, Some(parent));
        Ok(new_slot)
    }

    /// See [`CapDatabase::offer`](crate::CapDatabase::offer).
    pub fn offer(&mut self, space: u32, slot: Slot, process_slot: Slot) -> Result<(), CapError> {
        let (cap, _) = self.derivable(space, slot, Rights::GRANT, crate::Narrowing::Whole)?;
        let taker = self.process_target(space, process_slot, Rights::NONE)?;
        self.caps.get_mut(&cap).expect("found above").offered_to = Some(taker);
        Ok(())
    }

    /// See [`CapDatabase::obtain`](crate::CapDatabase::obtain).
    pub fn obtain(
        &mut self,
        space: u32,
        process_slot: Slot,
        their_slot: Slot,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let owner = self.process_target(space, process_slot, Rights::READ)?;
        let (_, theirs) = self.capability(owner, their_slot)?;
        if theirs.offered_to != Some(space) {
            return Err(CapError::NotOffered);
        }
        let (parent, view) = self.derivable(owner, their_slot, Rights::GRANT, crate::Narrowing::Whole)?;
        let new_slot = self.choose_own(space, placement)?;
        self.caps.get_mut(&parent).expect("found above").offered_to = None;
        self.add(space, new_slot, theirs.object, theirs.rights.intersect(rights), view, Some(parent));
        Ok(new_slot)
    }

    /// See [`CapDatabase::drop_capability`](crate::CapDatabase::drop_capability).
    pub fn drop_capability(&mut self, space: u32, slot: Slot) -> Result<SpecRemoved, CapError> {
        let (id, cap) = self.capability(space, slot)?;
        for child in self.caps.values_mut().filter(|child| child.parent == Some(id)) {
            child.parent = cap.parent;
        }
        Ok(self.remove(id))
    }

    /// Revokes atomically: removes exactly the descendants of the capability
    /// in `slot` (and it too, with `WithSelf`), sorted.
    pub fn revoke(&mut self, space: u32, slot: Slot, scope: RevokeScope) -> Result<Vec<SpecRemoved>, CapError> {
        let (id, cap) = self.capability(space, slot)?;
        let missing = Rights::REVOKE.missing_from(cap.rights);
        if missing != Rights::NONE {
            return Err(CapError::MissingRights(missing));
        }
        let mut doomed: Vec<u64> = self.caps.keys().copied().filter(|&other| self.descends_from(other, id)).collect();
        if scope == RevokeScope::Descendants {
            doomed.retain(|&other| other != id);
        }
        let mut removed: Vec<SpecRemoved> = doomed.iter().map(|&other| self.remove(other)).collect();
        // Within one removal set, "last" means "no capability is left".
        for entry in &mut removed {
            entry.last_reference = !self.caps.values().any(|cap| cap.object == entry.object);
        }
        removed.sort();
        Ok(removed)
    }

    /// Drops every capability of `space` and forgets the space.
    pub fn destroy_space(&mut self, space: u32) -> Result<Vec<SpecRemoved>, CapError> {
        if !self.spaces.contains_key(&space) {
            return Err(CapError::NoSuchSpace);
        }
        let mut slots: Vec<Slot> = self.caps.values().filter(|cap| cap.space == space).map(|cap| cap.slot).collect();
        slots.sort();
        let removed = slots.into_iter().map(|slot| self.drop_capability(space, slot).expect("occupied")).collect();
        self.spaces.remove(&space);
        Ok(removed)
    }

    /// See [`CapDatabase::set_use_site`](crate::CapDatabase::set_use_site).
    pub fn set_use_site(&mut self, space: u32, slot: Slot, site: UseSite) -> Result<(), CapError> {
        let (id, cap) = self.capability(space, slot)?;
        if cap.use_site.is_some() {
            return Err(CapError::InUse);
        }
        self.caps.get_mut(&id).expect("found above").use_site = Some(site);
        Ok(())
    }

    /// Every capability of `space`, by slot: what a refinement test compares.
    pub fn contents(&self, space: u32) -> Vec<(Slot, u64, Rights, View, Option<UseSite>)> {
        let mut contents: Vec<_> = self
            .caps
            .values()
            .filter(|cap| cap.space == space)
            .map(|cap| (cap.slot, cap.object, cap.rights, cap.view, cap.use_site))
            .collect();
        contents.sort_by_key(|entry| entry.0);
        contents
    }

    /// Every capability, with its id.
    pub fn caps(&self) -> impl Iterator<Item = (&u64, &SpecCap)> {
        self.caps.iter()
    }

    fn derivable(&self, space: u32, slot: Slot, needed: Rights, narrowing: crate::Narrowing) -> Result<(u64, View), CapError> {
        let (id, cap) = self.capability(space, slot)?;
        let missing = needed.missing_from(cap.rights);
        if missing != Rights::NONE {
            return Err(CapError::MissingRights(missing));
        }
        let view = match narrowing {
            crate::Narrowing::Whole => cap.view,
            crate::Narrowing::Bytes { .. } if self.objects[&cap.object].kind != ObjectKind::Memory => {
                return Err(CapError::BadRange)
            }
            crate::Narrowing::Bytes { offset, length } => cap.view.narrow(offset, length).ok_or(CapError::BadRange)?,
        };
        Ok((id, view))
    }

    fn process_target(&self, space: u32, process_slot: Slot, needed: Rights) -> Result<u32, CapError> {
        let (_, process) = self.access(space, process_slot, ObjectKind::Process, needed)?;
        let target = self.objects[&process.object].handle as u32;
        if !self.spaces.contains_key(&target) {
            return Err(CapError::TargetGone);
        }
        Ok(target)
    }

    /// A free slot of `space` for `placement` (`TargetGone` if the space is gone).
    fn choose(&self, space: u32, placement: Placement) -> Result<Slot, CapError> {
        let limit = *self.spaces.get(&space).ok_or(CapError::TargetGone)?;
        let taken = |slot: Slot| self.caps.values().any(|cap| cap.space == space && cap.slot == slot);
        let slot = match placement {
            Placement::At(slot) if slot >= limit => return Err(CapError::SlotOutOfRange),
            Placement::At(slot) if taken(slot) => return Err(CapError::SlotInUse),
            Placement::At(slot) => slot,
            Placement::LowestFrom(from) => (from..).find(|&slot| !taken(slot)).expect("finitely many caps"),
        };
        if slot >= limit {
            return Err(CapError::SpaceFull);
        }
        Ok(slot)
    }

    /// A free slot in the caller's own space (`NoSuchSpace` if it is gone).
    fn choose_own(&self, space: u32, placement: Placement) -> Result<Slot, CapError> {
        self.choose(space, placement).map_err(|error| match error {
            CapError::TargetGone => CapError::NoSuchSpace,
            other => other,
        })
    }

    fn add(&mut self, space: u32, slot: Slot, object: u64, rights: Rights, view: View, parent: Option<u64>) {
        let id = self.next_cap;
        self.next_cap += 1;
        let cap = SpecCap { space, slot, object, rights, view, parent, offered_to: None, use_site: None };
        self.caps.insert(id, cap);
    }

    fn remove(&mut self, id: u64) -> SpecRemoved {
        let cap = self.caps.remove(&id).expect("removing a capability that exists");
        let last_reference = !self.caps.values().any(|other| other.object == cap.object);
        if last_reference {
            self.objects.remove(&cap.object);
        }
        SpecRemoved { space: cap.space, slot: cap.slot, object: cap.object, last_reference }
    }

    fn descends_from(&self, cap: u64, ancestor: u64) -> bool {
        let mut current = Some(cap);
        while let Some(id) = current {
            if id == ancestor {
                return true;
            }
            current = self.caps[&id].parent;
        }
        false
    }
}
