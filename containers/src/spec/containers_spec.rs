//! `ContainersSpec`: the quota tree as an atomic model. Every operation is
//! one step on plain data, with the same arguments, results and refusals
//! as [`Containers`](crate::Containers)' (a refused operation changes
//! nothing). It must never depend on how the implementation is built,
//! except where ids are observable: a new container takes the lowest slot
//! that holds neither a live container nor pages still charged to a dead
//! one, in the next generation of that slot.

use alloc::collections::BTreeMap;

use super::Record;
use crate::{ContainerId, Destroyed, QuotaError, MAX_CAPACITY, MAX_PAGES};

/// The specification of the container tree.
#[derive(Clone, Debug)]
pub struct ContainersSpec {
    capacity: usize,
    root: ContainerId,
    records: BTreeMap<ContainerId, Record>,
}

impl ContainersSpec {
    /// A tree whose root, id slot 0 generation 0, holds `root_quota` pages,
    /// with room for `capacity` containers at once.
    ///
    /// Errors: [`QuotaError::QuotaTooLarge`] above [`MAX_PAGES`];
    /// [`QuotaError::CapacityOutOfRange`] for 0 or above [`MAX_CAPACITY`].
    pub fn new(root_quota: u64, capacity: usize) -> Result<Self, QuotaError> {
        if root_quota > MAX_PAGES {
            return Err(QuotaError::QuotaTooLarge { asked: root_quota });
        }
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(QuotaError::CapacityOutOfRange { asked: capacity });
        }
        let root = ContainerId::from_parts(0, 0);
        let records = BTreeMap::from([(root, Record::new(None, root_quota))]);
        Ok(Self {
            capacity,
            root,
            records,
        })
    }

    /// The root.
    pub fn root(&self) -> ContainerId {
        self.root
    }

    /// Every id ever handed out, with its record, in id order.
    pub fn records(&self) -> impl Iterator<Item = (ContainerId, &Record)> {
        self.records.iter().map(|(id, record)| (*id, record))
    }

    /// The record of `id`, alive or dead.
    pub fn record(&self, id: ContainerId) -> Option<&Record> {
        self.records.get(&id)
    }

    /// Creates a child of `parent` with `quota` pages carved out of the
    /// parent's.
    pub fn create_child(
        &mut self,
        parent: ContainerId,
        quota: u64,
    ) -> Result<ContainerId, QuotaError> {
        let available = self.live(parent)?.available();
        let child = self.vacant_id().ok_or(QuotaError::TooManyContainers)?;
        if quota > available {
            return Err(QuotaError::Exhausted {
                asked: quota,
                available,
            });
        }
        let record = self.live_mut(parent)?;
        record.usage += quota;
        record.children.insert(child);
        self.records.insert(child, Record::new(Some(parent), quota));
        Ok(child)
    }

    /// Charges `pages` to `id`.
    pub fn charge(&mut self, id: ContainerId, pages: u64) -> Result<(), QuotaError> {
        let record = self.live_mut(id)?;
        let available = record.available();
        if pages > available {
            return Err(QuotaError::Exhausted {
                asked: pages,
                available,
            });
        }
        record.usage += pages;
        record.charged += pages;
        Ok(())
    }

    /// Releases `pages` charged to `id`; for a dead `id`, also from the
    /// usage of every ancestor up to and including the nearest live one.
    pub fn release(&mut self, id: ContainerId, pages: u64) -> Result<(), QuotaError> {
        let record = self
            .records
            .get_mut(&id)
            .ok_or(QuotaError::NoSuchContainer)?;
        if pages > record.charged {
            return Err(QuotaError::OverRelease {
                asked: pages,
                charged: record.charged,
            });
        }
        record.charged -= pages;
        record.usage -= pages;
        // A dead container's pages count in its ancestors' usage, up to
        // and including the nearest live one (the root never dies).
        let (mut alive, mut parent) = (record.alive, record.parent);
        while let (false, Some(next)) = (alive, parent) {
            let ancestor = self
                .records
                .get_mut(&next)
                .ok_or(QuotaError::NoSuchContainer)?;
            ancestor.usage -= pages;
            (alive, parent) = (ancestor.alive, ancestor.parent);
        }
        Ok(())
    }

    /// Destroys the leaf `id`, giving its unused quota back to its parent.
    pub fn destroy(&mut self, id: ContainerId) -> Result<Destroyed, QuotaError> {
        let record = self.live(id)?;
        let parent = record.parent.ok_or(QuotaError::CannotDestroyRoot)?;
        if !record.children.is_empty() {
            return Err(QuotaError::HasChildren);
        }
        let destroyed = Destroyed {
            returned: record.available(),
            still_charged: record.usage,
        };
        self.live_mut(id)?.alive = false;
        let parent = self.live_mut(parent)?;
        parent.usage -= destroyed.returned;
        parent.children.remove(&id);
        Ok(destroyed)
    }

    /// `id`'s usage.
    pub fn usage(&self, id: ContainerId) -> Result<u64, QuotaError> {
        Ok(self.live(id)?.usage)
    }

    /// `id`'s quota.
    pub fn quota(&self, id: ContainerId) -> Result<u64, QuotaError> {
        Ok(self.live(id)?.quota)
    }

    /// `id`'s available pages.
    pub fn available(&self, id: ContainerId) -> Result<u64, QuotaError> {
        Ok(self.live(id)?.available())
    }

    /// Pages `id` charged itself.
    pub fn charged(&self, id: ContainerId) -> Result<u64, QuotaError> {
        Ok(self.live(id)?.charged)
    }

    /// `id`'s parent.
    pub fn parent(&self, id: ContainerId) -> Result<Option<ContainerId>, QuotaError> {
        Ok(self.live(id)?.parent)
    }

    /// How many live children `id` has.
    pub fn children_count(&self, id: ContainerId) -> Result<usize, QuotaError> {
        Ok(self.live(id)?.children.len())
    }

    fn live(&self, id: ContainerId) -> Result<&Record, QuotaError> {
        self.records
            .get(&id)
            .filter(|record| record.alive)
            .ok_or(QuotaError::NoSuchContainer)
    }

    fn live_mut(&mut self, id: ContainerId) -> Result<&mut Record, QuotaError> {
        self.records
            .get_mut(&id)
            .filter(|record| record.alive)
            .ok_or(QuotaError::NoSuchContainer)
    }

    /// The id a new container gets: the lowest slot no record occupies and
    /// whose generations have not run out, in its next generation.
    fn vacant_id(&self) -> Option<ContainerId> {
        (0..self.capacity as u32).find_map(|slot| {
            let mut lives = self
                .records
                .range(ContainerId::from_parts(slot, 0)..=ContainerId::from_parts(slot, u32::MAX));
            let occupied = lives.clone().any(|(_, record)| record.occupies_slot());
            let generation = u32::try_from(lives.by_ref().count()).ok()?;
            (!occupied).then(|| ContainerId::from_parts(slot, generation))
        })
    }
}
