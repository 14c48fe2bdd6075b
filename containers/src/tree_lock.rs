//! The tree lock, its place in the lock order, and how it behaves where the
//! containers run ([`TreeLocking`]). The lock guards the tree's shape; it
//! must never be held while taking a lock of level 3 or above, and code
//! above this layer never sees it.

use core::marker::PhantomData;

use spinlock::{GuardPolicy, HeldLevels, Level, SpinLock, SpinLockGuard, TicketLock};

/// The level of the tree lock, the containers layer's only lock.
///
/// **Lock order.** Containers are layer 2 of DESIGN.md, with the frame
/// allocator (whose locks are levels 1 and 2) and below the threads layer
/// (level 4) and everything above it: any caller may hold its own locks,
/// all of higher levels, while it creates or destroys a container (or
/// releases pages, which may wait for the tree lock). While holding the
/// tree lock this layer takes no other lock at all, and charges and
/// releases on the lock-free path take none either. Debug builds check the
/// order (spinlock's lock-order check).
pub const CONTAINERS_LEVEL: Level = Level::new(3);

/// How the tree lock behaves in an environment: what a CPU switches off
/// while holding it, where the lock-order check keeps the levels a CPU
/// holds, and how it waits for it.
pub trait TreeLocking: 'static {
    /// What a CPU switches off while it holds the tree lock.
    type Policy: GuardPolicy;

    /// Where the lock-order check keeps the levels a CPU (thread) holds.
    type Levels: HeldLevels;

    /// Takes the tree lock. By default spins on it, in FIFO order: right
    /// where a holder is never descheduled (the kernel keeps interrupts off
    /// while holding it) and under loom.
    ///
    /// Host threads can be descheduled while holding the lock or while next
    /// in line, and with more threads than cores each FIFO hand-over can
    /// then wait out an OS time slice (the 8-thread stress test took
    /// minutes instead of a second on two cores). Host implementations
    /// override this to try the lock and yield between attempts.
    fn lock<T>(lock: &TreeLock<T, Self>) -> TreeGuard<'_, T, Self>
    where
        Self: Sized,
    {
        lock.lock()
    }
}

/// A lock of this layer, as environment `L` wants it.
pub type TreeLock<T, L> =
    SpinLock<T, TicketLock, <L as TreeLocking>::Policy, <L as TreeLocking>::Levels>;

/// The guard of a [`TreeLock`].
pub type TreeGuard<'a, T, L> =
    SpinLockGuard<'a, T, TicketLock, <L as TreeLocking>::Policy, <L as TreeLocking>::Levels>;

/// Spins for the tree lock in FIFO order, switching off what `G` says and
/// checking the lock order through `H`: the kernel's choice (its
/// interrupt-disabling policy and per-CPU levels) and loom's.
pub struct Spinning<G, H>(PhantomData<fn() -> (G, H)>);

impl<G: GuardPolicy + 'static, H: HeldLevels + 'static> TreeLocking for Spinning<G, H> {
    type Policy = G;
    type Levels = H;
}
