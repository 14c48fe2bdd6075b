//! The one interface of both lock algorithms.

/// A lock without data: acquire, try, release. Implemented by
/// [`TicketLock`](crate::TicketLock) and [`McsLock`](crate::McsLock), which are
/// interchangeable as the `L` parameter of [`SpinLock`](crate::SpinLock).
///
/// Sealed: [`SpinLock`](crate::SpinLock) hands out `&mut T` on the strength of
/// `lock` excluding every other holder. This crate proves that for its own
/// two locks (loom, refinement tests); it could not trust an implementation
/// from outside behind a safe trait.
///
/// Each method refines the step of the same name in
/// [`spec::FifoLock`](crate::spec::FifoLock).
pub trait RawLock: Sized + Sync + sealed::Sealed {
    /// What the holder keeps from acquire to release: the ticket, or the
    /// MCS slot whose node it used.
    type Token: Copy;

    /// An unlocked lock; a constant so that `SpinLock::new` is a `const fn`
    /// and locks can be `static`.
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)] // each use is a fresh lock, as wanted
    const UNLOCKED: Self;

    /// An unlocked lock (loom's atomics cannot be built in a constant).
    #[cfg(loom)]
    fn unlocked() -> Self;

    /// Spins until this CPU holds the lock; FIFO among waiters.
    fn lock(&self) -> Self::Token;

    /// Takes the lock if nobody holds it or waits for it; never spins.
    fn try_lock(&self) -> Option<Self::Token>;

    /// Releases the lock; `token` is what `lock` or `try_lock` returned.
    fn unlock(&self, token: Self::Token);

    /// Whether some CPU holds the lock or waits for it (a snapshot: it may
    /// be stale as soon as it returns).
    fn is_locked(&self) -> bool;
}

pub(crate) mod sealed {
    /// Keeps [`RawLock`](super::RawLock) implementations inside this crate.
    pub trait Sealed {}
}
