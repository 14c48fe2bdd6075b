//! The atomic spec of [`Condvar`](crate::Condvar) and
//! [`WaitQueue`](crate::WaitQueue).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::ThreadNumber;

/// A FIFO condition variable: the queue of its waiters, oldest first.
///
/// `wait` joins the queue (in the implementation: atomically with releasing
/// the user's lock); `signal` picks the head, `broadcast` everyone, in
/// order; a signal with nobody waiting changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CondvarSpec {
    waiters: VecDeque<ThreadNumber>,
}

/// A wait queue is a condition variable without the user's lock:
/// `sleep_on` is `wait`, `wake_one` is `signal`, `wake_all` is `broadcast`.
pub type WaitQueueSpec = CondvarSpec;

impl CondvarSpec {
    /// Nobody waits.
    pub const fn new() -> Self {
        Self {
            waiters: VecDeque::new(),
        }
    }

    /// `thread` starts waiting.
    pub fn wait(&mut self, thread: ThreadNumber) {
        self.waiters.push_back(thread);
    }

    /// The longest waiter, now woken.
    pub fn signal(&mut self) -> Option<ThreadNumber> {
        self.waiters.pop_front()
    }

    /// Every waiter, oldest first, now woken.
    pub fn broadcast(&mut self) -> Vec<ThreadNumber> {
        self.waiters.drain(..).collect()
    }

    /// `thread`, interrupted, gives up waiting: it leaves the queue and
    /// `true`; `false` (nothing changes) when a signal already picked it,
    /// which it then takes as woken.
    pub fn give_up(&mut self, thread: ThreadNumber) -> bool {
        match self.waiters.iter().position(|waiter| *waiter == thread) {
            Some(index) => {
                self.waiters.remove(index);
                true
            }
            None => false,
        }
    }

    /// The waiters, oldest first.
    pub fn waiters(&self) -> impl Iterator<Item = ThreadNumber> + '_ {
        self.waiters.iter().copied()
    }
}
