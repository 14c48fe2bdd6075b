//! Changes of the tree's shape: creating and destroying containers, under
//! the tree lock. Each checks everything that can fail first and changes
//! nothing when it refuses; it must never leave a parent's held pages out
//! of step with its children.

use crate::counters::HeldChange;
use crate::shape::Tombstone;
use crate::{ContainerId, Containers, QuotaError, TreeLocking};

/// What destroying a container did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Destroyed {
    /// Pages of its quota it never used, given back to its parent: quota
    /// minus usage at the moment it died.
    pub returned: u64,
    /// Pages still charged to it (by itself or its destroyed children).
    /// They stay in its parent's usage until released through the dead id.
    pub still_charged: u64,
}

impl<L: TreeLocking> Containers<L> {
    /// Creates a child of `parent` with `quota` pages, carved out of the
    /// parent's: the parent's usage grows by `quota` (its available pages
    /// drop by as much) in one compare-and-swap that racing charges on the
    /// parent cannot oversubscribe. Refines `ContainersSpec::create_child`.
    ///
    /// Errors, in this order, changing nothing:
    /// [`QuotaError::NoSuchContainer`] unless `parent` is alive;
    /// [`QuotaError::TooManyContainers`] when no slot is free;
    /// [`QuotaError::Exhausted`] when the parent has fewer than `quota`
    /// pages available.
    pub fn create_child(&self, parent: ContainerId, quota: u64) -> Result<ContainerId, QuotaError> {
        let mut shape = self.lock_tree();
        shape.live(parent)?;
        let slot = shape.vacant_slot().ok_or(QuotaError::TooManyContainers)?;
        self.counters_of(parent)?
            .change_held(HeldChange::Grow(quota))?;
        shape.child_joined(parent);
        let child = shape.occupy(slot, Some(parent));
        self.counters[slot].begin_life(child.generation(), quota);
        Ok(child)
    }

    /// Destroys the leaf `id`: the unused part of its quota (quota minus
    /// usage) goes back to its parent. Pages it still has charged stay
    /// charged, counted in the parent's usage as held for the dead child;
    /// a tombstone keeps the parent link and these counts until they are
    /// released through `id` (see [`release`](Self::release)), and then
    /// its slot is reused. Charges on `id` fail from now on. Refines
    /// `ContainersSpec::destroy`.
    ///
    /// Errors, in this order, changing nothing:
    /// [`QuotaError::NoSuchContainer`] unless `id` is alive;
    /// [`QuotaError::CannotDestroyRoot`]; [`QuotaError::HasChildren`] while
    /// it has live children.
    pub fn destroy(&self, id: ContainerId) -> Result<Destroyed, QuotaError> {
        let mut shape = self.lock_tree();
        let node = shape.live(id)?;
        let parent = node.parent.ok_or(QuotaError::CannotDestroyRoot)?;
        if node.children > 0 {
            return Err(QuotaError::HasChildren);
        }
        let (counters, parent_counters) = (self.counters_of(id)?, self.counters_of(parent)?);
        let quota = counters.quota();
        let (usage, held) = counters.end_life();
        let returned = quota.saturating_sub(usage);
        parent_counters.change_held(HeldChange::Shrink(returned))?;
        shape.child_left(parent);
        let charged = usage.saturating_sub(held);
        shape.bury(
            id,
            Tombstone {
                parent,
                charged,
                held,
            },
        );
        Ok(Destroyed {
            returned,
            still_charged: usage,
        })
    }
}
