//! Blocking for std threads: host tests, and host programs (feature `std`).

use spinlock::{NoGuard, ThreadLevels};

use crate::blocking::{SyncGuard, SyncLock};
use crate::Blocking;

/// `std::thread`'s park and unpark. Locks switch nothing off, check the
/// lock order per host thread, and yield while taken by someone else.
#[derive(Debug)]
pub struct StdBlocking;

impl Blocking for StdBlocking {
    type Thread = std::thread::Thread;
    type LockPolicy = NoGuard;
    type LockLevels = ThreadLevels;

    fn current() -> Self::Thread {
        std::thread::current()
    }

    fn park() {
        std::thread::park();
    }

    fn unpark(thread: &Self::Thread) {
        thread.unpark();
    }

    fn lock<T>(lock: &SyncLock<T, Self>) -> SyncGuard<'_, T, Self> {
        lock_yielding::<T, Self>(lock)
    }
}

/// Takes `lock`, yielding the CPU while someone else holds it (see
/// [`Blocking::lock`]).
pub(crate) fn lock_yielding<T, B: Blocking>(lock: &SyncLock<T, B>) -> SyncGuard<'_, T, B> {
    loop {
        if let Some(guard) = lock.try_lock() {
            return guard;
        }
        std::thread::yield_now();
    }
}
