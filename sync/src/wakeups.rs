//! Threads to wake once an object's lock is released.
//!
//! Objects decide whom to wake while holding their lock, but wake them only
//! after releasing it: a woken thread's first act is to take that lock, and
//! it should not find it still held by its waker.

use crate::Blocking;

/// At most two threads to wake: mC2's `remove` signals the head of the
/// other side's queue and the next of its own (Fig. 10, lines 23 and 27),
/// and no object here wakes more from one critical section.
pub(crate) struct Wakeups<B: Blocking> {
    threads: [Option<B::Thread>; 2],
}

impl<B: Blocking> Wakeups<B> {
    pub(crate) fn new() -> Self {
        Self {
            threads: [None, None],
        }
    }

    /// Adds `thread`, if there is one, to those to wake.
    pub(crate) fn add(&mut self, thread: Option<&B::Thread>) {
        let Some(thread) = thread else { return };
        let free = self.threads.iter_mut().find(|slot| slot.is_none());
        let slot = free.expect("a critical section of this layer wakes at most two threads");
        *slot = Some(thread.clone());
    }

    /// Wakes them; call with no lock of this layer held.
    pub(crate) fn wake(self) {
        for thread in self.threads.iter().flatten() {
            B::unpark(thread);
        }
    }
}
