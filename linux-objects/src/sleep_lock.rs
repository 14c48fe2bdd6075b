//! A lock whose holder may sleep: for data whose operations wait for a
//! device (a file tree with a disk mounted in it, a file offset held while
//! the disk is read).
//!
//! The data lives in a spinlock as `Some(value)`; the holder takes it out
//! (leaving `None`), releases the spinlock, works on its own copy with
//! interrupts on and may park, then puts it back and signals the next
//! waiter. A thread that finds `None` waits on a FIFO condition variable
//! (`sync::Condvar`, loom-checked), so waiters are served in arrival order
//! and none is lost: a waiter joins the queue while still holding the
//! spinlock, and the holder puts the value back under that same spinlock
//! before it signals.
//!
//! **Lock order**: the inner spinlock is held only for the moment of
//! taking or putting back, at the level given (above `sync`'s); nothing is
//! held while the operation runs, so an operation may take any lock, sleep
//! or do I/O — but not the same sleeping lock again (that would wait for
//! itself), and not a sleeping lock taken before this one elsewhere.
//! Callers must not hold a spinlock (they may sleep).

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking};

/// Data behind a lock whose holder may sleep.
pub struct SleepLock<T> {
    slot: KernelTicketLock<Option<T>>,
    released: Condvar<KernelBlocking>,
}

impl<T> SleepLock<T> {
    /// `value` behind a lock whose inner spinlock sits at `level`.
    pub const fn new(level: Level, value: T) -> Self {
        Self { slot: KernelTicketLock::new(level, Some(value)), released: Condvar::new() }
    }

    /// Runs `operation` on the data, waiting (asleep) for the holder first.
    pub fn with<R>(&self, operation: impl FnOnce(&mut T) -> R) -> R {
        let mut value = self.take();
        let result = operation(&mut value);
        self.put_back(value);
        result
    }

    fn take(&self) -> T {
        let mut slot = self.slot.lock();
        loop {
            if let Some(value) = slot.take() {
                return value;
            }
            slot = self.released.wait(slot, &self.slot);
        }
    }

    fn put_back(&self, value: T) {
        *self.slot.lock() = Some(value);
        self.released.signal();
    }
}
