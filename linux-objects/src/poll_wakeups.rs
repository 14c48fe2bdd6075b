//! Waking `poll`, `select` and `epoll_wait` callers when a pipe, socket or
//! eventfd changes, instead of leaving them to their next 10 ms look. The
//! protocol is `linux_abi::pollers::PollerSet`'s (loom-checked there): a
//! caller registers ([`Registration`]) and takes the generation before it
//! checks its descriptors, and sleeps while the generation has not moved;
//! every change bumps the generation, then unparks the registered callers.
//!
//! Sources that do not report changes (the console, timers, signals) are
//! still seen by the 10 ms look.

use alloc::sync::Arc;

use linux_abi::pollers::{PollerGate, PollerSet};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

/// Taken alone, or inside a pipe's or counter's lock (8).
const POLLERS_LEVEL: Level = Level::new(5);

static POLLERS: KernelTicketLock<PollerSet<Arc<sched::Thread>>> = KernelTicketLock::new(POLLERS_LEVEL, PollerSet::new());
/// The pollers, counted without the lock: a change with none skips it.
static GATE: PollerGate = PollerGate::new();

/// Something a poller may wait for changed (its data already is): wake
/// every registered poller. One atomic load when nobody polls.
pub fn changed() {
    if !GATE.anyone() {
        return;
    }
    let woken = POLLERS.lock().changed();
    for thread in &woken {
        sched::unpark(thread);
    }
}

/// The calling thread, registered as a poller until dropped.
pub struct Registration {
    me: Arc<sched::Thread>,
    seen: u64,
}

impl Registration {
    /// Registers the caller.
    pub fn new() -> Registration {
        let me = sched::current();
        GATE.enter();
        let seen = POLLERS.lock().register(me.clone());
        Registration { me, seen }
    }

    /// Whether a change came since it registered (or since `renew`).
    pub fn changed(&self) -> bool {
        POLLERS.lock().moved_since(self.seen)
    }

    /// Takes the current generation as seen (before the next check).
    pub fn renew(&mut self) {
        self.seen = POLLERS.lock().generation();
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        POLLERS.lock().unregister(|thread| Arc::ptr_eq(thread, &self.me));
        GATE.leave();
    }
}
