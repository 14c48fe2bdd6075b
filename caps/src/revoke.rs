//! Two-phase revocation (SemperOS §4.3.3, after mark-and-sweep).
//!
//! **Mark** ([`CapDatabase::begin_revoke`]): one walk over the subtree
//! claims every node for this revocation. From then on a claimed
//! ("doomed") capability works for nobody and nothing can be derived from
//! it, so the subtree can only shrink: a delegation racing the revoke
//! either committed before the mark (its copy is in the subtree and gets
//! claimed) or fails.
//!
//! **Sweep** ([`CapDatabase::sweep`]): a post-order walk removes the
//! claimed nodes, children before parents, at most a batch at a time; the
//! caller undoes each batch's effects outside the lock and reports them
//! done ([`CapDatabase::effects_done`]). The walk's position is kept in the
//! revocation record, so batches resume where they stopped.
//!
//! **Never acknowledge an incomplete revoke.** A mark that meets nodes of
//! an earlier revocation inside its subtree *absorbs* it: it claims those
//! nodes too, and counts that revocation's undone effects as outstanding.
//! The absorbed revocation stops sweeping; it is complete when its
//! absorber is. A revoke of a node another revocation already claimed
//! waits for that one. [`CapDatabase::revoke_complete`] is true only when
//! every node is gone and every effect is undone.
//!
//! Both walks follow the tree's links, with no stack and no recursion, and
//! visit each node a bounded number of times: a chain of 100,000 is no
//! deeper for the kernel stack than a single node, and the work is linear.

use crate::database::CapDatabase;
use crate::node::Mark;
use crate::{CapError, CapId, Removed, RemovedBatch, RevokeId, RevokeScope, Rights, Slot, SpaceId};

/// A revocation in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Revocation {
    root: CapId,
    scope: RevokeScope,
    /// The sweep's position: a claimed node still in the tree.
    cursor: CapId,
    /// The revocation that took this one's nodes over.
    absorbed_into: Option<RevokeId>,
    /// Absorbed revocations whose effects are still being undone.
    outstanding: u32,
    /// Removed nodes whose effects the caller has not reported undone.
    effects_in_flight: u32,
    swept: bool,
}

/// How a revoke request starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RevokeStart {
    /// This revocation is marked and must be swept by the caller.
    Started(RevokeId),
    /// Another revocation already covers the subtree: wait until
    /// [`revoke_complete`](CapDatabase::revoke_complete) says it is done.
    WaitFor(RevokeId),
}

/// Where a sweep stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SweepStatus {
    /// The batch is full; sweep again.
    More,
    /// Every claimed node is removed (effects may still be outstanding).
    Swept,
    /// Another revocation took this one's nodes over.
    Absorbed,
}

impl CapDatabase {
    /// Phase one: claims every node below the capability in `slot` (and,
    /// for [`RevokeScope::WithSelf`], the capability itself). Needs the
    /// revoke right.
    pub fn begin_revoke(&mut self, space: SpaceId, slot: Slot, scope: RevokeScope) -> Result<RevokeStart, CapError> {
        let root = self.occupied_slot(space, slot)?;
        let node = *self.node(root);
        let missing = Rights::REVOKE.missing_from(node.rights);
        match (node.mark, scope) {
            (Mark::Doomed(other), _) | (Mark::RevokingBelow(other), RevokeScope::Descendants) => {
                return Ok(RevokeStart::WaitFor(other))
            }
            _ if missing != Rights::NONE => return Err(CapError::MissingRights(missing)),
            _ => {}
        }
        let revoke = RevokeId(self.revocations.insert(Revocation {
            root,
            scope,
            cursor: root,
            absorbed_into: None,
            outstanding: 0,
            effects_in_flight: 0,
            swept: false,
        })?);
        match scope {
            RevokeScope::WithSelf => self.claim(root, revoke),
            RevokeScope::Descendants => self.node_mut(root).mark = Mark::RevokingBelow(revoke),
        }
        self.claim_below(root, revoke);
        Ok(RevokeStart::Started(revoke))
    }

    /// Phase two: removes claimed nodes, children first, into `batch` until
    /// it is full or the subtree is gone. Each removal counts as an effect
    /// in flight until [`effects_done`](Self::effects_done).
    pub fn sweep(&mut self, revoke: RevokeId, batch: &mut RemovedBatch) -> SweepStatus {
        let Some(record) = self.revocations.get(revoke.0).copied() else {
            return SweepStatus::Swept;
        };
        if record.absorbed_into.is_some() {
            return SweepStatus::Absorbed;
        }
        if record.swept {
            return SweepStatus::Swept;
        }
        let mut cursor = record.cursor;
        let status = loop {
            if batch.is_full() {
                break SweepStatus::More;
            }
            self.work += 1;
            if let Some(child) = self.node(cursor).links.first_child {
                debug_assert_eq!(self.node(child).mark, Mark::Doomed(revoke), "the mark claimed every child");
                cursor = child;
                continue;
            }
            if cursor == record.root {
                self.finish_root(revoke, record.scope, batch);
                break SweepStatus::Swept;
            }
            let parent = self.node(cursor).links.parent.expect("a claimed node below the root has a parent");
            batch.push(self.remove_node(cursor));
            self.revocation_mut(revoke).effects_in_flight += 1;
            cursor = parent;
        };
        let record = self.revocation_mut(revoke);
        record.swept = status == SweepStatus::Swept;
        if !record.swept {
            record.cursor = cursor;
        }
        status
    }

