//! `SharedCaps`: the database of one kernel behind its lock, with the two
//! long operations — revoke and space destruction — run a batch per lock
//! hold. Effects are undone by the caller's `undo` with the lock released
//! (unmapping sends TLB shootdowns, which must never wait behind a
//! spinlock), and a revoke returns only once its revocation is complete.
//!
//! **Lock order.** The database lock is at [`CAPS_LEVEL`] (6): above the
//! sync layer (5), whose condition variable it waits on, and the threads
//! layer. While holding it this layer takes no other lock; `undo` runs
//! without it.

use spinlock::{Level, SpinLock, SpinLockGuard, TicketLock};
use sync::{Blocking, Condvar, Generation};

use crate::{
    CapDatabase, CapError, Removed, RemovedBatch, RevokeScope, Slot, SpaceId, SweepStatus,
    TeardownStatus,
};
use crate::revoke::RevokeStart;

/// The level of the database lock.
pub const CAPS_LEVEL: Level = Level::new(6);

type DatabaseLock<B> =
    SpinLock<CapDatabase, TicketLock, <B as Blocking>::LockPolicy, <B as Blocking>::LockLevels>;
type DatabaseGuard<'a, B> = SpinLockGuard<
    'a,
    CapDatabase,
    TicketLock,
    <B as Blocking>::LockPolicy,
    <B as Blocking>::LockLevels,
>;

/// What a completed revoke did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RevokeReport {
    /// Capabilities this call removed (0 when another revocation covered
    /// the subtree and this call waited for it).
    pub removed: u64,
}

/// One kernel's capability database, shared by its CPUs.
pub struct SharedCaps<B: Blocking> {
    database: DatabaseLock<B>,
    revocations_done: Condvar<B>,
    /// The database's count of capabilities taken out of use
    /// ([`CapDatabase::withdrawals`]), published at every release of the
    /// lock: a cache of what a slot holds is good while it has not moved
    /// (`sync::GenerationCache`; the kernel's descriptor cache).
    withdrawn: Generation,
}

impl<B: Blocking> SharedCaps<B> {
    /// An empty database for kernel group `group` (usable in a static).
    #[cfg(not(loom))]
    pub const fn new(group: u16) -> Self {
        Self { database: SpinLock::new(CAPS_LEVEL, CapDatabase::new(group)), revocations_done: Condvar::new(), withdrawn: Generation::new() }
    }

    /// An empty database for kernel group `group`.
    #[cfg(loom)]
    pub fn new(group: u16) -> Self {
        Self { database: SpinLock::new(CAPS_LEVEL, CapDatabase::new(group)), revocations_done: Condvar::new(), withdrawn: Generation::new() }
    }

    /// Runs `operation` on the database under its lock: for every short
    /// operation (create, access, derive, delegate, obtain, drop).
    pub fn with<R>(&self, operation: impl FnOnce(&mut CapDatabase) -> R) -> R {
        let mut guard = self.lock();
        let result = operation(&mut guard);
        self.publish(&guard);
        result
    }

    /// Capabilities taken out of use so far, as of the last release of
    /// the lock: read before a look at a slot whose result is kept, the
    /// look is still good while this has not moved.
    pub fn withdrawals(&self) -> &Generation {
        &self.withdrawn
    }

    /// Publishes the count, before the lock is let go.
    fn publish(&self, guard: &DatabaseGuard<'_, B>) {
        self.withdrawn.follow(guard.withdrawals());
    }

    /// Revokes the capability in `slot` of `space` (or only what was derived
    /// from it), calling `undo` for every removed capability with the lock
    /// released. Returns once every descendant is gone everywhere and every
    /// `undo` has returned — including those of revocations it absorbed or
    /// waited for.
    pub fn revoke(
        &self,
        space: SpaceId,
        slot: Slot,
        scope: RevokeScope,
        mut undo: impl FnMut(&Removed),
    ) -> Result<RevokeReport, CapError> {
        let mut guard = self.lock();
        let started = guard.begin_revoke(space, slot, scope);
        self.publish(&guard);
        let revoke = match started? {
            RevokeStart::WaitFor(other) => {
                let _guard = self.revocations_done.wait_while(guard, &self.database, |database| {
                    !database.revoke_complete(other)
                });
                return Ok(RevokeReport::default());
            }
            RevokeStart::Started(revoke) => revoke,
        };
        let mut report = RevokeReport::default();
        loop {
            let mut batch = RemovedBatch::new();
            let status = guard.sweep(revoke, &mut batch);
            self.publish(&guard);
            drop(guard);
            batch.iter().for_each(&mut undo);
            report.removed += batch.len() as u64;
            guard = self.lock();
            guard.effects_done(revoke, batch.len());
            if status != SweepStatus::More {
                break;
            }
        }
        self.revocations_done.broadcast();
        let mut guard = self.revocations_done.wait_while(guard, &self.database, |database| {
            !database.revoke_complete(revoke)
        });
        let released_root = guard.end_revoke(revoke);
        self.publish(&guard);
        drop(guard);
        if let Some(root) = released_root {
            undo(&root);
            report.removed += 1;
        }
        self.revocations_done.broadcast();
        Ok(report)
    }

    /// Destroys `space`: drops every capability it holds, calling `undo`
    /// for each with the lock released.
    pub fn destroy_space(&self, space: SpaceId, mut undo: impl FnMut(&Removed)) -> Result<(), CapError> {
        loop {
            let mut batch = RemovedBatch::new();
            let status = self.with(|database| database.destroy_space_step(space, &mut batch))?;
            batch.iter().for_each(&mut undo);
            if status == TeardownStatus::Done {
                return Ok(());
            }
        }
    }

    fn lock(&self) -> DatabaseGuard<'_, B> {
        B::lock(&self.database)
    }
}
