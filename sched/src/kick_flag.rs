//! The kick of one thread: "look before you return to user mode". Whoever
//! changes what a user thread must look at on its way back to user mode
//! (a signal sent to it, its process ending, another thread's `execve`)
//! raises the thread's flag after the change and then kicks the CPU it
//! runs on with a wake IPI (`kernel::scheduler::kick`).
//!
//! The IPI alone is not enough: it interrupts a thread running user code,
//! but one that arrives while the thread is in the kernel — after its
//! last look at its signals, before it enters user mode — is taken there
//! and forgotten, and so is a kick that finds the thread preempted (no
//! CPU to send to). The thread would then run user code with the news
//! unseen until its next system call or tick: the posix test
//! `pthread_cond_timedwait/4-3` lost signals that way, its only receiving
//! thread spinning in user mode. So the thread's return path is:
//!
//! - [`KickFlag::take`], then its looks (signals, group exit, exec);
//! - with interrupts off, [`KickFlag::is_raised`]: if raised, back to
//!   the looks instead of entering user mode.
//!
//! A raise that the last test misses came after it, while the thread's
//! interrupts were off on a CPU it already ran on: the kick finds it there
//! and its IPI waits until user mode, then brings it back. Checked by
//! loom in `tests/loom_kick.rs` (with the negative control: without the
//! flag, a kick taken in the kernel is lost).

use crate::atomics::{AtomicBool, Ordering};

/// Whether a thread has been kicked since it last looked.
#[derive(Debug)]
pub struct KickFlag {
    raised: AtomicBool,
}

impl Default for KickFlag {
    fn default() -> Self {
        Self::new()
    }
}

impl KickFlag {
    loom_const_fn! {
        pub fn new() -> Self {
            Self { raised: AtomicBool::new(false) }
        }
    }

    /// The kicker, after its change and before it looks for the CPU the
    /// thread runs on.
    pub fn raise(&self) {
        // SeqCst: ordered before the kicker's look at where the thread
        // runs, as the thread's `is_raised` is after it starts running.
        self.raised.store(true, Ordering::SeqCst);
    }

    /// The thread, before its looks: clears the flag; whether it was set.
    /// Costs a plain load when no kick came (every system call passes).
    #[inline]
    pub fn take(&self) -> bool {
        // Relaxed first: a stale false is caught by `is_raised`. The swap
        // (Acquire) makes the kicker's change visible to the looks after.
        self.raised.load(Ordering::Relaxed) && self.raised.swap(false, Ordering::AcqRel)
    }

    /// The thread, interrupts off, just before user mode: true when a kick
    /// came after its looks.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }
}
