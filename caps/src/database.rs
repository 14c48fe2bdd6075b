//! The capability database of one kernel (group): capability spaces, the
//! derivation tree, object records and revocations in progress.
//!
//! Every operation is a plain state transition: it checks everything first
//! and changes nothing when it fails (decode, then invoke), does no I/O and
//! takes no lock, so the same code runs in the kernel (under
//! [`SharedCaps`](crate::SharedCaps)'s lock), in the refinement tests
//! against [`spec::CapsSpec`](crate::spec::CapsSpec) and, later, between
//! kernels.

use crate::arena::Arena;
use crate::node::{Links, Mark, Node};
use crate::object::ObjectRecord;
use crate::revoke::Revocation;
use crate::space::{Space, SpaceState};
use crate::{
    CapError, CapId, GlobalKey, ObjectId, ObjectInfo, ObjectKind, Placement, Rights, Slot,
    SpaceId, UseSite, View,
};

/// A capability as its holder sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Capability {
    /// The node's name.
    pub cap: CapId,
    /// The object.
    pub object: ObjectInfo,
    /// The rights it carries.
    pub rights: Rights,
    /// The part of the object it reaches.
    pub view: View,
    /// Where it is in use, if anywhere.
    pub use_site: Option<UseSite>,
}

/// One space's slots, looked up in it once ([`CapDatabase::objects_in`]).
pub struct SpaceObjects<'a> {
    database: &'a CapDatabase,
    space: &'a Space,
}

impl SpaceObjects<'_> {
    /// The kind and kernel handle of the object the capability in `slot`
    /// names ([`CapDatabase::object_of`]).
    pub fn object_of(&self, slot: Slot) -> Result<(ObjectKind, u64), CapError> {
        let node = self.database.node(self.space.get(slot).ok_or(CapError::EmptySlot)?);
        if let Mark::Doomed(_) = node.mark {
            return Err(CapError::Revoked);
        }
        let record = self.database.objects.get(node.object.0).expect("nodes name live objects");
        Ok((record.key.kind, record.handle))
    }
}

/// The capability database.
pub struct CapDatabase {
    group: u16,
    pub(crate) nodes: Arena<Node>,
    pub(crate) objects: Arena<ObjectRecord>,
    pub(crate) spaces: Arena<Space>,
    pub(crate) revocations: Arena<Revocation>,
    next_object: u64,
    /// Node visits by tree walks, for the linear-time tests.
    pub(crate) work: u64,
    /// Capabilities taken out of use so far (removed, or claimed by a
    /// revocation): what a cache of slot contents must not outlive
    /// ([`crate::SharedCaps::withdrawals`]).
    withdrawals: u64,
}

impl CapDatabase {
    /// An empty database for kernel group `group`.
    pub const fn new(group: u16) -> Self {
        Self {
            group,
            nodes: Arena::new(),
            objects: Arena::new(),
            spaces: Arena::new(),
            revocations: Arena::new(),
            next_object: 1,
            work: 0,
            withdrawals: 0,
        }
    }

    /// A new, empty capability space whose slots are `0..slot_limit`.
    pub fn create_space(&mut self, slot_limit: Slot) -> Result<SpaceId, CapError> {
        self.spaces.insert(Space::new(slot_limit)).map(SpaceId)
    }

    /// Makes a new object and puts its first capability, with `rights` and
    /// a view of all `size` bytes, into `space` at `placement`.
    pub fn create_object(
        &mut self,
        space: SpaceId,
        kind: ObjectKind,
        handle: u64,
        size: u64,
        rights: Rights,
        placement: Placement,
    ) -> Result<Slot, CapError> {
        let slot = self.active_space_mut(space)?.choose(placement)?;
        self.nodes.reserve_one()?;
        self.objects.reserve_one()?;
        let key = GlobalKey { group: self.group, creator: space.0.index(), kind, object: self.next_object };
        self.next_object += 1;
        let record = ObjectRecord { key, handle, size, capabilities: 0 };
        let object = ObjectId(self.objects.insert(record)?);
        let view = View { offset: 0, length: size };
        self.insert_node(space, slot, object, rights, view, None);
        Ok(slot)
    }

