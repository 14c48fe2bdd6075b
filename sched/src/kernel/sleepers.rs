//! Timed sleep: a thread sleeps until a deadline on the uptime clock (or
//! until something it waits for happens). Each CPU keeps the sleepers
//! homed on it in its own [`SleepList`]; its timer wakes the expired ones.
//! The timer is one-shot, armed for the earlier of the next periodic tick
//! and the earliest deadline on the list (`crate::tick_plan`), so a sleep
//! ends when its deadline passes, not on the next 10 ms tick.
//!
//! Must never lose a wake-up: a sleeper joins the list before it checks
//! its condition, and `park` keeps a permit given before it parks. Nothing
//! is woken while a list's lock is held.

use alloc::sync::Arc;
use alloc::vec::Vec;

use machine::percpu::{self, MAX_CPUS};
use machine::timer;
use spinlock::kernel::{IrqOff, PerCpuLevels};

use super::lock::THREADS_LEVEL;
use super::scheduler::{current, fire_this_cpu_timer_by, park, unpark};
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
    // The list of the CPU the thread runs on: its home, whose timer wakes
    // it (interrupts off, so the thread is on that CPU when it arms it).
    let (sleepers, queued) = {
        let _off = machine::cpu::InterruptsOff::new();
        let sleepers = &SLEEPERS[percpu::current_index()];
        let queued = sleepers.change(|list| list.add(deadline, me.clone()).is_ok());
        if queued {
            fire_this_cpu_timer_by(deadline);
        }
        (sleepers, queued)
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
        sleepers.change(|list| list.remove(|thread| Arc::ptr_eq(thread, &me)));
    }
    woken
}

/// Wakes this CPU's sleepers whose deadline is at or before `now` (from
/// its timer interrupt); returns how many it woke.
pub(crate) fn wake_expired(now: u64) -> usize {
    let mut woken = 0;
    SLEEPERS[percpu::current_index()].tick(now, |thread| {
        woken += 1;
        unpark(&thread);
    });
    woken
}

/// Wakes every timed sleeper on every CPU, deadlines unchanged: for a
/// change of the wall clock, after which a sleeper whose limit is a wall
/// clock time works its deadline out again (`linux_objects::clock`), and
/// the others find their condition false and sleep on. Whoever changes
/// what sleepers check must do so before calling this (the loom model
/// `tests/loom_clock_set.rs`). Out of memory for the copy, a CPU's
/// sleepers keep their old deadlines.
pub fn wake_every_sleeper() {
    for sleepers in &SLEEPERS {
        let mut threads: Vec<Arc<Thread>> = Vec::new();
        // The list may grow between counting and copying: count again.
        let copied = (0..4).any(|_| {
            let wanted = sleepers.count() + 4;
            threads.try_reserve(wanted).is_ok() && sleepers.copy_sleepers(&mut threads)
        });
        if copied {
            threads.iter().for_each(unpark);
        }
    }
}

/// The earliest deadline among this CPU's sleepers (`u64::MAX`: none).
pub(crate) fn earliest_deadline() -> u64 {
    SLEEPERS[percpu::current_index()].earliest()
}

/// Ticks of CPU `cpu` that had to wait for its sleeper list (another CPU
/// held it); for stall reports, should stay 0.
pub fn contended_ticks(cpu: usize) -> u64 {
    SLEEPERS.get(cpu).map_or(0, CpuSleepers::contended_ticks)
}
