//! The tree lock for std threads: host tests, and host programs (feature
//! `std`). Must never be used in the kernel, whose lock holders are never
//! descheduled and whose waiters must be served in FIFO order.

use spinlock::{NoGuard, ThreadLevels};

use crate::tree_lock::{TreeGuard, TreeLock};
use crate::TreeLocking;

/// Switches nothing off, checks the lock order per host thread, and yields
/// while someone else holds the tree lock (see [`TreeLocking::lock`]).
#[derive(Debug)]
pub struct StdLocking;

impl TreeLocking for StdLocking {
    type Policy = NoGuard;
    type Levels = ThreadLevels;

    fn lock<T>(lock: &TreeLock<T, Self>) -> TreeGuard<'_, T, Self> {
        loop {
            if let Some(guard) = lock.try_lock() {
                return guard;
            }
            std::thread::yield_now();
        }
    }
}
