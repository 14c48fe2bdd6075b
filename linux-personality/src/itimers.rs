//! The real-time interval timer of a process (`ITIMER_REAL`), which both
//! `setitimer`/`getitimer` and `alarm` use: SIGALRM at the deadline, then
//! every interval if one is set.
//!
//! An armed timer is a kernel thread (charged to the process's container
//! like any thread) sleeping until the deadline. Every change of the timer
//! bumps its generation and unparks the old thread, which sees the
//! generation move and leaves; so exactly one thread serves the current
//! setting. Process exit disarms it the same way. Fork gives the child a
//! disarmed timer; `execve` keeps it (as Linux does).
//!
//! Must not send a signal for a setting that has been replaced: the
//! generation is checked under the state lock right before sending.

use alloc::sync::Arc;

use super::process::Process;
use super::signals::numbers::SIGALRM;
use linux_abi::Errno;

/// The timer's setting, in the process state.
#[derive(Default)]
pub struct RealTimer {
    /// Uptime (ns) of the next expiry; `None`: disarmed.
    pub deadline: Option<u64>,
    /// Re-arm period (ns) after an expiry; 0: one shot.
    pub interval: u64,
    /// Bumped by every change; a timer thread serves one generation.
    generation: u64,
    /// The thread serving the current generation.
    thread: Option<Arc<sched::Thread>>,
}

impl RealTimer {
    /// Nanoseconds to the next expiry at `now` (0: disarmed), and the interval.
    pub fn remaining(&self, now: u64) -> (u64, u64) {
        match self.deadline {
            // An expiry due but not yet served counts as 1 ns, not as off.
            Some(deadline) => (deadline.saturating_sub(now).max(1), self.interval),
            None => (0, 0),
        }
    }
}

/// Sets the timer to expire `value` ns from now (0: disarm) and then every
/// `interval` ns; returns the old setting as `RealTimer::remaining` gives it.
pub fn set(process: &Arc<Process>, value: u64, interval: u64) -> Result<(u64, u64), Errno> {
    let now = machine::timer::uptime_nanoseconds();
    let (old, replaced, generation) = {
        let mut state = process.state();
        let timer = &mut state.real_timer;
        let old = timer.remaining(now);
        timer.generation += 1;
        timer.deadline = (value > 0).then(|| now.saturating_add(value));
        timer.interval = if value > 0 { interval } else { 0 };
        (old, timer.thread.take(), timer.generation)
    };
    if let Some(thread) = replaced {
        sched::unpark(&thread);
    }
    if value > 0 {
        let server = process.clone();
        let thread = sched::spawn("itimer", move || serve(server, generation)).map_err(|_| Errno::EAGAIN)?;
        let mut state = process.state();
        if state.real_timer.generation == generation {
            state.real_timer.thread = Some(thread);
        }
    }
    Ok(old)
}

/// Disarms the timer of a process that is ending.
pub fn disarm(process: &Process) {
    let replaced = {
        let mut state = process.state();
        state.real_timer.generation += 1;
        state.real_timer.deadline = None;
        state.real_timer.thread.take()
    };
    if let Some(thread) = replaced {
        sched::unpark(&thread);
    }
}

/// The body of a timer thread: sleeps to each deadline of `generation` and
/// sends SIGALRM, until the setting changes, runs out or the process ends.
fn serve(process: Arc<Process>, generation: u64) {
    let current = |process: &Process| {
        let state = process.state();
        (state.real_timer.generation == generation && state.exit_status.is_none()).then_some(state.real_timer.deadline).flatten()
    };
    while let Some(deadline) = current(&process) {
        if sched::sleep_until(deadline, || current(&process).is_none()) == sched::Woken::Done {
            return;
        }
        {
            let mut state = process.state();
            let timer = &mut state.real_timer;
            if timer.generation != generation {
                return;
            }
            timer.deadline = (timer.interval > 0).then(|| deadline.saturating_add(timer.interval));
            if timer.deadline.is_none() {
                timer.thread = None;
            }
        }
        crate::syscall::send_signal(&process, SIGALRM);
    }
}
