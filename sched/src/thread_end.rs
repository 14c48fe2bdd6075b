//! The end of a thread, as plain atomics: what an exiting thread owes is
//! settled before anyone can see it exited.
//!
//! A thread that exits gives back its container charge (`THREAD_PAGES`)
//! and then says it has exited. A waiter that sees `has_exited` may destroy
//! the container at once, and the container refuses to go while anything
//! is charged to it; so the charge must be back first. The order was once
//! the other way round: at 8 vCPUs on 2 host cores the exiting vCPU lost
//! its host thread between the two steps, and the waiter found 19 pages
//! (one thread's charge) still charged (seen in the 200-round stress run).
//! `tests/loom_thread_end.rs` checks the order, and shows the old one fails.
//!
//! Must not publish the exit before the settling closure has returned.

use crate::atomics::{AtomicBool, Ordering};

/// Whether a thread has exited, published after its debts are settled.
#[derive(Debug)]
pub struct ThreadEnd {
    exited: AtomicBool,
}

impl Default for ThreadEnd {
    fn default() -> Self {
        Self::new()
    }
}

impl ThreadEnd {
    loom_const_fn! {
        pub fn new() -> Self {
            Self { exited: AtomicBool::new(false) }
        }
    }

    /// Runs `settle` (give back the container charge), then publishes the
    /// exit: whoever sees [`ThreadEnd::has_exited`] also sees what `settle`
    /// did (Release here, Acquire there).
    pub fn finish(&self, settle: impl FnOnce()) {
        settle();
        self.exited.store(true, Ordering::Release);
    }

    /// Whether the thread has exited (and settled).
    pub fn has_exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    /// The order this file replaced: publish, then settle. Only for the
    /// negative control of the loom model.
    #[cfg(all(test, loom))]
    pub(crate) fn finish_publishing_first(&self, settle: impl FnOnce()) {
        self.exited.store(true, Ordering::Release);
        settle();
    }
}
