//! One-shot completions: a requester takes a ticket, hands the ticket to
//! whoever will finish its request (a device's interrupt handler), and
//! waits; the finisher records the outcome and wakes it.
//!
//! A ticket names a slot that only its holder frees (by taking the
//! outcome), so a finisher never writes into a slot a later request
//! reuses, whatever the order of completions. Unlike a condition variable
//! this needs no lock held by the caller across the hand-over: the slot
//! itself remembers an outcome that comes before the requester waits.
//!
//! Must never lose an outcome or a wake-up (loom: `tests/loom_completions.rs`),
//! block while its lock is held, or panic on a ticket it did not issue (a
//! finisher with a stale or forged ticket gets `false`).

use alloc::vec::Vec;

use crate::blocking::{sync_lock, Blocking, SyncLock};

/// A claim on one slot, from [`Completions::begin`] to
/// [`Completions::wait`] (not `Clone`: one waiter per ticket).
#[derive(Debug, PartialEq, Eq)]
pub struct Ticket {
    index: usize,
}

impl Ticket {
    /// Its number, to give to the finisher (`complete` takes it back).
    pub fn number(&self) -> usize {
        self.index
    }
}

/// Every slot is claimed: finish some requests first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllSlotsTaken;

enum Slot<V, T> {
    Free,
    Waiting(T),
    Done(V),
}

/// A fixed number of completion slots carrying outcomes of type `V`.
pub struct Completions<V, B: Blocking> {
    slots: SyncLock<Vec<Slot<V, B::Thread>>, B>,
}

impl<V: Send, B: Blocking> Completions<V, B> {
    /// `count` free slots.
    pub fn new(count: usize) -> Self {
        Self { slots: sync_lock::<_, B>((0..count).map(|_| Slot::Free).collect()) }
    }

    /// Claims a free slot for the calling thread.
    pub fn begin(&self) -> Result<Ticket, AllSlotsTaken> {
        let me = B::current();
        let mut slots = B::lock(&self.slots);
        let index = slots.iter().position(|slot| matches!(slot, Slot::Free)).ok_or(AllSlotsTaken)?;
        slots[index] = Slot::Waiting(me);
        Ok(Ticket { index })
    }

    /// Records `outcome` for ticket `number` and wakes its holder; `false`
    /// (and `outcome` dropped) when no request waits under that number.
    pub fn complete(&self, number: usize, outcome: V) -> bool {
        let waiter = {
            let mut slots = B::lock(&self.slots);
            let Some(slot) = slots.get_mut(number) else { return false };
            if !matches!(slot, Slot::Waiting(_)) {
                return false;
            }
            match core::mem::replace(slot, Slot::Done(outcome)) {
                Slot::Waiting(thread) => thread,
                _ => return false,
            }
        };
        B::unpark(&waiter);
        true
    }

    /// The outcome, once recorded; frees the slot.
    pub fn try_take(&self, ticket: &Ticket) -> Option<V> {
        let mut slots = B::lock(&self.slots);
        let slot = slots.get_mut(ticket.index)?;
        if !matches!(slot, Slot::Done(_)) {
            return None;
        }
        match core::mem::replace(slot, Slot::Free) {
            Slot::Done(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// Sleeps until the outcome is recorded, then takes it (freeing the slot).
    pub fn wait(&self, ticket: Ticket) -> V {
        loop {
            if let Some(outcome) = self.try_take(&ticket) {
                return outcome;
            }
            B::park();
        }
    }

    /// Gives up ticket `ticket` before anyone could complete it (its
    /// request was never submitted).
    pub fn cancel(&self, ticket: Ticket) {
        let mut slots = B::lock(&self.slots);
        if let Some(slot) = slots.get_mut(ticket.index) {
            *slot = Slot::Free;
        }
    }

    /// Slots claimed now (a snapshot, for tests and reports).
    pub fn claimed(&self) -> usize {
        B::lock(&self.slots).iter().filter(|slot| !matches!(slot, Slot::Free)).count()
    }
}
