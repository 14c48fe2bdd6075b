//! The derivation tree's links: insert a child, unlink a node, hand a
//! node's children to its parent. Every operation here is O(1) or, for the
//! hand-over, O(children); nothing recurses.

use crate::database::CapDatabase;
use crate::CapId;

impl CapDatabase {
    /// Makes `child` the first child of `parent`.
    pub(crate) fn link_child(&mut self, parent: CapId, child: CapId) {
        let old_first = self.node(parent).links.first_child;
        if let Some(old_first) = old_first {
            self.node_mut(old_first).links.previous_sibling = Some(child);
        }
        let links = &mut self.node_mut(child).links;
        links.parent = Some(parent);
        links.previous_sibling = None;
        links.next_sibling = old_first;
        self.node_mut(parent).links.first_child = Some(child);
    }

    /// Takes `cap` out of its parent's list of children; its own children
    /// stay linked to it.
    pub(crate) fn unlink(&mut self, cap: CapId) {
        let links = self.node(cap).links;
        if let Some(previous) = links.previous_sibling {
            self.node_mut(previous).links.next_sibling = links.next_sibling;
        } else if let Some(parent) = links.parent {
            self.node_mut(parent).links.first_child = links.next_sibling;
        }
        if let Some(next) = links.next_sibling {
            self.node_mut(next).links.previous_sibling = links.previous_sibling;
        }
        let links = &mut self.node_mut(cap).links;
        links.parent = None;
        links.previous_sibling = None;
        links.next_sibling = None;
    }

    /// Gives the children of `cap` (already unlinked from its own parent)
    /// to `new_parent`, or makes each a root when there is none.
    pub(crate) fn hand_children_to(&mut self, cap: CapId, new_parent: Option<CapId>) {
        let mut next = self.node_mut(cap).links.first_child.take();
        while let Some(child) = next {
            self.work += 1;
            next = self.node(child).links.next_sibling;
            let links = &mut self.node_mut(child).links;
            links.parent = None;
            links.previous_sibling = None;
            links.next_sibling = None;
            if let Some(new_parent) = new_parent {
                self.link_child(new_parent, child);
            }
        }
    }
}
