//! Timers of a process that send it signals: the real-time interval timer
//! (`ITIMER_REAL`, which `setitimer`/`getitimer` and `alarm` use: SIGALRM
//! at the deadline, then every interval) and the POSIX timers of
//! `timer_create` (`crate::posix_timers`). Each is a [`TimerSlot`] in the
//! process state.
//!
//! An armed slot is served by a kernel thread (charged to the process's
//! container like any thread) sleeping until the deadline. Every change of
//! a slot bumps its generation and unparks the old thread, which sees the
//! generation move and leaves; so exactly one thread serves the current
//! setting. Process exit disarms every slot the same way. Fork gives the
//! child disarmed timers; `execve` keeps the real timer (as Linux does).
//!
//! Must not fire for a setting that has been replaced: the generation is
//! checked under the state lock right before firing.

use alloc::sync::Arc;

use super::process::{Process, ProcessState};
use super::signals::numbers::SIGALRM;
use crate::clock::Limit;
use linux_abi::Errno;

/// One timer's setting, in the process state.
#[derive(Default)]
pub struct TimerSlot {
    /// The next expiry (an absolute `CLOCK_REALTIME` one moves with
    /// `clock_settime`); `None`: disarmed.
    deadline: Option<Limit>,
    /// Re-arm period (ns) after an expiry; 0: one shot.
    interval: u64,
    /// Bumped by every change; a timer thread serves one generation.
    generation: u64,
    /// The thread serving the current generation.
    thread: Option<Arc<sched::Thread>>,
}

impl TimerSlot {
    /// Nanoseconds to the next expiry at `now` (0: disarmed), and the interval.
    pub fn remaining(&self, now: u64) -> (u64, u64) {
        match self.deadline {
            // An expiry due but not yet served counts as 1 ns, not as off.
            Some(deadline) => (deadline.deadline().saturating_sub(now).max(1), self.interval),
            None => (0, 0),
        }
    }

    /// Disarms it; the thread that served it, to unpark.
    fn disarm(&mut self) -> Option<Arc<sched::Thread>> {
        self.generation += 1;
        self.deadline = None;
        self.thread.take()
    }
}

/// Finds the slot `key` names in a process's state (`None`: it is gone).
pub type Locate = fn(&mut ProcessState, u32) -> Option<&mut TimerSlot>;
/// What an expiry does (sends the signal), called without the state lock,
/// with the number of further expiries of a periodic timer that passed
/// before its thread could run (Linux counts them as overruns at once).
pub type Fire = fn(&Arc<Process>, u32, u64);

/// A slot and what its expiries do.
#[derive(Clone, Copy)]
pub struct TimerKind {
    pub locate: Locate,
    pub fire: Fire,
}

/// Arms slot `key` to expire at `deadline` (`None`: disarm) and then every
/// `interval` ns on the same clock; returns the old setting as
/// [`TimerSlot::remaining`] gives it. EINVAL when there is no such slot.
pub fn arm(process: &Arc<Process>, kind: TimerKind, key: u32, deadline: Option<Limit>, interval: u64) -> Result<(u64, u64), Errno> {
    let now = machine::timer::uptime_nanoseconds();
    let (old, replaced, generation) = {
        let mut state = process.state();
        let slot = (kind.locate)(&mut state, key).ok_or(Errno::EINVAL)?;
        let old = slot.remaining(now);
        let replaced = slot.disarm();
        slot.deadline = deadline;
        slot.interval = if deadline.is_some() { interval } else { 0 };
        (old, replaced, slot.generation)
    };
    if let Some(thread) = replaced {
        sched::unpark(&thread);
    }
    if deadline.is_some() {
        let server = process.clone();
        let thread = sched::spawn("timer", move || serve(server, kind, key, generation)).map_err(|_| Errno::EAGAIN)?;
        let mut state = process.state();
        if let Some(slot) = (kind.locate)(&mut state, key).filter(|slot| slot.generation == generation) {
            slot.thread = Some(thread);
        }
    }
    Ok(old)
}

/// Disarms slot `key` (a timer deleted, a process ending).
pub fn disarm(process: &Process, locate: Locate, key: u32) {
    let replaced = (locate)(&mut process.state(), key).and_then(TimerSlot::disarm);
    if let Some(thread) = replaced {
        sched::unpark(&thread);
    }
}

/// The body of a timer thread: sleeps to each deadline of `generation` and
/// fires, until the setting changes, runs out or the process ends.
fn serve(process: Arc<Process>, kind: TimerKind, key: u32, generation: u64) {
    let current = |process: &Process| {
        let mut state = process.state();
        if state.exit_status.is_some() {
            return None;
        }
        (kind.locate)(&mut state, key).filter(|slot| slot.generation == generation).and_then(|slot| slot.deadline)
    };
    while let Some(deadline) = current(&process) {
        if crate::clock::sleep_until(deadline, || current(&process).is_none()) == sched::Woken::Done {
            return;
        }
        let missed = {
            let mut state = process.state();
            let Some(slot) = (kind.locate)(&mut state, key).filter(|slot| slot.generation == generation) else { return };
            // Late (a slow or starved CPU): the periods that passed
            // meanwhile are expiries too, counted now, not fired one by one
            // after the reader may already have looked.
            let missed = if slot.interval > 0 { machine::timer::uptime_nanoseconds().saturating_sub(deadline.deadline()) / slot.interval } else { 0 };
            slot.deadline = (slot.interval > 0).then(|| deadline.later_by(slot.interval.saturating_mul(missed.saturating_add(1))));
            if slot.deadline.is_none() {
                slot.thread = None;
            }
            missed
        };
        (kind.fire)(&process, key, missed);
    }
}

/// `ITIMER_REAL`: the slot in the state, SIGALRM on expiry.
pub const REAL_TIMER: TimerKind = TimerKind { locate: |state, _| Some(&mut state.real_timer), fire: |process, _, _| crate::signal_sending::send_signal(process, SIGALRM) };

/// Sets the real timer to expire `value` ns from now (0: disarm) and then
/// every `interval` ns; returns the old setting.
pub fn set(process: &Arc<Process>, value: u64, interval: u64) -> Result<(u64, u64), Errno> {
    let deadline = (value > 0).then(|| Limit::Uptime(machine::timer::uptime_nanoseconds().saturating_add(value)));
    arm(process, REAL_TIMER, 0, deadline, interval)
}
