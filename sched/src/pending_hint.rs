//! "Something may be pending": a flag that lets a thread on its way back
//! to user mode skip a lock when nothing can be due. The layer above keeps
//! a process's signal state under a lock and looks at it before every
//! return to user mode; with this hint clear, that look costs one load.
//!
//! The protocol, with the guarded state's lock `L` and the thread's
//! [`crate::kick_flag::KickFlag`]:
//!
//! - whoever makes something pending does it under `L` and calls
//!   [`PendingHint::raise`] before it lets go of `L` — and so before it
//!   raises the kick flag of any thread that must look;
//! - the looking thread takes its kick flag, then reads
//!   [`PendingHint::maybe_pending`]; only if set does it take `L` and look;
//! - [`PendingHint::clear`] only under `L`, after a look that found
//!   nothing pending at all (not merely nothing for the caller), so a raise
//!   never goes unseen: every raise also holds `L`.
//!
//! A look that reads the hint clear either came after the kick was taken
//! and the raise was before that kick (then the hint reads set: the raise
//! is ordered before the kick flag's release and the take's acquire), or
//! the raise and its kick are later, and the kick flag, tested again with
//! interrupts off before user mode, or the kick's IPI in user mode, brings
//! the thread back. Reading the hint *before* taking the kick loses the
//! signal; loom finds that (`tests/loom_kick.rs`, negative control).

use crate::atomics::{AtomicBool, Ordering};

/// Set whenever something may be pending; clear only when nothing is.
#[derive(Debug)]
pub struct PendingHint {
    set: AtomicBool,
}

impl Default for PendingHint {
    fn default() -> Self {
        Self::new()
    }
}

impl PendingHint {
    loom_const_fn! {
        /// Clear: nothing pending.
        pub fn new() -> Self {
            Self { set: AtomicBool::new(false) }
        }
    }

    /// Under the guarded lock, after making something pending and before
    /// any kick.
    #[inline]
    pub fn raise(&self) {
        // SeqCst: before the kick flag's raise (itself SeqCst).
        self.set.store(true, Ordering::SeqCst);
    }

    /// Under the guarded lock, after a look found nothing pending at all.
    #[inline]
    pub fn clear(&self) {
        self.set.store(false, Ordering::SeqCst);
    }

    /// Without the lock, after taking the kick flag: false means nothing
    /// was pending when the kick flag was last taken.
    #[inline]
    pub fn maybe_pending(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }
}
