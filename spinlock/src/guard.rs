//! What is switched off while a lock is held, chosen by the kernel.

use core::marker::PhantomData;

/// What a CPU does around holding a lock, e.g. disable interrupts on entry
/// and restore them on exit. This crate does not know the hardware: the
/// machine layer implements the interrupt-disabling policy.
///
/// `enter` runs before the lock is acquired and `exit` after it is released,
/// on the same CPU (the guard is not `Send`).
pub trait GuardPolicy {
    /// What `exit` needs to undo `enter`, e.g. whether interrupts were on.
    type Token: Copy;

    /// Called before acquiring.
    fn enter() -> Self::Token;

    /// Called after releasing, with `enter`'s token.
    fn exit(token: Self::Token);
}

/// Switches nothing off (the default): for host tests and for locks that
/// are never taken in interrupt context.
#[derive(Debug)]
pub struct NoGuard;

impl GuardPolicy for NoGuard {
    type Token = ();

    #[inline(always)]
    fn enter() {}

    #[inline(always)]
    fn exit(_token: ()) {}
}

/// The entered policy; exits it when dropped.
pub(crate) struct PolicyMark<G: GuardPolicy> {
    token: G::Token,
    policy: PhantomData<fn() -> G>,
}

impl<G: GuardPolicy> PolicyMark<G> {
    #[inline(always)]
    pub(crate) fn enter() -> Self {
        Self {
            token: G::enter(),
            policy: PhantomData,
        }
    }
}

impl<G: GuardPolicy> Drop for PolicyMark<G> {
    #[inline(always)]
    fn drop(&mut self) {
        G::exit(self.token);
    }
}
