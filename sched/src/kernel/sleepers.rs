//! Timed sleep: a thread sleeps until a deadline on the uptime clock (or
//! until something it waits for happens). Each CPU keeps the sleepers
//! homed on it in its own [`SleepList`]; its timer tick wakes the expired
//! ones, so a sleep ends within one tick (10 ms) after its deadline, and a
//! tick takes no lock at all while nothing on its CPU is due.
//!
//! Must never lose a wake-up: a sleeper joins the list before it checks
//! its condition, and `park` keeps a permit given before it parks. Nothing
//! is woken while a list's lock is held.

use alloc::sync::Arc;

use machine::percpu::{self, MAX_CPUS};
use machine::timer;
use spinlock::kernel::{IrqOff, PerCpuLevels};

use super::lock::THREADS_LEVEL;
use super::scheduler::{current, park, unpark};
use super::thread::Thread;
use crate::sleep_list::CpuSleepers;

/// Each CPU's sleepers (the lock keeps interrupts off, so that CPU's tick
/// never finds it held by the code it interrupted).
static SLEEPERS: [CpuSleepers<Arc<Thread>, IrqOff, PerCpuLevels>; MAX_CPUS] =
    [const { CpuSleepers::new(THREADS_LEVEL) }; MAX_CPUS];

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

/// Wakes this CPU's sleepers whose deadline is at or before `now` (from
/// its timer tick).
pub(crate) fn wake_expired(now: u64) {
    SLEEPERS[percpu::current_index()].tick(now, |thread| unpark(&thread));
}

/// Ticks of CPU `cpu` that had to wait for its sleeper list (another CPU
/// held it); for stall reports, should stay 0.
pub fn contended_ticks(cpu: usize) -> u64 {
    SLEEPERS.get(cpu).map_or(0, CpuSleepers::contended_ticks)
}
