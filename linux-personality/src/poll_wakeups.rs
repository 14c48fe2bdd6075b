//! Waking `poll`, `select` and `epoll_wait` callers when a pipe, socket or
//! eventfd changes, instead of leaving them to their next 10 ms look. A
//! waiting caller registers ([`Registration`]) before it checks its
//! descriptors; every change bumps a generation and unparks every
//! registered caller, whose sleep ends when the generation moved. A caller
//! registered after the change sees it in its own check (no lost wake-up:
//! register, read the generation, check, sleep while it is unchanged).
//!
//! Sources that do not report changes (the console, timers, signals) are
//! still seen by the 10 ms look.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

/// Taken alone (a change reports after releasing its object's lock).
const POLLERS_LEVEL: Level = Level::new(5);

static POLLERS: KernelTicketLock<Vec<Arc<sched::Thread>>> = KernelTicketLock::new(POLLERS_LEVEL, Vec::new());
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Something a poller may wait for changed: wake every registered poller.
pub fn changed() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    let pollers = {
        let pollers = POLLERS.lock();
        if pollers.is_empty() {
            return;
        }
        pollers.clone()
    };
    for thread in &pollers {
        sched::unpark(thread);
    }
}

/// The calling thread, registered as a poller until dropped.
pub struct Registration {
    me: Arc<sched::Thread>,
    /// The generation when it registered.
    pub seen: u64,
}

impl Registration {
    /// Registers the caller (unregistered: ENOMEM-free fallback, it then
    /// only wakes on its 10 ms look).
    pub fn new() -> Registration {
        let me = sched::current();
        {
            let mut pollers = POLLERS.lock();
            if pollers.try_reserve(1).is_ok() {
                pollers.push(me.clone());
            }
        }
        Registration { me, seen: GENERATION.load(Ordering::SeqCst) }
    }

    /// Whether a change came since it registered (or since `renew`).
    pub fn changed(&self) -> bool {
        GENERATION.load(Ordering::SeqCst) != self.seen
    }

    /// Takes the current generation as seen (before the next check).
    pub fn renew(&mut self) {
        self.seen = GENERATION.load(Ordering::SeqCst);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        POLLERS.lock().retain(|thread| !Arc::ptr_eq(thread, &self.me));
    }
}
