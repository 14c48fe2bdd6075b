//! The set of threads waiting in `poll`, `select` or `epoll_wait` for a
//! change, and a generation that every change bumps: the wake-up protocol
//! of `linux-objects/src/poll_wakeups.rs`, kept here (under the
//! caller's lock, generic over how a thread is named) so that loom checks
//! this very code (`pollers_loom.rs`).
//!
//! A poller registers and takes the generation *before* it checks its
//! descriptors, and sleeps only while the generation has not moved; a
//! change bumps the generation *before* it wakes the registered pollers.
//! So a change after the check wakes the poller, and one before it is seen
//! by the check.
//!
//! Changes are frequent (every pipe read and write) and pollers rare, so a
//! [`PollerGate`] counts the pollers outside the set's lock: a poller
//! enters it before registering, a change looks at it after changing its
//! data and skips the set when nobody is there. A sequentially consistent
//! fence on each side (after the poller's count, before the change's look)
//! makes sure that either the change sees the poller or the poller's check
//! sees the change — loom finds the lost wake-up without them.

use alloc::vec::Vec;

#[cfg(not(loom))]
use core::sync::atomic::{fence, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicUsize, Ordering};

/// How many pollers are registered or about to be, read without a lock.
pub struct PollerGate {
    pollers: AtomicUsize,
}

impl PollerGate {
    /// Nobody.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { pollers: AtomicUsize::new(0) }
    }

    /// Nobody (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { pollers: AtomicUsize::new(0) }
    }

    /// A poller comes, before it registers and checks.
    pub fn enter(&self) {
        self.pollers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// A poller went, after it unregistered.
    pub fn leave(&self) {
        self.pollers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether a change (its data already changed) must go through the set.
    pub fn anyone(&self) -> bool {
        fence(Ordering::SeqCst);
        self.pollers.load(Ordering::SeqCst) != 0
    }
}

/// Registered pollers and the change generation.
pub struct PollerSet<W> {
    generation: u64,
    pollers: Vec<W>,
}

impl<W: Clone> Default for PollerSet<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Clone> PollerSet<W> {
    /// No pollers, generation 0.
    pub const fn new() -> Self {
        Self { generation: 0, pollers: Vec::new() }
    }

    /// Registers `poller`; the generation it has seen. A poller that cannot
    /// be registered (no memory) is only woken by its own time limit.
    pub fn register(&mut self, poller: W) -> u64 {
        if self.pollers.try_reserve(1).is_ok() {
            self.pollers.push(poller);
        }
        self.generation
    }

    /// The current generation (a poller renews what it has seen before
    /// each check).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether a change came after generation `seen`.
    pub fn moved_since(&self, seen: u64) -> bool {
        self.generation != seen
    }

    /// Forgets the poller `is_me` picks.
    pub fn unregister(&mut self, is_me: impl Fn(&W) -> bool) {
        self.pollers.retain(|poller| !is_me(poller));
    }

    /// A change: bumps the generation and gives the pollers to wake (none
    /// when the list cannot be copied: they wake on their time limits).
    pub fn changed(&mut self) -> Vec<W> {
        self.generation = self.generation.wrapping_add(1);
        let mut woken = Vec::new();
        if !self.pollers.is_empty() && woken.try_reserve_exact(self.pollers.len()).is_ok() {
            woken.extend(self.pollers.iter().cloned());
        }
        woken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_move_the_generation_and_name_the_registered() {
        let mut set = PollerSet::new();
        assert!(set.changed().is_empty());
        let seen = set.register(7);
        set.register(8);
        assert!(!set.moved_since(seen));
        assert_eq!(set.changed(), alloc::vec![7, 8]);
        assert!(set.moved_since(seen));
        set.unregister(|poller| *poller == 7);
        assert_eq!(set.changed(), alloc::vec![8]);
        assert_eq!(set.generation(), 3);
    }
}
