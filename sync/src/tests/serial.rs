//! Runs the multi-threaded tests one at a time.
//!
//! The objects' spinlocks are FIFO ticket locks, which (like the kernel)
//! assume a lock holder is never descheduled. On a host with more runnable
//! threads than cores, the test threads of several tests at once break
//! that: the next ticket holder is often off-CPU and everyone behind it
//! spins out its time slice. Alone, each test takes well under a second;
//! overlapping, minutes.

use std::sync::{Mutex, MutexGuard};

static TURN: Mutex<()> = Mutex::new(());

/// Holds the turn until dropped (a failed test does not block the others).
pub(crate) fn one_at_a_time() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
