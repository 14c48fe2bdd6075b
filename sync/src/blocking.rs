//! How a thread blocks: the one thing this layer needs from the threads
//! layer, as a trait so that the same objects run in the kernel, on std
//! threads and under loom.

use spinlock::{GuardPolicy, HeldLevels, Level, SpinLock, TicketLock};

/// A way to block threads, with `std::thread::park` semantics: every thread
/// has a permit; [`unpark`](Self::unpark) leaves it (waking the thread if it
/// is parked) and [`park`](Self::park) consumes it, sleeping until it comes.
/// `park` may also return spuriously, so every caller re-checks its own
/// condition in a loop; that is what makes a wake-up that arrives between
/// "decide to sleep" and "sleep" harmless: the permit is already there.
///
/// It also names how this layer's own locks behave in that environment
/// (the kernel keeps interrupts off while one is held and checks the lock
/// order per CPU; host tests check it per thread).
pub trait Blocking: 'static {
    /// A handle that can wake a thread.
    type Thread: Clone + Send + Sync + 'static;

    /// What a CPU switches off while it holds one of this layer's locks.
    type LockPolicy: GuardPolicy;

    /// Where the lock-order check keeps the levels a CPU (thread) holds.
    type LockLevels: HeldLevels;

    /// The calling thread's handle.
    fn current() -> Self::Thread;

    /// Blocks until the calling thread's permit is there, then consumes it;
    /// may return early.
    fn park();

    /// Leaves `thread` its permit, waking it if it is parked.
    fn unpark(thread: &Self::Thread);

    /// `unpark(thread)` then `park()`, as one step where the environment
    /// can: the kernel switches straight to `thread` when it may run on
    /// this CPU (the IPC fast path), skipping the scheduler's queue. `me`
    /// is the calling thread (what [`Self::current`] would give; passed,
    /// so the fast path need not look it up).
    fn unpark_and_park(thread: &Self::Thread, me: &Self::Thread) {
        let _ = me;
        Self::unpark(thread);
        Self::park();
    }

    /// Takes one of this layer's locks. By default spins on it, in FIFO
    /// order: right where a lock holder is never descheduled (the kernel
    /// keeps interrupts off while holding one) and under loom.
    ///
    /// Host threads can be descheduled while holding a lock or while next
    /// in line, and with more threads than cores each FIFO hand-over can
    /// then wait out an OS time slice (a stress test took from 0.2 s to
    /// 200 s). Host implementations override this to try the lock and
    /// yield the CPU between attempts.
    fn lock<T>(lock: &SyncLock<T, Self>) -> SyncGuard<'_, T, Self>
    where
        Self: Sized,
    {
        lock.lock()
    }
}

/// The level of every lock inside this layer's objects: above the threads
/// layer (level 4), whose locks `unpark` takes while a caller may hold one
/// of ours, and below any lock a caller of [`Condvar::wait`] holds, which
/// must therefore be at level 6 or higher.
///
/// None of this layer's locks is ever taken while another of them is held:
/// an object's lock guards only that object, and waking happens through the
/// threads layer. Debug builds check all of this (spinlock's lock-order
/// check).
///
/// [`Condvar::wait`]: crate::Condvar::wait
pub const SYNC_LEVEL: Level = Level::new(5);

/// The lock inside this layer's objects, as environment `B` wants it.
pub type SyncLock<T, B> =
    SpinLock<T, TicketLock, <B as Blocking>::LockPolicy, <B as Blocking>::LockLevels>;

loom_const_fn! {
    /// A lock of this layer around `value`.
    pub(crate) fn sync_lock<T, B: Blocking>(value: T) -> SyncLock<T, B> {
        SpinLock::new(SYNC_LEVEL, value)
    }
}

/// The guard of a [`SyncLock`].
pub type SyncGuard<'a, T, B> = spinlock::SpinLockGuard<
    'a,
    T,
    TicketLock,
    <B as Blocking>::LockPolicy,
    <B as Blocking>::LockLevels,
>;

/// Whether a thread joined an object's queue of waiting threads (it then
/// leaves it itself, once done).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queued {
    /// It waited, so it is on the queue.
    Yes,
    /// It went straight through without waiting.
    No,
}

/// Releases `guard`, parks, re-takes `lock`, until `ready` holds on the
/// data (checked first, under the lock). Spurious returns from `park` just
/// go round the loop; a wake-up between the release and the park leaves a
/// permit that makes the park return at once.
pub(crate) fn park_until<'a, T, B: Blocking>(
    lock: &'a SyncLock<T, B>,
    mut guard: SyncGuard<'a, T, B>,
    ready: impl Fn(&T) -> bool,
) -> SyncGuard<'a, T, B> {
    while !ready(&guard) {
        drop(guard);
        B::park();
        guard = B::lock(lock);
    }
    guard
}
