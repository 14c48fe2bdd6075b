//! `WaitQueue`: mC2's sleep queue, a FIFO of parked threads. The building
//! block of [`Condvar`](crate::Condvar).
//!
//! Refines [`spec::WaitQueueSpec`](crate::spec::WaitQueueSpec): sleepers
//! are woken in arrival order, and a wake-up that finds no sleeper is lost
//! (a wait queue, unlike a semaphore, has no memory).

use alloc::collections::VecDeque;

use crate::blocking::{sync_lock, SyncLock};
use crate::Blocking;

/// A FIFO of sleeping threads.
///
/// Each arriving sleeper draws a ticket; the queue keeps the threads in
/// ticket order and a boundary, `woken_below`, under which every ticket has
/// been woken or withdrawn. A sleeper parks until its own ticket falls below
/// the boundary, so spurious returns from `park` change nothing, and a
/// wake-up given between joining the queue and parking leaves a permit that
/// makes the park return at once: no lost wake-up.
///
/// An interruptible sleeper (a system call a signal may end) also returns
/// when its `interrupted` test holds after a park: it withdraws its ticket
/// if no wake-up picked it yet, or else takes the wake-up, so a wake-up is
/// never spent on a sleeper that has gone.
pub struct WaitQueue<B: Blocking> {
    state: SyncLock<Sleepers<B>, B>,
}

/// A place in a [`WaitQueue`], drawn on joining it.
#[must_use = "a sleeper that never sleeps on its ticket swallows a wake-up meant for others"]
#[derive(Debug)]
pub(crate) struct Ticket(u64);

/// The queue's state, under its lock.
struct Sleepers<B: Blocking> {
    /// The ticket of the next arrival.
    next_ticket: u64,
    /// Every ticket below this one has been woken. Tickets are `u64`: at a
    /// billion sleeps a second they last five centuries, so they never wrap.
    woken_below: u64,
    /// The sleepers not yet woken, with their tickets, in ticket order
    /// (every ticket here is at or above `woken_below`).
    threads: VecDeque<(u64, B::Thread)>,
}

/// How an interruptible sleep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slept {
    /// A wake-up picked the sleeper (re-check the condition).
    Woken,
    /// `interrupted` held first; the sleeper left the queue unwoken.
    Interrupted,
}

impl<B: Blocking> Sleepers<B> {
    fn join(&mut self, thread: B::Thread) -> Ticket {
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        self.threads.push_back((ticket.0, thread));
        ticket
    }

    fn is_woken(&self, ticket: &Ticket) -> bool {
        ticket.0 < self.woken_below
    }

    fn wake_first(&mut self) -> Option<B::Thread> {
        let (ticket, thread) = self.threads.pop_front()?;
        // Every ticket below the first sleeper's was woken or withdrawn.
        self.woken_below = ticket + 1;
        Some(thread)
    }

    fn wake_everyone(&mut self) -> VecDeque<B::Thread> {
        self.woken_below = self.next_ticket;
        core::mem::take(&mut self.threads).into_iter().map(|(_, thread)| thread).collect()
    }

    /// Takes `ticket` out of the queue; false when a wake-up already
    /// picked it.
    fn withdraw(&mut self, ticket: &Ticket) -> bool {
        match self.threads.iter().position(|(held, _)| *held == ticket.0) {
            Some(index) => {
                self.threads.remove(index);
                true
            }
            None => false,
        }
    }
}

impl<B: Blocking> WaitQueue<B> {
    loom_const_fn! {
        /// An empty queue.
        pub fn new() -> Self {
            Self {
                state: sync_lock::<_, B>(Sleepers {
                    next_ticket: 0,
                    woken_below: 0,
                    threads: VecDeque::new(),
                }),
            }
        }
    }

    /// Puts the calling thread at the tail of the queue, calls `release`
    /// (e.g. dropping the guard of the lock that protects the condition the
    /// caller waits for), then sleeps until woken. Every wake-up given after
    /// the caller joined the queue counts, even one that comes before
    /// `release` returns.
    pub fn sleep_on(&self, release: impl FnOnce()) {
        let ticket = self.join();
        release();
        self.sleep(ticket);
    }

    /// As [`sleep_on`](Self::sleep_on), but also returns once `interrupted`
    /// holds after a return from `park` (whoever makes it hold unparks the
    /// sleeper, as a signal does) — having left the queue, unless a wake-up
    /// picked the sleeper first, which it then takes ([`Slept::Woken`]).
    pub fn sleep_on_interruptible(&self, release: impl FnOnce(), interrupted: &dyn Fn() -> bool) -> Slept {
        let ticket = self.join();
        release();
        loop {
            if self.is_woken(&ticket) {
                return Slept::Woken;
            }
            if interrupted() {
                return if B::lock(&self.state).withdraw(&ticket) { Slept::Interrupted } else { Slept::Woken };
            }
            B::park();
        }
    }

    /// Wakes the longest sleeper; false when nobody sleeps.
    pub fn wake_one(&self) -> bool {
        let woken = B::lock(&self.state).wake_first();
        let Some(thread) = woken else { return false };
        B::unpark(&thread);
        true
    }

    /// Wakes every sleeper, oldest first; returns how many.
    pub fn wake_all(&self) -> usize {
        let woken = B::lock(&self.state).wake_everyone();
        woken.iter().for_each(B::unpark);
        woken.len()
    }

    /// How many threads sleep here now: a snapshot, for tests and
    /// statistics.
    pub fn sleepers(&self) -> usize {
        B::lock(&self.state).threads.len()
    }

    /// Joins the queue: from now on a wake-up can pick the caller.
    pub(crate) fn join(&self) -> Ticket {
        let thread = B::current();
        B::lock(&self.state).join(thread)
    }

    /// Parks until `ticket` has been woken.
    pub(crate) fn sleep(&self, ticket: Ticket) {
        while !self.is_woken(&ticket) {
            B::park();
        }
    }

    fn is_woken(&self, ticket: &Ticket) -> bool {
        B::lock(&self.state).is_woken(ticket)
    }
}

impl<B: Blocking> Default for WaitQueue<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Blocking> core::fmt::Debug for WaitQueue<B> {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        formatter
            .debug_struct("WaitQueue")
            .field("sleepers", &self.sleepers())
            .finish()
    }
}
