//! A lock whose holder may sleep: for data whose operations wait for a
//! device (a file tree with a disk mounted in it, a file offset held while
//! the disk is read).
//!
//! The data lives in a spinlock as `Some(value)`; the holder takes it out
//! (leaving `None`), releases the spinlock, works on it with interrupts on
//! and may park, then puts it back and signals one waiter. A thread that
//! finds `None` waits on the FIFO [`Condvar`], joining its queue while it
//! still holds the spinlock (after a short spin that looks again: a holder
//! on another CPU is usually done by then); the holder puts the value back under that same
//! spinlock before it signals, so no waiter sleeps through a release (loom:
//! `tests/loom_sleep_lock.rs`). A newcomer may take a value put back before
//! a woken waiter runs (no strict hand-off); every release signals again,
//! so the waiter is woken by a later one. The spinlock also counts the
//! threads waiting for the value (each counts itself under it before it
//! joins the queue, and uncounts itself once it has the spinlock back), so
//! a release with nobody waiting skips the condition variable's lock.
//!
//! **Lock order**: the inner spinlock sits at the level its owner gives,
//! which must be above [`SYNC_LEVEL`](crate::SYNC_LEVEL) (the condition
//! variable's lock is taken while it is held). Nothing is held while the
//! operation runs, so an operation may take any lock, sleep or do I/O —
//! but not the same sleep lock again (it would wait for itself). Callers
//! must not hold a spinlock (they may sleep).
//!
//! Must never lose the value (an operation that panics stops the kernel)
//! or a release.

use spinlock::{Level, SpinLock, TicketLock};

use crate::blocking::Blocking;
use crate::Condvar;

/// Looks at the value before a thread that finds it taken sleeps (one
/// under loom, whose models explore every turn of a spin).
const SPINS_BEFORE_SLEEP: u32 = if cfg!(loom) { 1 } else { 200 };

/// Data behind a lock whose holder may sleep.
pub struct SleepLock<T, B: Blocking> {
    /// The value (`None` while held) and how many threads wait for it.
    slot: SpinLock<(Option<T>, usize), TicketLock, B::LockPolicy, B::LockLevels>,
    released: Condvar<B>,
}

impl<T, B: Blocking> SleepLock<T, B> {
    loom_const_fn! {
        /// `value` behind a lock whose inner spinlock sits at `level`
        /// (above the sync layer's).
        pub fn new(level: Level, value: T) -> Self {
            Self { slot: SpinLock::new(level, (Some(value), 0)), released: Condvar::new() }
        }
    }

    /// Runs `operation` on the data, waiting (asleep) for the holder first.
    pub fn with<R>(&self, operation: impl FnOnce(&mut T) -> R) -> R {
        let mut value = self.take();
        let result = operation(&mut value);
        self.put_back(value);
        result
    }

    fn take(&self) -> T {
        // A short spin first: a holder on another CPU is usually done
        // within it, and sleeping costs a wake-up (an IPI and a switch)
        // while the holder takes the value back at once, so two CPUs
        // opening files convoyed at a seventh of one CPU's rate.
        for _ in 0..SPINS_BEFORE_SLEEP {
            if let Some(value) = self.slot.lock().0.take() {
                return value;
            }
            spinlock::spin_hint();
        }
        let mut slot = self.slot.lock();
        loop {
            if let Some(value) = slot.0.take() {
                return value;
            }
            slot.1 += 1;
            slot = self.released.wait(slot, &self.slot);
            slot.1 -= 1;
        }
    }

    fn put_back(&self, value: T) {
        let waiting = {
            let mut slot = self.slot.lock();
            slot.0 = Some(value);
            slot.1 > 0
        };
        if waiting {
            self.released.signal();
        }
    }
}
