//! `Condvar`: a starvation-free FIFO condition variable (mC2 §4, after
//! Anderson and Dahlin's condition queues, Fig. 5.14).
//!
//! Refines [`spec::CondvarSpec`](crate::spec::CondvarSpec): waiters queue
//! in arrival order, `signal` wakes exactly the longest waiter, `broadcast`
//! all of them, and a signal with no waiter does nothing. Mesa condition
//! variables let a waiter be overtaken forever; here each waiter has its
//! own place in the queue and is woken only through it.
//!
//! **Lock order.** The user's lock `U` (passed to [`Condvar::wait`]) is held
//! while the waiter joins the condvar's queue, whose internal lock is at
//! [`SYNC_LEVEL`](crate::SYNC_LEVEL) (5). So `U` must be at level 6 or
//! above, which debug builds check. `signal` and `broadcast` may be called
//! with or without `U` held; they take the queue lock and then, after
//! releasing it, the threads layer's locks (level 4) to wake.

use spinlock::{GuardPolicy, HeldLevels, RawLock, SpinLock, SpinLockGuard};

use crate::{Blocking, Slept, WaitQueue};

/// A starvation-free FIFO condition variable for threads blocking through
/// `B`.
pub struct Condvar<B: Blocking> {
    waiters: WaitQueue<B>,
}

impl<B: Blocking> Condvar<B> {
    loom_const_fn! {
        /// A condition variable nobody waits on.
        pub fn new() -> Self {
            Self { waiters: WaitQueue::new() }
        }
    }

    /// Atomically joins the waiters and releases `guard`, the guard of
    /// `lock`; sleeps until a `signal` or `broadcast` picks this waiter;
    /// then re-acquires `lock` and returns its guard.
    ///
    /// "Atomically": the caller joins the queue while still holding `lock`,
    /// so any signal issued after that — in particular by a thread that
    /// takes `lock` after us and changes the condition — picks us or a
    /// waiter that came earlier; none is lost. Returns only when picked
    /// (never spuriously), but the condition may have changed again by the
    /// time `lock` is re-acquired: re-check it, or use
    /// [`wait_while`](Self::wait_while).
    ///
    /// `guard` must be a guard of `lock` (the lock is taken again through
    /// `lock`); `lock`'s level must be above [`SYNC_LEVEL`](crate::SYNC_LEVEL).
    pub fn wait<'a, T, L: RawLock, G: GuardPolicy, H: HeldLevels>(
        &self,
        guard: SpinLockGuard<'a, T, L, G, H>,
        lock: &'a SpinLock<T, L, G, H>,
    ) -> SpinLockGuard<'a, T, L, G, H> {
        self.waiters.sleep_on(|| drop(guard));
        lock.lock()
    }

    /// As [`wait`](Self::wait), but gives up once `interrupted` holds (a
    /// signal is pending for the caller, who was unparked by its sender):
    /// re-acquires `lock` and says how the wait ended. A waiter a `signal`
    /// picked returns [`Slept::Woken`] even if also interrupted, so no
    /// signal is spent on a waiter that gave up; re-check the condition
    /// before giving up.
    pub fn wait_interruptible<'a, T, L: RawLock, G: GuardPolicy, H: HeldLevels>(
        &self,
        guard: SpinLockGuard<'a, T, L, G, H>,
        lock: &'a SpinLock<T, L, G, H>,
        interrupted: &dyn Fn() -> bool,
    ) -> (SpinLockGuard<'a, T, L, G, H>, Slept) {
        let slept = self.waiters.sleep_on_interruptible(|| drop(guard), interrupted);
        (lock.lock(), slept)
    }

    /// Waits (as [`wait`](Self::wait)) as long as `condition` holds on the
    /// data; returns the guard once it does not.
    pub fn wait_while<'a, T, L: RawLock, G: GuardPolicy, H: HeldLevels>(
        &self,
        mut guard: SpinLockGuard<'a, T, L, G, H>,
        lock: &'a SpinLock<T, L, G, H>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) -> SpinLockGuard<'a, T, L, G, H> {
        while condition(&mut guard) {
            guard = self.wait(guard, lock);
        }
        guard
    }

    /// Wakes the longest waiter; false when nobody waits (the signal is
    /// then lost, as for any condition variable).
    pub fn signal(&self) -> bool {
        self.waiters.wake_one()
    }

    /// Wakes every waiter, oldest first; returns how many.
    pub fn broadcast(&self) -> usize {
        self.waiters.wake_all()
    }

    /// How many threads wait now: a snapshot, for tests and statistics.
    pub fn waiters(&self) -> usize {
        self.waiters.sleepers()
    }
}

impl<B: Blocking> Default for Condvar<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Blocking> core::fmt::Debug for Condvar<B> {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        formatter
            .debug_struct("Condvar")
            .field("waiters", &self.waiters())
            .finish()
    }
}
