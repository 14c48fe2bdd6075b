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

/// The system-wide sets, by [`Source`].
static SETS: [OwnPollers; 2] = [OwnPollers::new(), OwnPollers::new()];

/// Something local a poller may wait for changed (its data already is):
/// wake the local set's pollers. One atomic load when nobody polls.
pub fn changed() {
    changed_in(Source::Local);
}

/// As [`changed`], for a change in `source`.
pub fn changed_in(source: Source) {
    SETS[source as usize].changed();
}

/// A poller set with its gate: the system-wide sets are two, and each
/// pipe has one of its own, whose pollers wake on that pipe's changes
/// only. A `poll` of nothing but pipes waits in theirs. The system-wide
/// local set woke it for every pipe in the system: the harness's `/init`,
/// which polls its program's output pipes, ran its `poll` on every write
/// of a pipe benchmark.
pub struct OwnPollers {
    set: KernelTicketLock<PollerSet<Arc<sched::Thread>>>,
    /// The pollers, counted without the lock: a change with none skips it.
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

    /// Registers `me`; the generation it has seen.
    fn register(&self, me: &Arc<sched::Thread>) -> u64 {
        self.gate.enter();
        self.set.lock().register(me.clone())
    }

    /// Forgets `me` (registered before).
    fn unregister(&self, me: &Arc<sched::Thread>) {
        self.set.lock().unregister(|thread| Arc::ptr_eq(thread, me));
        self.gate.leave();
    }

    fn moved_since(&self, seen: u64) -> bool {
        self.set.lock().moved_since(seen)
    }

    fn generation(&self) -> u64 {
        self.set.lock().generation()
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
    /// Per system-wide set: the generation seen, `None` when not
    /// registered there.
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

    /// Registered nowhere: for a wait that never sleeps (a zero timeout;
    /// Linux's `poll` skips its poll table then too).
    pub fn none() -> Registration {
        Self::in_sets(&[])
    }

    fn in_sets(sources: &[Source]) -> Registration {
        let me = sched::current();
        let mut seen = [None; 2];
        for &source in sources {
            seen[source as usize] = Some(SETS[source as usize].register(&me));
        }
        Registration { me, seen, own: Vec::new() }
    }

    /// Registers the caller in the own sets of the `count` `objects` only:
    /// for a waiter whose every object has one. Without memory for the
    /// list, the local set instead (every object with an own set also
    /// changes the local set).
    pub fn in_own_sets(objects: impl Iterator<Item = Arc<dyn HasOwnPollers>>, count: usize) -> Registration {
        let me = sched::current();
        let mut own = Vec::new();
        if own.try_reserve_exact(count).is_err() {
            return Self::only(Source::Local);
        }
        for object in objects.take(count) {
            let seen = object.own_pollers().register(&me);
            own.push((object, seen));
        }
        Registration { me, seen: [None; 2], own }
    }

    /// Whether a change came since it registered (or since `renew`) in a
    /// set it is in.
    pub fn changed(&self) -> bool {
        SOURCES.iter().any(|&source| self.seen[source as usize].is_some_and(|seen| SETS[source as usize].moved_since(seen)))
            || self.own.iter().any(|(object, seen)| object.own_pollers().moved_since(*seen))
    }

    /// Takes the current generations as seen (before the next check).
    pub fn renew(&mut self) {
        for source in SOURCES {
            if let Some(seen) = self.seen[source as usize].as_mut() {
                *seen = SETS[source as usize].generation();
            }
        }
        for (object, seen) in &mut self.own {
            *seen = object.own_pollers().generation();
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        for source in SOURCES {
            if self.seen[source as usize].take().is_some() {
                SETS[source as usize].unregister(&self.me);
            }
        }
        for (object, _) in self.own.drain(..) {
            object.own_pollers().unregister(&self.me);
        }
    }
}