    /// The capability in `slot` of `space`, if it works.
    pub fn capability(&self, space: SpaceId, slot: Slot) -> Result<Capability, CapError> {
        let cap = self.occupied_slot(space, slot)?;
        let node = self.node(cap);
        if let Mark::Doomed(_) = node.mark {
            return Err(CapError::Revoked);
        }
        Ok(Capability {
            cap,
            object: self.object_info(node.object),
            rights: node.rights,
            view: node.view,
            use_site: node.use_site,
        })
    }

    /// The kind and kernel handle of the object the capability in `slot`
    /// names: [`Self::capability`] without the rest of the record (a
    /// `poll` of a thousand descriptors asks this a thousand times).
    pub fn object_of(&self, space: SpaceId, slot: Slot) -> Result<(ObjectKind, u64), CapError> {
        self.objects_in(space)?.object_of(slot)
    }

    /// [`Self::object_of`] for many slots of one space: the space is found
    /// once (a `poll` asks for every descriptor it watches).
    pub fn objects_in(&self, space: SpaceId) -> Result<SpaceObjects<'_>, CapError> {
        let record = self.spaces.get(space.0).ok_or(CapError::NoSuchSpace)?;
        Ok(SpaceObjects { database: self, space: record })
    }

    /// The capability in `slot`, checked to name a `kind` object and to
    /// carry `needed`: what every use of a capability goes through.
    pub fn access(
        &self,
        space: SpaceId,
        slot: Slot,
        kind: ObjectKind,
        needed: Rights,
    ) -> Result<Capability, CapError> {
        let capability = self.capability(space, slot)?;
        if capability.object.kind() != kind {
            return Err(CapError::WrongKind { expected: kind, found: capability.object.kind() });
        }
        let missing = needed.missing_from(capability.rights);
        if missing != Rights::NONE {
            return Err(CapError::MissingRights(missing));
        }
        Ok(capability)
    }

    /// How many capabilities were derived from the one in `slot` directly,
    /// and whether it has a parent.
    pub fn family(&self, space: SpaceId, slot: Slot) -> Result<(u32, bool), CapError> {
        let capability = self.capability(space, slot)?;
        let node = self.node(capability.cap);
        let mut children = 0;
        let mut next = node.links.first_child;
        while let Some(child) = next {
            children += 1;
            next = self.node(child).links.next_sibling;
        }
        Ok((children, node.links.parent.is_some()))
    }

    /// Records where the capability in `slot` is in use.
    pub fn set_use_site(&mut self, space: SpaceId, slot: Slot, site: UseSite) -> Result<(), CapError> {
        let cap = self.capability(space, slot)?.cap;
        let node = self.node_mut(cap);
        if node.use_site.is_some() {
            return Err(CapError::InUse);
        }
        node.use_site = Some(site);
        Ok(())
    }

    /// Forgets where the capability in `slot` was in use, returning it.
    pub fn clear_use_site(&mut self, space: SpaceId, slot: Slot) -> Result<UseSite, CapError> {
        let cap = self.capability(space, slot)?.cap;
        self.node_mut(cap).use_site.take().ok_or(CapError::NotInUse)
    }

    /// The space that a process capability's object stands for.
    pub(crate) fn process_space(&self, process: &Capability) -> Result<SpaceId, CapError> {
        let space = SpaceId::from_bits(process.object.handle);
        match self.spaces.get(space.0) {
            Some(record) if record.state == SpaceState::Active => Ok(space),
            _ => Err(CapError::TargetGone),
        }
    }

    /// Node visits by tree walks so far (revoke, drop): for tests that
    /// check the work is linear.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// How many capabilities exist, in all spaces.
    pub fn capability_count(&self) -> usize {
        self.nodes.len()
    }

    /// How many objects have capabilities.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// How many capability spaces exist (dying ones included).
    pub fn space_count(&self) -> usize {
        self.spaces.len()
    }

    // ---- helpers for the other files of the layer ----

    /// Capabilities taken out of use so far (removed or claimed by a
    /// revocation); it only grows.
    pub fn withdrawals(&self) -> u64 {
        self.withdrawals
    }

    pub(crate) fn count_withdrawal(&mut self) {
        self.withdrawals += 1;
    }

    pub(crate) fn node(&self, cap: CapId) -> &Node {
        self.nodes.get(cap.0).expect("tree links name live nodes")
    }

    pub(crate) fn node_mut(&mut self, cap: CapId) -> &mut Node {
        self.nodes.get_mut(cap.0).expect("tree links name live nodes")
    }

    pub(crate) fn nodes_reserve_one(&mut self) -> Result<(), CapError> {
        self.nodes.reserve_one()
    }

    pub(crate) fn node_exists(&self, cap: CapId) -> bool {
        self.nodes.get(cap.0).is_some()
    }

    pub(crate) fn object_info(&self, object: ObjectId) -> ObjectInfo {
        let record = self.objects.get(object.0).expect("nodes name live objects");
        ObjectInfo { key: record.key, handle: record.handle, size: record.size }
    }

    pub(crate) fn occupied_slot(&self, space: SpaceId, slot: Slot) -> Result<CapId, CapError> {
        let record = self.spaces.get(space.0).ok_or(CapError::NoSuchSpace)?;
        record.get(slot).ok_or(CapError::EmptySlot)
    }

    pub(crate) fn active_space_mut(&mut self, space: SpaceId) -> Result<&mut Space, CapError> {
        match self.spaces.get_mut(space.0) {
            Some(record) if record.state == SpaceState::Active => Ok(record),
            _ => Err(CapError::NoSuchSpace),
        }
    }

    /// Puts a new node into `slot` (chosen, with room reserved in the node
    /// arena, by the caller), as a child of `parent` if given.
    pub(crate) fn insert_node(
        &mut self,
        space: SpaceId,
        slot: Slot,
        object: ObjectId,
        rights: Rights,
        view: View,
        parent: Option<CapId>,
    ) -> CapId {
        let node = Node {
            object,
            rights,
            view,
            owner: space,
            slot,
            links: Links::default(),
            mark: Mark::Live,
            offered_to: None,
            use_site: None,
        };
        let cap = CapId(self.nodes.insert(node).expect("the caller reserved room"));
        self.objects.get_mut(object.0).expect("nodes name live objects").capabilities += 1;
        self.spaces.get_mut(space.0).expect("the caller checked the space").fill(slot, cap);
        if let Some(parent) = parent {
            self.link_child(parent, cap);
        }
        cap
    }

    /// Takes `cap` out of everything: tree, slot, object count, arena.
    /// Its children must already be gone or handed over.
    pub(crate) fn remove_node(&mut self, cap: CapId) -> crate::Removed {
        debug_assert!(self.node(cap).links.first_child.is_none(), "children go first");
        self.count_withdrawal();
        self.unlink(cap);
        let node = self.nodes.remove(cap.0).expect("removing a live node");
        let object = self.object_info(node.object);
        let record = self.objects.get_mut(node.object.0).expect("nodes name live objects");
        record.capabilities -= 1;
        let last_reference = if record.capabilities == 0 {
            self.objects.remove(node.object.0);
            crate::LastReference::Yes
        } else {
            crate::LastReference::No
        };
        let space = self.spaces.get_mut(node.owner.0).expect("nodes name live spaces");
        space.clear(node.slot);
        if space.state == SpaceState::Dying && space.nodes == 0 {
            self.spaces.remove(node.owner.0);
        }
        crate::Removed {
            cap,
            owner: node.owner,
            slot: node.slot,
            object,
            rights: node.rights,
            view: node.view,
            use_site: node.use_site,
            last_reference,
        }
    }
}
