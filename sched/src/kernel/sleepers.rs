//! Timed sleep: a thread sleeps until a deadline on the uptime clock (or
//! until something it waits for happens). Each CPU keeps the sleepers
//! homed on it in its own [`SleepList`]; its timer tick wakes the expired
//! ones, so a sleep ends within one tick (10 ms) after its deadline, and a
//! tick takes no lock at all while nothing on its CPU is due.
//!
//! Must never lose a wake-up: a sleeper joins the list before it checks
//! its condition, and `park` keeps a permit given before it parks. The
//! list's lock is the machine layer's `IrqLock`, the lowest in the lock
//! order: nothing is woken while it is held.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use machine::irq_lock::IrqLock;
use machine::percpu::{self, MAX_CPUS};
use machine::timer;

use super::scheduler::{current, park, unpark};
use super::thread::Thread;
use crate::sleep_list::SleepList;

/// One CPU's sleepers and, readable without the lock, their earliest
/// deadline.
struct CpuSleepers {
    list: IrqLock<SleepList<Arc<Thread>>>,
    earliest: AtomicU64,
}

impl CpuSleepers {
    const fn new() -> Self {
        Self { list: IrqLock::new(SleepList::new()), earliest: AtomicU64::new(u64::MAX) }
    }

    /// Runs `change` on the list and republishes the earliest deadline.
    fn change<R>(&self, change: impl FnOnce(&mut SleepList<Arc<Thread>>) -> R) -> R {
        let mut list = self.list.lock();
        let result = change(&mut list);
        // Release, under the lock: a tick that reads the new value sees the
        // list it describes once it takes the lock.
        self.earliest.store(list.earliest(), Ordering::Release);
        result
    }
}

static SLEEPERS: [CpuSleepers; MAX_CPUS] = [const { CpuSleepers::new() }; MAX_CPUS];

/// Why a sleep ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Woken {
    /// The deadline passed.
    Deadline,
    /// `done` became true first.
    Done,
}

/// Sleeps until the uptime clock reaches `deadline` (nanoseconds) or
/// `done` holds; whoever makes `done` true must `unpark` this thread.
/// Without room to queue (out of heap) it yields until then instead.
pub fn sleep_until(deadline: u64, done: impl Fn() -> bool) -> Woken {
    let me = current();
    // The list of the CPU the thread runs on: its home, whose tick wakes it.
    let sleepers = &SLEEPERS[percpu::current_index()];
    let queued = sleepers.change(|list| list.add(deadline, me.clone()).is_ok());
    let woken = loop {
        if done() {
            break Woken::Done;
        }
        if timer::uptime_nanoseconds() >= deadline {
            break Woken::Deadline;
        }
        if queued {
            park();
        } else {
            super::scheduler::yield_now();
        }
    };
    if queued {
        sleepers.change(|list| list.remove(|thread| Arc::ptr_eq(thread, &me)));
    }
    woken
}

/// Wakes this CPU's sleepers whose deadline passed (from its timer tick).
pub(crate) fn wake_expired() {
    let sleepers = &SLEEPERS[percpu::current_index()];
    let now = timer::uptime_nanoseconds();
    // Acquire: pairs with the Release in `change`.
    if sleepers.earliest.load(Ordering::Acquire) > now {
        return;
    }
    while let Some(thread) = sleepers.change(|list| list.take_expired(now)) {
        unpark(&thread);
    }
}
