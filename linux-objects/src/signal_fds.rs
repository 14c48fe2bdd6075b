//! `signalfd` descriptors: reading one takes pending signals of its mask
//! (the reading thread's own or the process's), each as a
//! `struct signalfd_siginfo` (`linux_abi::signalfd`), instead of their
//! being delivered — the mask must also be blocked for that, as on Linux.
//! Readiness is asked for the thread that made the descriptor.

use alloc::sync::Weak;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::process::{Pid, Process};

/// SIGKILL and SIGSTOP can never be read from a descriptor.
const UNREADABLE: u64 = (1 << (9 - 1)) | (1 << (19 - 1));

/// One signal descriptor.
pub struct SignalFd {
    mask: AtomicU64,
    process: Weak<Process>,
    maker: Pid,
}

impl SignalFd {
    pub fn new(mask: u64, process: Weak<Process>, maker: Pid) -> Self {
        Self { mask: AtomicU64::new(mask & !UNREADABLE), process, maker }
    }

    /// The signals it reads (bit n-1: signal n).
    pub fn mask(&self) -> u64 {
        self.mask.load(Ordering::Relaxed)
    }

    /// `signalfd` on an existing descriptor: a new mask.
    pub fn set_mask(&self, mask: u64) {
        self.mask.store(mask & !UNREADABLE, Ordering::Relaxed);
    }

    /// Whether a signal of the mask is pending for the thread that made it.
    pub fn readable(&self) -> bool {
        self.process.upgrade().is_some_and(|process| process.state().signals.pending_for(self.maker) & self.mask() != 0)
    }
}