    /// The caller has undone the effects of `count` removals of `revoke`.
    pub fn effects_done(&mut self, revoke: RevokeId, count: usize) {
        let Some(record) = self.revocations.get_mut(revoke.0) else { return };
        record.effects_in_flight -= count as u32;
        let absorbed_with_nothing_left = record.effects_in_flight == 0 && record.absorbed_into.is_some();
        if count > 0 && absorbed_with_nothing_left {
            let absorber = self.final_absorber(revoke);
            self.revocation_mut(absorber).outstanding -= 1;
        }
    }

    /// Whether `revoke` is done: every node it (or its absorber) claimed is
    /// gone and every effect undone. A finished and forgotten revocation is
    /// complete.
    pub fn revoke_complete(&self, revoke: RevokeId) -> bool {
        let mut current = revoke;
        loop {
            let Some(record) = self.revocations.get(current.0) else { return true };
            match record.absorbed_into {
                Some(absorber) => current = absorber,
                None => return record.swept && record.outstanding == 0 && record.effects_in_flight == 0,
            }
        }
    }

    /// Forgets a complete revocation (called once, by whoever started it)
    /// and releases the root of a [`RevokeScope::Descendants`] revoke. A
    /// root whose space died meanwhile is removed instead and returned: its
    /// effects are the caller's to undo.
    pub fn end_revoke(&mut self, revoke: RevokeId) -> Option<Removed> {
        debug_assert!(self.revoke_complete(revoke), "only complete revocations end");
        let record = self.revocations.remove(revoke.0)?;
        let root_still_held = self.node_exists(record.root) && self.node(record.root).mark == Mark::RevokingBelow(revoke);
        if !root_still_held {
            return None;
        }
        if self.owner_is_dying(record.root) {
            return Some(self.remove_node(record.root));
        }
        self.node_mut(record.root).mark = Mark::Live;
        None
    }

    /// How many revocations are in progress.
    pub fn revocations_in_progress(&self) -> usize {
        self.revocations.len()
    }

    /// Claims one node for `revoke`, absorbing the revocation that had
    /// claimed it before.
    fn claim(&mut self, cap: CapId, revoke: RevokeId) {
        self.work += 1;
        if let Some(earlier) = self.node(cap).mark.revocation() {
            self.absorb(earlier, revoke);
        }
        self.count_withdrawal();
        let node = self.node_mut(cap);
        node.mark = Mark::Doomed(revoke);
        node.offered_to = None;
    }

    /// Claims every node below `root`, in pre-order along the links.
    fn claim_below(&mut self, root: CapId, revoke: RevokeId) {
        let mut next = self.node(root).links.first_child;
        while let Some(cap) = next {
            self.claim(cap, revoke);
            next = self.preorder_successor(cap, root);
        }
    }

    /// The node after `cap` in a pre-order walk of `root`'s subtree.
    fn preorder_successor(&self, cap: CapId, root: CapId) -> Option<CapId> {
        if let Some(child) = self.node(cap).links.first_child {
            return Some(child);
        }
        let mut current = cap;
        while current != root {
            let links = self.node(current).links;
            if links.next_sibling.is_some() {
                return links.next_sibling;
            }
            current = links.parent.expect("a node below the root has a parent");
        }
        None
    }

    /// Takes `earlier`'s nodes over: its undone effects become ours to wait
    /// for, and it stops sweeping.
    fn absorb(&mut self, earlier: RevokeId, revoke: RevokeId) {
        let earlier = self.final_absorber(earlier);
        if earlier == revoke || self.revocations.get(earlier.0).is_none() {
            return;
        }
        let record = self.revocation_mut(earlier);
        let moved = record.outstanding + u32::from(record.effects_in_flight > 0);
        record.outstanding = 0;
        record.absorbed_into = Some(revoke);
        self.revocation_mut(revoke).outstanding += moved;
    }

    fn final_absorber(&self, revoke: RevokeId) -> RevokeId {
        let mut current = revoke;
        while let Some(absorber) = self.revocations.get(current.0).and_then(|record| record.absorbed_into) {
            if self.revocations.get(absorber.0).is_none() {
                break;
            }
            current = absorber;
        }
        current
    }

    fn finish_root(&mut self, revoke: RevokeId, scope: RevokeScope, batch: &mut RemovedBatch) {
        let root = self.revocation_mut(revoke).root;
        match scope {
            RevokeScope::WithSelf => {
                batch.push(self.remove_node(root));
                self.revocation_mut(revoke).effects_in_flight += 1;
            }
            // The root stays marked until the revocation ends: while its
            // last effects are undone, a revoke from above must still find
            // (and absorb) this revocation through it.
            RevokeScope::Descendants => {}
        }
    }

    fn revocation_mut(&mut self, revoke: RevokeId) -> &mut Revocation {
        self.revocations.get_mut(revoke.0).expect("a revocation in progress")
    }
}
