//! Charging and releasing pages: the lock-free path every CPU takes, and
//! the locked path for the rare rest (a container whose held pages are
//! changing, a destroyed one). Must never let usage pass a quota, nor a
//! release take pages a container did not charge.

use crate::counters::{FastRelease, HeldChange};
use crate::shape::Found;
use crate::{ContainerId, Containers, QuotaError, TreeLocking};

impl<L: TreeLocking> Containers<L> {
    /// Charges `pages` to `id`: its usage grows by `pages` unless that
    /// would pass its quota. Takes no lock; racing charges and child
    /// creations never take usage past the quota together. Refines
    /// `ContainersSpec::charge`.
    ///
    /// Errors, changing nothing: [`QuotaError::Exhausted`] when fewer than
    /// `pages` are available; [`QuotaError::NoSuchContainer`] unless `id`
    /// is alive.
    pub fn charge(&self, id: ContainerId, pages: u64) -> Result<(), QuotaError> {
        self.counters_of(id)?.charge(id.generation(), pages)
    }

    /// Gives back `pages` charged to `id` earlier.
    ///
    /// For a live container this takes no lock (unless one of its children
    /// is being created or destroyed at that moment). For a destroyed one,
    /// whose charged pages now count in its parent's usage, the release is
    /// forwarded: it is taken off what the dead container still has charged
    /// and off the usage of its nearest live ancestor. Refines
    /// `ContainersSpec::release`.
    ///
    /// Errors, changing nothing: [`QuotaError::OverRelease`] when `id` has
    /// fewer than `pages` charged (its own charges: pages held for its
    /// children cannot be released through it); [`QuotaError::NoSuchContainer`]
    /// when `id` was never handed out.
    pub fn release(&self, id: ContainerId, pages: u64) -> Result<(), QuotaError> {
        match self.counters_of(id)?.try_release(id.generation(), pages) {
            FastRelease::Done => Ok(()),
            FastRelease::Refused(refusal) => Err(refusal),
            FastRelease::NeedsLock => self.release_locked(id, pages),
        }
    }

    /// [`release`](Self::release) under the tree lock: no held pages change
    /// and no life begins or ends meanwhile.
    fn release_locked(&self, id: ContainerId, pages: u64) -> Result<(), QuotaError> {
        let mut shape = self.lock_tree();
        match shape.find(id) {
            Found::Live(_) => match self.counters_of(id)?.try_release(id.generation(), pages) {
                FastRelease::Done => Ok(()),
                FastRelease::Refused(refusal) => Err(refusal),
                FastRelease::NeedsLock => {
                    debug_assert!(false, "{id} is reshaping outside the tree lock");
                    Err(QuotaError::NoSuchContainer)
                }
            },
            Found::Tombstone(_) if pages == 0 => Ok(()),
            Found::Tombstone(_) => {
                let ancestor = shape.forward_release(id, pages)?;
                self.counters_of(ancestor)?
                    .change_held(HeldChange::Shrink(pages))
            }
            Found::Gone if pages == 0 => Ok(()),
            Found::Gone => Err(QuotaError::OverRelease {
                asked: pages,
                charged: 0,
            }),
            Found::Unknown => Err(QuotaError::NoSuchContainer),
        }
    }
}
