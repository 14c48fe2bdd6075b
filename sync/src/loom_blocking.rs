//! Blocking for loom's model threads (`--cfg loom`).

use spinlock::{NoGuard, Untracked};

use crate::Blocking;

/// `loom::thread`'s park and unpark, so that loom explores every
/// interleaving of parks, wake-ups and lock steps. The lock order is not
/// tracked: loom's threads share one host thread, so a per-thread record
/// would mix them up.
#[derive(Debug)]
pub struct LoomBlocking;

impl Blocking for LoomBlocking {
    type Thread = loom::thread::Thread;
    type LockPolicy = NoGuard;
    type LockLevels = Untracked;

    fn current() -> Self::Thread {
        loom::thread::current()
    }

    fn park() {
        loom::thread::park();
    }

    fn unpark(thread: &Self::Thread) {
        thread.unpark();
    }
}
