//! The idle hand-off of one CPU: its idle loop says "I am about to halt",
//! a CPU that queued a thread there decides whether to send a wake IPI.
//!
//! A Dekker pair, so both sides use sequentially consistent accesses:
//!
//! - idle loop: [`IdleFlag::announce`], then look at its queues (under their
//!   lock), halt only if they are empty;
//! - waker: push on the PendQ (under the same lock), then
//!   [`IdleFlag::must_notify`].
//!
//! Either the idle loop's look sees the push, or the waker sees the flag
//! and sends the IPI (which ends the halt, or is pending when it starts):
//! never neither. Checked by loom in `tests/loom_idle.rs`.

use crate::atomics::{AtomicBool, Ordering};

/// Whether a CPU sits in its idle loop with nothing to run.
#[derive(Debug)]
pub struct IdleFlag {
    idle: AtomicBool,
}

impl Default for IdleFlag {
    fn default() -> Self {
        Self::new()
    }
}

impl IdleFlag {
    loom_const_fn! {
        pub fn new() -> Self {
            Self { idle: AtomicBool::new(false) }
        }
    }

    /// The idle loop, before it looks at its queues.
    pub fn announce(&self) {
        // SeqCst: one half of the Dekker pair (see the module comment).
        self.idle.store(true, Ordering::SeqCst);
    }

    /// The idle loop, once it has work or has woken.
    pub fn withdraw(&self) {
        // SeqCst: keeps the flag's stores in one order with the waker's loads.
        self.idle.store(false, Ordering::SeqCst);
    }

    /// The waker, after its push: true when it must send the wake IPI.
    pub fn must_notify(&self) -> bool {
        // SeqCst: the other half of the Dekker pair.
        self.idle.load(Ordering::SeqCst)
    }

    /// A snapshot, for reports.
    pub fn is_set(&self) -> bool {
        self.idle.load(Ordering::Relaxed)
    }
}
