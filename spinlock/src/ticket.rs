//! The ticket lock (mC2 Fig. 7): take a ticket, wait until it is served.

use crate::raw::{sealed::Sealed, RawLock};
use crate::sync::{spin_hint, AtomicU32, Ordering};

/// A FIFO spinlock of two `u32` counters: `next_ticket`, the ticket the next
/// arrival takes, and `now_serving`, the ticket of the holder.
///
/// Invariant: `now_serving` ≤ `next_ticket` counted modulo 2³², the lock is
/// free iff they are equal, and the waiters hold the tickets in between. Both
/// counters wrap, and a waiter compares `now_serving != ticket`, never `<`:
/// mC2's first version spun on `now < t`, and a ticket taken at the wrap
/// (`t = 0` while `now = 2³² - 1`) entered at once, ahead of its turn.
/// Correct while fewer than 2³² CPUs wait, which always holds.
pub struct TicketLock {
    next_ticket: AtomicU32,
    now_serving: AtomicU32,
}

/// A place in a [`TicketLock`]'s queue: the holder of ticket `t` enters
/// when `now_serving` reaches `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(pub u32);

impl TicketLock {
    loom_const_fn! {
        /// An unlocked lock whose counters start at 0.
        pub fn new() -> Self {
            Self::starting_at(0)
        }
    }

    loom_const_fn! {
        /// An unlocked lock whose counters both start at `first`, so that a
        /// test can drive them across wrap-around (`first = u32::MAX - 1`).
        pub fn starting_at(first: u32) -> Self {
            Self { next_ticket: AtomicU32::new(first), now_serving: AtomicU32::new(first) }
        }
    }

    /// Step 1 of `lock`: join the queue. Refines [`FifoLock::arrive`].
    ///
    /// [`FifoLock::arrive`]: crate::spec::FifoLock::arrive
    #[inline(always)]
    pub fn take_ticket(&self) -> Ticket {
        // Relaxed: the ticket only fixes our place (the RMW makes it unique);
        // the data is synchronized by the Acquire load of `now_serving`.
        Ticket(self.next_ticket.fetch_add(1, Ordering::Relaxed))
    }

    /// Step 2 of `lock`, repeated: has our turn come? Once true, we hold the
    /// lock. Refines [`FifoLock::is_my_turn`].
    ///
    /// [`FifoLock::is_my_turn`]: crate::spec::FifoLock::is_my_turn
    #[inline(always)]
    pub fn is_my_turn(&self, ticket: Ticket) -> bool {
        // Acquire: pairs with the Release in `release`, so the previous
        // holder's writes to the data are visible to us.
        // Equality, never `<`: only equality survives wrap-around.
        self.now_serving.load(Ordering::Acquire) == ticket.0
    }

    /// Hands the lock to the next ticket. Only the holder of `ticket` may
    /// call it. Refines [`FifoLock::release`].
    ///
    /// [`FifoLock::release`]: crate::spec::FifoLock::release
    #[inline(always)]
    pub fn release(&self, ticket: Ticket) {
        // A plain store, no RMW: only the holder writes `now_serving`, and it
        // equals the holder's ticket. Release: publishes our writes to the
        // data to the next holder's Acquire load.
        self.now_serving
            .store(ticket.0.wrapping_add(1), Ordering::Release);
    }
}

impl Default for TicketLock {
    fn default() -> Self {
        Self::new()
    }
}

impl Sealed for TicketLock {}

impl RawLock for TicketLock {
    type Token = Ticket;

    #[cfg(not(loom))]
    const UNLOCKED: Self = Self::new();

    #[cfg(loom)]
    fn unlocked() -> Self {
        Self::new()
    }

    #[inline(always)]
    fn lock(&self) -> Ticket {
        let ticket = self.take_ticket();
        while !self.is_my_turn(ticket) {
            spin_hint();
        }
        ticket
    }

    /// Refines [`FifoLock::try_lock`](crate::spec::FifoLock::try_lock).
    #[inline(always)]
    fn try_lock(&self) -> Option<Ticket> {
        // Acquire: if the lock is free, this value was stored by the last
        // release, whose writes we must see once we take it.
        let serving = self.now_serving.load(Ordering::Acquire);
        // The lock is free iff nobody took ticket `serving` yet; claiming it
        // is atomic with that check. Relaxed: the Acquire above already
        // synchronized with the last holder; a stale `serving` only fails.
        self.next_ticket
            .compare_exchange(
                serving,
                serving.wrapping_add(1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .ok()
            .map(Ticket)
    }

    #[inline(always)]
    fn unlock(&self, ticket: Ticket) {
        self.release(ticket);
    }

    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for assertions and statistics; orders nothing.
        let serving = self.now_serving.load(Ordering::Relaxed);
        self.next_ticket.load(Ordering::Relaxed) != serving
    }
}
