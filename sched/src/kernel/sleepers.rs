//! Timed sleep: a thread sleeps until a deadline on the uptime clock (or
//! until something it waits for happens). Sleepers sit in one list; every
//! CPU's timer tick wakes the expired ones, so a sleep ends within one
//! tick (10 ms) after its deadline.
//!
//! Must never lose a wake-up: a sleeper joins the list before it checks
//! its condition, and `park` keeps a permit given before it parks.

use alloc::sync::Arc;
use alloc::vec::Vec;

use machine::irq_lock::IrqLock;
use machine::timer;

use super::scheduler::{current, park, unpark};
use super::thread::Thread;

static SLEEPERS: IrqLock<Vec<(u64, Arc<Thread>)>> = IrqLock::new(Vec::new());

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
    let queued = {
        let mut sleepers = SLEEPERS.lock();
        let room = sleepers.try_reserve(1).is_ok();
        if room {
            sleepers.push((deadline, me.clone()));
        }
        room
    };
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
        SLEEPERS.lock().retain(|(_, thread)| !Arc::ptr_eq(thread, &me));
    }
    woken
}

/// Wakes the sleepers whose deadline passed (from the timer tick).
pub(crate) fn wake_expired() {
    let now = timer::uptime_nanoseconds();
    let mut sleepers = SLEEPERS.lock();
    for (deadline, thread) in sleepers.iter() {
        if *deadline <= now {
            unpark(thread);
        }
    }
    sleepers.retain(|(deadline, _)| *deadline > now);
}
