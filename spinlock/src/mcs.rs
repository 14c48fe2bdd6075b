//! The MCS queue lock (Mellor-Crummey and Scott): each waiter spins on its
//! own node, so a release touches one waiter's cache line instead of all.
//!
//! # Where the nodes live
//!
//! Inside the lock, as a fixed array with one node per CPU slot, like mC2's
//! MCS lock; the queue links are slot indices, not pointers. The reasons:
//! - acquire never allocates and a node never moves while enqueued: the nodes
//!   are part of the lock, which cannot move while it is borrowed;
//! - no raw pointers, so this module is safe code (forbid(unsafe_code)) and
//!   loom checks it as it is;
//! - `lock()` can return a guard like the ticket lock's, so the two locks are
//!   interchangeable behind [`RawLock`]. (Nodes on the caller's stack would
//!   need either a closure API, which the ticket lock does not have, or a
//!   node pinned by the caller in every `lock` call.)
//!
//! The price: `SLOTS` cache lines per lock (64 bytes each, so that every
//! waiter spins on a line of its own), and a slot per CPU from [`CpuSlot`].
//! A wrong [`CpuSlot`] (two running CPUs given one slot), or a CPU taking a
//! lock it already holds or waits for, is caught when the node is claimed
//! and panics: it can never let two CPUs in. (Two waiters on one node would
//! both enter on one grant, so `CpuSlot` would otherwise have to be an
//! `unsafe` trait, which the kernel, free of `unsafe` above the machine
//! layer, could not implement.) The claim is an atomic swap: about 19 of
//! the ~55 cycles of an uncontended acquire + release on the host.

use core::marker::PhantomData;

use crate::raw::{sealed::Sealed, RawLock};
use crate::sync::{spin_hint, AtomicU32, Ordering};

/// The current CPU's index among `0..SLOTS`, supplied by the kernel (on the
/// host, by a thread-local in tests).
///
/// Contract: two CPUs that run at the same time never get the same slot,
/// and a CPU's slot does not change while it holds or waits for a lock
/// (spinlocks are held with preemption off). A broken contract panics.
pub trait CpuSlot {
    /// The running CPU's slot.
    fn current() -> usize;
}

/// How [`McsLock::arrive`] found the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// It was free; the caller holds it now.
    Acquired,
    /// The caller is queued right behind this slot.
    Queued {
        /// The slot that was last in the queue before the caller.
        behind: usize,
    },
}

/// No slot: the end of the queue, or an empty queue.
const NONE: u32 = u32::MAX;

/// A node's states. A node goes IDLE → WAITING (claimed by `arrive`) →
/// GRANTED (by the predecessor, or at once when the lock was free) → IDLE.
const IDLE: u32 = 0;
const WAITING: u32 = 1;
const GRANTED: u32 = 2;

/// One slot's queue node, on a cache line of its own.
#[repr(align(64))]
struct Node {
    state: AtomicU32,
    /// The slot queued behind this one, or `NONE`.
    next: AtomicU32,
}

impl Node {
    loom_const_fn! {
        fn new() -> Self {
            Self { state: AtomicU32::new(IDLE), next: AtomicU32::new(NONE) }
        }
    }
}

/// An MCS lock for CPUs numbered `0..SLOTS` by `S`.
///
/// Invariant: the nodes whose state is not IDLE form one queue from the
/// holder to `tail`, linked by `next` (a link may lag behind the `tail`
/// swap that created it; `release` waits for it).
pub struct McsLock<S, const SLOTS: usize> {
    /// The last slot in the queue, or `NONE` when the lock is free.
    tail: AtomicU32,
    nodes: [Node; SLOTS],
    slot: PhantomData<fn() -> S>,
}

