//! `BigLock`: one reentrant lock around the whole kernel, for the
//! big-kernel-lock build that the server/client benchmark compares against
//! (mC2's "mC2-bl", §6).
//!
//! The kernel's guard policy takes it before every kernel lock and lets it
//! go after the outermost one is released (`kernel.rs`, feature
//! `big-kernel-lock`), so at most one CPU is ever inside any critical
//! section of the kernel. The fine-grained locks are still taken inside it,
//! always uncontended; mC2-bl replaced them with empty functions instead,
//! which changes the single-CPU baseline a little but not what the
//! benchmark compares (each build's speedup over its own one-CPU run).
//!
//! It guards no data itself: the `SpinLock`s inside it still do. So a wrong
//! [`CpuSlot`] could only let two CPUs into the kernel at once — the
//! fine-grained build's normal state — never break mutual exclusion.
//!
//! Must never be taken with interrupts on in the kernel (an interrupt
//! handler on the holding CPU would re-enter it and change its depth in the
//! middle of an update): the guard policy disables them first.

use core::marker::PhantomData;

use crate::mcs::CpuSlot;
use crate::raw::RawLock;
use crate::sync::{AtomicU32, AtomicUsize, Ordering};
use crate::ticket::{Ticket, TicketLock};

/// No CPU holds the lock.
const NO_OWNER: usize = 0;

/// A FIFO ticket lock that the CPU holding it may take again; it is free
/// once every `enter` has been matched by an `exit`.
pub struct BigLock<S: CpuSlot> {
    lock: TicketLock,
    /// The holder's slot + 1, or [`NO_OWNER`]. Only the holder stores a
    /// value other than `NO_OWNER`, and it clears it before releasing.
    owner: AtomicUsize,
    /// How many `enter`s the holder has not yet matched. Only the holder
    /// touches it.
    depth: AtomicU32,
    /// The holder's ticket, for the release. Only the holder touches it.
    ticket: AtomicU32,
    slot: PhantomData<fn() -> S>,
}

impl<S: CpuSlot> BigLock<S> {
    loom_const_fn! {
        /// A free lock.
        pub fn new() -> Self {
            Self {
                lock: TicketLock::new(),
                owner: AtomicUsize::new(NO_OWNER),
                depth: AtomicU32::new(0),
                ticket: AtomicU32::new(0),
                slot: PhantomData,
            }
        }
    }

    /// Takes the lock, or takes it once more if this CPU holds it.
    #[inline(always)]
    pub fn enter(&self) {
        let me = S::current() + 1;
        // Relaxed: this CPU reads its own slot here only if its own latest
        // store to `owner` was that slot (read-after-write coherence: it
        // cannot read a value older than its own last store, and no other
        // CPU ever stores it), i.e. only if it holds the lock.
        if self.owner.load(Ordering::Relaxed) == me {
            let depth = self.depth.load(Ordering::Relaxed);
            self.depth.store(depth + 1, Ordering::Relaxed);
            return;
        }
        let ticket = self.lock.lock();
        // Relaxed, all three: only the holder reads them, and the ticket
        // lock's Acquire/Release orders them between holders.
        self.ticket.store(ticket.0, Ordering::Relaxed);
        self.depth.store(1, Ordering::Relaxed);
        self.owner.store(me, Ordering::Relaxed);
    }

    /// Matches one [`enter`](Self::enter) of this CPU; the last one frees
    /// the lock.
    #[inline(always)]
    pub fn exit(&self) {
        let depth = self.depth.load(Ordering::Relaxed);
        debug_assert!(depth > 0, "BigLock::exit without enter");
        self.depth.store(depth - 1, Ordering::Relaxed);
        if depth > 1 {
            return;
        }
        let ticket = Ticket(self.ticket.load(Ordering::Relaxed));
        // Cleared before the release, so that whoever holds the lock next
        // never sees our slot (see `enter`).
        self.owner.store(NO_OWNER, Ordering::Relaxed);
        self.lock.unlock(ticket);
    }

    /// Whether this CPU holds the lock.
    pub fn is_held_here(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == S::current() + 1
    }
}

impl<S: CpuSlot> Default for BigLock<S> {
    fn default() -> Self {
        Self::new()
    }
}
