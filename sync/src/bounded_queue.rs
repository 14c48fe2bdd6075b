//! `BoundedQueue`: mC2's FIFO bounded buffer queue (FIFOBBQ, Fig. 10), with
//! the paper's fix.
//!
//! Refines [`spec::BoundedQueueSpec`](crate::spec::BoundedQueueSpec): items
//! leave in the order they came in; inserters and removers that must wait
//! are served in arrival order (tickets `n_insrt` and `n_rmv`); no item is
//! lost or duplicated.
//!
//! **The fix.** The textbook version (Anderson and Dahlin, Fig. 5.14) takes
//! a waiter off its queue when signalling it. Then a waiter that wakes and
//! finds it may not go yet is on no queue, and nobody can signal it again:
//! all threads can end up asleep, or the remove queue unreachable. Here, as
//! in mC2, a waiter stays on its queue until it has *finished* its
//! operation; then it removes itself (line 24) and signals the next waiter
//! of its own queue (line 27), having signalled the head of the other queue
//! (line 23). The waiter a signal targets is always the queue's head, whose
//! ticket is the next to be served, so no signal is ever wasted on a thread
//! that then waits forever.
//!
//! Two refinements of Fig. 10, neither changing its behaviour: a thread
//! that need not wait does not join a queue (nobody could signal it while
//! it holds the lock anyway), and a thread is signalled only if the
//! condition it waits for now holds (the other signals would only make it
//! park again).

use crate::blocking::{park_until, sync_lock, Queued, SyncLock};
use crate::bounded_queue_state::QueueState;
use crate::wakeups::Wakeups;
use crate::Blocking;

/// A FIFO queue of at most `CAPACITY` items of type `T`, shared by threads
/// blocking through `B`: `insert` waits while it is full, `remove` while it
/// is empty.
pub struct BoundedQueue<T, B: Blocking, const CAPACITY: usize> {
    state: SyncLock<QueueState<T, B, CAPACITY>, B>,
}

impl<T, B: Blocking, const CAPACITY: usize> BoundedQueue<T, B, CAPACITY> {
    loom_const_fn! {
        /// An empty queue. `CAPACITY` must be at least 1 (checked at
        /// compile time).
        pub fn new() -> Self {
            Self { state: sync_lock::<_, B>(QueueState::new()) }
        }
    }

    /// Appends `item`, first waiting (in arrival order) until the
    /// inserters that came earlier are done and there is room.
    pub fn insert(&self, item: T) {
        let mut state = B::lock(&self.state);
        let ticket = state.take_insert_ticket();
        let mut queued = Queued::No;
        if !state.may_insert(ticket) {
            state.inserters.push_back(B::current());
            queued = Queued::Yes;
            state = park_until::<_, B>(&self.state, state, |state| state.may_insert(ticket));
        }
        state.store(item);
        let mut wakeups = Wakeups::<B>::new();
        // An item is there now, for the head remover.
        wakeups.add(state.removers.front());
        if queued == Queued::Yes {
            // The head is this thread: inserters are served in ticket order.
            state.inserters.pop_front();
        }
        if !state.is_full() {
            wakeups.add(state.inserters.front());
        }
        state.check_invariants();
        drop(state);
        wakeups.wake();
    }

    /// Takes the oldest item, first waiting (in arrival order) until the
    /// removers that came earlier are done and there is an item. Fig. 10's
    /// `remove`, line by line.
    pub fn remove(&self) -> T {
        let mut state = B::lock(&self.state);
        let ticket = state.take_remove_ticket();
        let mut queued = Queued::No;
        if !state.may_remove(ticket) {
            state.removers.push_back(B::current());
            queued = Queued::Yes;
            state = park_until::<_, B>(&self.state, state, |state| state.may_remove(ticket));
        }
        let item = state.take();
        let mut wakeups = Wakeups::<B>::new();
        // There is room now, for the head inserter (lines 21–23).
        wakeups.add(state.inserters.front());
        if queued == Queued::Yes {
            // Only now, with its work done, the remover leaves rmvQ, of
            // which it is the head (line 24): the paper's fix.
            state.removers.pop_front();
        }
        if !state.is_empty() {
            // The next remover may go (lines 25–27).
            wakeups.add(state.removers.front());
        }
        state.check_invariants();
        drop(state);
        wakeups.wake();
        item
    }

    /// How many items the queue holds now: a snapshot.
    pub fn len(&self) -> usize {
        B::lock(&self.state).len()
    }

    /// Whether the queue holds no item now: a snapshot.
    pub fn is_empty(&self) -> bool {
        B::lock(&self.state).is_empty()
    }

    /// The most items the queue holds.
    pub const fn capacity(&self) -> usize {
        CAPACITY
    }

    /// How many inserters and removers wait now: a snapshot, for tests.
    pub fn waiting(&self) -> (usize, usize) {
        let state = B::lock(&self.state);
        (state.inserters.len(), state.removers.len())
    }
}

impl<T, B: Blocking, const CAPACITY: usize> Default for BoundedQueue<T, B, CAPACITY> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, B: Blocking, const CAPACITY: usize> core::fmt::Debug for BoundedQueue<T, B, CAPACITY> {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        formatter
            .debug_struct("BoundedQueue")
            .field("len", &self.len())
            .field("capacity", &CAPACITY)
            .finish_non_exhaustive()
    }
}
