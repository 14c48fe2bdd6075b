//! The data of a [`BoundedQueue`](crate::BoundedQueue), under its lock:
//! mC2's `struct fifobbq` (Fig. 10, lines 1–6) with tickets that never wrap.

use alloc::collections::VecDeque;

use crate::Blocking;

/// Items in a ring, the ticket counters and the two queues of waiting
/// threads.
///
/// Invariants between critical sections (checked by `check_invariants` in
/// debug builds):
/// - `front <= next <= front + CAPACITY`; items `front..next` (numbered by
///   insertion) sit in slots `number % CAPACITY`, every other slot is empty;
/// - the inserters with tickets `next..insert_tickets` all wait, in ticket
///   order, on `inserters`; the one with ticket `next` is at its head (so
///   tickets below `next` are done). Removers likewise with `front`,
///   `remove_tickets` and `removers`.
///
/// Counters are `u64`: they never wrap in the life of a machine.
pub(crate) struct QueueState<T, B: Blocking, const CAPACITY: usize> {
    /// mC2's `T[MAX]`.
    slots: [Option<T>; CAPACITY],
    /// Items removed so far: the number of the next item to remove.
    front: u64,
    /// Items inserted so far: the number of the next item to insert.
    next: u64,
    /// mC2's `n_insrt`: tickets handed to inserters.
    insert_tickets: u64,
    /// mC2's `n_rmv`: tickets handed to removers.
    remove_tickets: u64,
    /// mC2's `insrtQ`: waiting inserters, oldest first.
    pub(crate) inserters: VecDeque<B::Thread>,
    /// mC2's `rmvQ`: waiting removers, oldest first.
    pub(crate) removers: VecDeque<B::Thread>,
}

impl<T, B: Blocking, const CAPACITY: usize> QueueState<T, B, CAPACITY> {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            const { assert!(CAPACITY > 0, "a bounded queue holds at least one item") };
            Self {
                slots: [const { None }; CAPACITY],
                front: 0,
                next: 0,
                insert_tickets: 0,
                remove_tickets: 0,
                inserters: VecDeque::new(),
                removers: VecDeque::new(),
            }
        }
    }

    /// `pos = q.n_insrt++`.
    pub(crate) fn take_insert_ticket(&mut self) -> u64 {
        let ticket = self.insert_tickets;
        self.insert_tickets += 1;
        ticket
    }

    /// `pos = q.n_rmv++` (line 11).
    pub(crate) fn take_remove_ticket(&mut self) -> u64 {
        let ticket = self.remove_tickets;
        self.remove_tickets += 1;
        ticket
    }

    /// The inserter holding `ticket` may go: it is first in line and there
    /// is room.
    pub(crate) fn may_insert(&self, ticket: u64) -> bool {
        self.next == ticket && !self.is_full()
    }

    /// The remover holding `ticket` may go: it is first in line and there
    /// is an item (the negation of the loop condition of line 14).
    pub(crate) fn may_remove(&self, ticket: u64) -> bool {
        self.front == ticket && !self.is_empty()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len() == CAPACITY
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.front == self.next
    }

    pub(crate) fn len(&self) -> usize {
        // Bounded by CAPACITY (first invariant), so the cast is exact.
        (self.next - self.front) as usize
    }

    /// `T[next % MAX] = item; next++`. The caller may insert.
    pub(crate) fn store(&mut self, item: T) {
        let slot = &mut self.slots[slot_of::<CAPACITY>(self.next)];
        debug_assert!(slot.is_none(), "inserting into a full slot");
        *slot = Some(item);
        self.next += 1;
    }

    /// `t = T[front % MAX]; front++` (lines 18–19). The caller may remove.
    pub(crate) fn take(&mut self) -> T {
        let slot = &mut self.slots[slot_of::<CAPACITY>(self.front)];
        let item = slot
            .take()
            .expect("items front..next are in their slots (QueueState invariant)");
        self.front += 1;
        item
    }

    /// Checks the invariants of the type comment (debug builds).
    pub(crate) fn check_invariants(&self) {
        debug_assert!(self.len() <= CAPACITY);
        debug_assert_eq!(self.inserters.len() as u64, self.insert_tickets - self.next);
        debug_assert_eq!(self.removers.len() as u64, self.remove_tickets - self.front);
    }
}

/// The slot of item number `number`.
fn slot_of<const CAPACITY: usize>(number: u64) -> usize {
    // The remainder is below CAPACITY, a usize, so the cast is exact.
    (number % CAPACITY as u64) as usize
}