impl<S: CpuSlot, const SLOTS: usize> McsLock<S, SLOTS> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            tail: AtomicU32::new(NONE),
            nodes: [const { Node::new() }; SLOTS],
            slot: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        let nodes = core::array::from_fn(|_| Node::new());
        Self {
            tail: AtomicU32::new(NONE),
            nodes,
            slot: PhantomData,
        }
    }

    /// Step 1 of `lock`: append `slot`'s node to the queue. Refines
    /// [`FifoLock::arrive`](crate::spec::FifoLock::arrive).
    ///
    /// Panics if `slot` is already in this lock's queue.
    #[inline(always)]
    pub fn arrive(&self, slot: usize) -> Arrival {
        let node = self.claim(slot);
        // AcqRel. Acquire: if the lock was free, pairs with the Release of
        // the last `release`, whose writes we must see. Release: publishes
        // our node's `next = NONE` to the successor that will link into it.
        let predecessor = self.tail.swap(slot as u32, Ordering::AcqRel);
        if predecessor == NONE {
            // Relaxed: nobody else writes or waits on a node without a
            // predecessor; only we read it (`is_my_turn`).
            node.state.store(GRANTED, Ordering::Relaxed);
            return Arrival::Acquired;
        }
        // Release: the predecessor reads this link with Acquire and then
        // grants our node, so our claim (WAITING) must be visible first.
        self.nodes[predecessor as usize]
            .next
            .store(slot as u32, Ordering::Release);
        Arrival::Queued {
            behind: predecessor as usize,
        }
    }

    /// Step 2 of `lock`, repeated: has `slot`'s turn come? Once true, it
    /// holds the lock. Refines
    /// [`FifoLock::is_my_turn`](crate::spec::FifoLock::is_my_turn).
    #[inline(always)]
    pub fn is_my_turn(&self, slot: usize) -> bool {
        // Acquire: pairs with the predecessor's Release grant, so its writes
        // to the data are visible to us.
        self.nodes[slot].state.load(Ordering::Acquire) == GRANTED
    }

    /// Hands the lock to the next slot in the queue, or frees it. Only the
    /// holder, `slot`, may call it. If a successor has swapped itself into
    /// `tail` but not yet linked, waits for the link (a few instructions).
    /// Refines [`FifoLock::release`](crate::spec::FifoLock::release).
    #[inline(always)]
    pub fn release(&self, slot: usize) {
        let node = &self.nodes[slot];
        // Acquire: pairs with the successor's Release link, so its WAITING
        // claim is ordered before the grant we write over it.
        let mut next = node.next.load(Ordering::Acquire);
        if next == NONE {
            // Release: the next arrival, which swaps `tail` from NONE with
            // Acquire, sees our writes to the data. Relaxed on failure: we
            // only learn that a successor exists and wait for its link.
            let freed =
                self.tail
                    .compare_exchange(slot as u32, NONE, Ordering::Release, Ordering::Relaxed);
            if freed.is_ok() {
                return Self::retire(node);
            }
            next = Self::await_link(node);
        }
        // Release: hands our writes to the data to the successor.
        self.nodes[next as usize]
            .state
            .store(GRANTED, Ordering::Release);
        Self::retire(node);
    }

    /// Takes `slot`'s node out of IDLE; panics if it was not IDLE.
    #[inline(always)]
    fn claim(&self, slot: usize) -> &Node {
        let Some(node) = self.nodes.get(slot) else {
            slot_out_of_range(slot, SLOTS)
        };
        // An RMW, so two CPUs given the same slot cannot both see IDLE.
        // Acquire: pairs with `retire`'s Release, in case the slot's last use
        // was by another thread (one that has since moved off this CPU).
        let previous = node.state.swap(WAITING, Ordering::Acquire);
        assert!(
            previous == IDLE,
            "MCS slot {slot} is already queued on this lock: CpuSlot gave two running CPUs one slot, \
             or a CPU took a lock it holds"
        );
        // Relaxed: published to the successor by the Release of our `tail`
        // swap, before anyone can link into this node.
        node.next.store(NONE, Ordering::Relaxed);
        node
    }

    /// Spins until a successor that has swapped `tail` links itself to `node`.
    #[cold]
    fn await_link(node: &Node) -> u32 {
        loop {
            spin_hint();
            // Acquire: as the first load of `next` in `release`.
            let next = node.next.load(Ordering::Acquire);
            if next != NONE {
                return next;
            }
        }
    }

    /// Returns a node that has left the queue to IDLE.
    #[inline(always)]
    fn retire(node: &Node) {
        // Release: pairs with `claim`'s Acquire (see there).
        node.state.store(IDLE, Ordering::Release);
    }
}

#[cold]
#[track_caller]
fn slot_out_of_range(slot: usize, slots: usize) -> ! {
    panic!("MCS slot {slot} is out of range: this lock has {slots} slots (did CpuSlot give every CPU a slot?)")
}

impl<S: CpuSlot, const SLOTS: usize> Default for McsLock<S, SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S, const SLOTS: usize> Sealed for McsLock<S, SLOTS> {}

impl<S: CpuSlot, const SLOTS: usize> RawLock for McsLock<S, SLOTS> {
    /// The slot whose node the holder used.
    type Token = usize;

    #[cfg(not(loom))]
    const UNLOCKED: Self = Self::new();

    #[cfg(loom)]
    fn unlocked() -> Self {
        Self::new()
    }

    #[inline(always)]
    fn lock(&self) -> usize {
        let slot = S::current();
        if let Arrival::Queued { .. } = self.arrive(slot) {
            while !self.is_my_turn(slot) {
                spin_hint();
            }
        }
        slot
    }

    /// Refines [`FifoLock::try_lock`](crate::spec::FifoLock::try_lock).
    #[inline(always)]
    fn try_lock(&self) -> Option<usize> {
        let slot = S::current();
        let node = self.claim(slot);
        // AcqRel on success, as the swap in `arrive`. Relaxed on failure:
        // we leave without having touched anything shared.
        let taken =
            self.tail
                .compare_exchange(NONE, slot as u32, Ordering::AcqRel, Ordering::Relaxed);
        if taken.is_err() {
            Self::retire(node);
            return None;
        }
        // Relaxed: as in `arrive`, only we read a node without predecessor.
        node.state.store(GRANTED, Ordering::Relaxed);
        Some(slot)
    }

    #[inline(always)]
    fn unlock(&self, slot: usize) {
        self.release(slot);
    }

    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for assertions and statistics; orders nothing.
        self.tail.load(Ordering::Relaxed) != NONE
    }
}
