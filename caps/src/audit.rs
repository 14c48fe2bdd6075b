//! A full consistency check of the database, for tests and debug builds:
//! the tree's links agree with each other, every copy's rights and view
//! lie within its parent's, every node sits in its slot, and every object
//! counts exactly the nodes that name it. O(n); never on a hot path.

use alloc::collections::BTreeMap;

use crate::arena::Handle;
use crate::database::CapDatabase;
use crate::{CapId, Capability, Slot, SpaceId};

impl CapDatabase {
    /// Checks every invariant of the database; names the first one broken.
    pub fn audit(&self) -> Result<(), &'static str> {
        let mut per_object: BTreeMap<Handle, u32> = BTreeMap::new();
        for (handle, node) in self.nodes.iter() {
            let cap = CapId(handle);
            *per_object.entry(node.object.0).or_default() += 1;
            let space = self.spaces.get(node.owner.0).ok_or("a node's space is gone")?;
            if space.get(node.slot) != Some(cap) {
                return Err("a node is not in its slot");
            }
            self.audit_links(cap)?;
        }
        for (handle, record) in self.objects.iter() {
            if per_object.get(&handle).copied().unwrap_or(0) != record.capabilities {
                return Err("an object's capability count is wrong");
            }
        }
        if per_object.len() != self.objects.len() {
            return Err("a node names an object that is gone");
        }
        Ok(())
    }

    fn audit_links(&self, cap: CapId) -> Result<(), &'static str> {
        let node = self.node(cap);
        let links = node.links;
        if let Some(next) = links.next_sibling {
            if self.nodes.get(next.0).ok_or("a sibling link dangles")?.links.previous_sibling != Some(cap) {
                return Err("sibling links disagree");
            }
        }
        match (links.parent, links.previous_sibling) {
            (Some(parent), None) => {
                let parent_node = self.nodes.get(parent.0).ok_or("a parent link dangles")?;
                if parent_node.links.first_child != Some(cap) {
                    return Err("a first child is not its parent's first child");
                }
            }
            (None, Some(_)) => return Err("a root has a sibling"),
            _ => {}
        }
        if let Some(parent) = links.parent {
            let parent_node = self.node(parent);
            if !parent_node.rights.contains(node.rights) {
                return Err("a copy has a right its parent lacks");
            }
            let (inner, outer) = (node.view, parent_node.view);
            if inner.offset < outer.offset || inner.offset + inner.length > outer.offset + outer.length {
                return Err("a copy's view reaches outside its parent's");
            }
        }
        Ok(())
    }

    /// Every capability of `space` that works, by slot.
    pub fn contents(&self, space: SpaceId) -> impl Iterator<Item = (Slot, Capability)> + '_ {
        self.spaces
            .get(space.0)
            .into_iter()
            .flat_map(|record| record.occupied())
            .filter_map(move |(slot, _)| self.capability(space, slot).ok().map(|capability| (slot, capability)))
    }
}
