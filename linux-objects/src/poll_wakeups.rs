//! Waking `poll`, `select` and `epoll_wait` callers when a pipe, socket or
//! eventfd changes, instead of leaving them to their next 10 ms look. The
//! protocol is `linux_abi::pollers::PollerSet`'s (loom-checked there): a
//! caller registers ([`Registration`]) and takes the generation before it
//! checks its descriptors, and sleeps while the generation has not moved;
//! every change bumps the generation, then unparks the registered callers.
//!
//! Sources that do not report changes (the console, timers, signals) are
//! still seen by the 10 ms look.
//!
//! Two sets, by where a change happens: the network (Internet sockets) and
//! everything local (pipes, Unix sockets, eventfds, netlink). A waiter
//! registers in the sets its descriptors belong to (`poll` of two pipes:
//! the local set only), so a busy network does not wake every `poll` of a
//! pipe in the system, nor a pipe every socket waiter. Each set is
//! `PollerSet`'s protocol on its own; a waiter in both has seen a
//! generation of each.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::pollers::{PollerGate, PollerSet};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

/// Taken alone, or inside a pipe's or counter's lock (8).
const POLLERS_LEVEL: Level = Level::new(5);

/// Where a change happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// An Internet socket's state (the network moved packets or an
    /// operation on it succeeded).
    Network = 0,
    /// A pipe, Unix socket, eventfd or netlink socket.
    Local = 1,
}

const SOURCES: [Source; 2] = [Source::Network, Source::Local];

static POLLERS: [KernelTicketLock<PollerSet<Arc<sched::Thread>>>; 2] =
    [KernelTicketLock::new(POLLERS_LEVEL, PollerSet::new()), KernelTicketLock::new(POLLERS_LEVEL, PollerSet::new())];
/// The pollers of each set, counted without the lock: a change with none
/// skips it.
static GATES: [PollerGate; 2] = [PollerGate::new(), PollerGate::new()];

/// Something local a poller may wait for changed (its data already is):
/// wake the local set's pollers. One atomic load when nobody polls.
pub fn changed() {
    changed_in(Source::Local);
}

/// As [`changed`], for a change in `source`.
pub fn changed_in(source: Source) {
    let index = source as usize;
    if !GATES[index].anyone() {
        return;
    }
    let woken = POLLERS[index].lock().changed();
    for thread in &woken {
        sched::unpark(thread);
    }
}

/// A poller set of one object's own (each pipe has one): its pollers wake
/// on that object's changes only, by the same protocol as the system-wide
/// sets. A `poll` of nothing but pipes waits here. The system-wide local
/// set woke it for every pipe in the system: the harness's `/init`, which
/// polls its program's output pipes, ran its `poll` on every write of a
/// pipe benchmark.
pub struct OwnPollers {
    set: KernelTicketLock<PollerSet<Arc<sched::Thread>>>,
    gate: PollerGate,
}

impl OwnPollers {
    pub const fn new() -> Self {
        Self { set: KernelTicketLock::new(POLLERS_LEVEL, PollerSet::new()), gate: PollerGate::new() }
    }

    /// The object changed (its data already has): wake its pollers. One
    /// atomic load when nobody polls it.
    pub fn changed(&self) {
        if !self.gate.anyone() {
            return;
        }
        let woken = self.set.lock().changed();
        for thread in &woken {
            sched::unpark(thread);
        }
    }
}

impl Default for OwnPollers {
    fn default() -> Self {
        Self::new()
    }
}

/// An object with a poller set of its own.
pub trait HasOwnPollers: Send + Sync {
    fn own_pollers(&self) -> &OwnPollers;
}

/// The calling thread, registered as a poller until dropped.
pub struct Registration {
    me: Arc<sched::Thread>,
    /// Per set: the generation seen, `None` when not registered there.
    seen: [Option<u64>; 2],
    /// Objects' own sets it is in, with the generation seen of each.
    own: Vec<(Arc<dyn HasOwnPollers>, u64)>,
}

impl Registration {
    /// Registers the caller in every set.
    pub fn new() -> Registration {
        Self::in_sets(&SOURCES)
    }

    /// Registers the caller in `source`'s set only.
    pub fn only(source: Source) -> Registration {
        Self::in_sets(&[source])
    }

    fn in_sets(sources: &[Source]) -> Registration {
        let me = sched::current();
        let mut seen = [None; 2];
        for &source in sources {
            let index = source as usize;
            GATES[index].enter();
            seen[index] = Some(POLLERS[index].lock().register(me.clone()));
        }
        Registration { me, seen, own: Vec::new() }
    }

    /// Registers the caller in the own sets of `objects` only: for a
    /// waiter whose every object has one. Without memory for the list,
    /// the local set instead (every object with an own set also changes
    /// the local set).
    pub fn in_own_sets(objects: &[Arc<dyn HasOwnPollers>]) -> Registration {
        let me = sched::current();
        let mut own = Vec::new();
        if own.try_reserve_exact(objects.len()).is_err() {
            return Self::only(Source::Local);
        }
        for object in objects {
            let pollers = object.own_pollers();
            pollers.gate.enter();
            let seen = pollers.set.lock().register(me.clone());
            own.push((object.clone(), seen));
        }
        Registration { me, seen: [None; 2], own }
    }

    /// Leaves `source`'s set, if it is in it.
    fn leave(&mut self, source: Source) {
        let index = source as usize;
        if self.seen[index].take().is_some() {
            POLLERS[index].lock().unregister(|thread| Arc::ptr_eq(thread, &self.me));
            GATES[index].leave();
        }
    }

    /// Whether a change came since it registered (or since `renew`) in a
    /// set it is in.
    pub fn changed(&self) -> bool {
        SOURCES.iter().any(|&source| self.seen[source as usize].is_some_and(|seen| POLLERS[source as usize].lock().moved_since(seen)))
            || self.own.iter().any(|(object, seen)| object.own_pollers().set.lock().moved_since(*seen))
    }

    /// Takes the current generations as seen (before the next check).
    pub fn renew(&mut self) {
        for source in SOURCES {
            let index = source as usize;
            if let Some(seen) = self.seen[index].as_mut() {
                *seen = POLLERS[index].lock().generation();
            }
        }
        for (object, seen) in &mut self.own {
            *seen = object.own_pollers().set.lock().generation();
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        for source in SOURCES {
            self.leave(source);
        }
        for (object, _) in self.own.drain(..) {
            let pollers = object.own_pollers();
            pollers.set.lock().unregister(|thread| Arc::ptr_eq(thread, &self.me));
            pollers.gate.leave();
        }
    }
}
