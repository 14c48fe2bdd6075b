//! `ITIMER_VIRTUAL` (SIGVTALRM on user time) and `ITIMER_PROF` (SIGPROF on
//! user and system time) of a process: two [`CpuIntervalTimer`]s in its
//! state, checked each time one of its threads comes back to the kernel
//! (a system call, a fault, or the timer tick that interrupts a thread
//! computing), only while one is armed.
//!
//! Fork gives the child disarmed timers; `execve` keeps them (Linux's
//! rules). May not send a signal with the state lock held.

use core::sync::atomic::Ordering;

use linux_abi::cpu_times::{CpuIntervalTimer, CpuTimes};

use crate::process::Process;
use crate::signals::numbers::{SIGKILL, SIGPROF, SIGVTALRM, SIGXCPU};
use linux_abi::resource_limits::{CpuVerdict, RLIMIT_CPU};

/// Which of the two.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CpuTimerKind {
    /// `ITIMER_VIRTUAL`: user time, SIGVTALRM.
    Virtual,
    /// `ITIMER_PROF`: user and system time, SIGPROF.
    Profile,
}

impl CpuTimerKind {
    fn reading(self, times: CpuTimes) -> u64 {
        match self {
            CpuTimerKind::Virtual => times.user,
            CpuTimerKind::Profile => times.total(),
        }
    }

    fn index(self) -> usize {
        match self {
            CpuTimerKind::Virtual => 0,
            CpuTimerKind::Profile => 1,
        }
    }

    fn signal(self) -> u32 {
        match self {
            CpuTimerKind::Virtual => SIGVTALRM,
            CpuTimerKind::Profile => SIGPROF,
        }
    }
}

const KINDS: [CpuTimerKind; 2] = [CpuTimerKind::Virtual, CpuTimerKind::Profile];

/// Arms (`value` 0: disarms) timer `kind` to expire after `value` ns of
/// CPU time, then every `interval`; the old `(time left, interval)`.
pub fn set(process: &Process, kind: CpuTimerKind, value: u64, interval: u64) -> (u64, u64) {
    let reading = kind.reading(process.cpu_times());
    let mut state = process.state();
    let slot = &mut state.cpu_timers[kind.index()];
    let old = slot.remaining(reading);
    *slot = CpuIntervalTimer::armed(reading, value, interval);
    let armed = state.cpu_timers.iter().any(CpuIntervalTimer::is_armed);
    process.cpu_timers_armed.store(armed, Ordering::Relaxed);
    old
}

/// Timer `kind`'s `(time left, interval)`.
pub fn get(process: &Process, kind: CpuTimerKind) -> (u64, u64) {
    let reading = kind.reading(process.cpu_times());
    process.state().cpu_timers[kind.index()].remaining(reading)
}

/// Sends the signal of each armed timer that has expired (these two and
/// the POSIX timers on CPU clocks). Cheap when none is armed (one relaxed
/// load).
#[inline]
pub fn check(process: &alloc::sync::Arc<Process>) {
    if process.cpu_timers_armed.load(Ordering::Relaxed) {
        check_armed(process);
    }
}

fn check_armed(process: &alloc::sync::Arc<Process>) {
    let times = process.cpu_times();
    let mut due = [false; 2];
    let verdict = {
        let mut state = process.state();
        for kind in KINDS {
            due[kind.index()] = state.cpu_timers[kind.index()].expire(kind.reading(times));
        }
        let limited = state.limits.get(RLIMIT_CPU).is_ok_and(|limit| limit != [u64::MAX; 2]);
        let armed = limited || state.cpu_timers.iter().any(CpuIntervalTimer::is_armed);
        process.cpu_timers_armed.store(armed, Ordering::Relaxed);
        // RLIMIT_CPU: SIGXCPU past the soft limit (each further second),
        // SIGKILL at the hard one.
        let seconds = times.total() / 1_000_000_000;
        let verdict = state.limits.cpu_verdict(seconds, state.cpu_warned);
        if verdict == CpuVerdict::Warn {
            state.cpu_warned = seconds;
        }
        verdict
    };
    match verdict {
        CpuVerdict::Warn => crate::signal_sending::send_signal(process, SIGXCPU),
        CpuVerdict::Kill => crate::signal_sending::send_signal(process, SIGKILL),
        CpuVerdict::Nothing => {}
    }
    for kind in KINDS.into_iter().filter(|kind| due[kind.index()]) {
        crate::signal_sending::send_signal(process, kind.signal());
    }
    let (expired, posix_armed) = crate::posix_timers::expired_cpu_timers(process, times);
    if posix_armed {
        process.cpu_timers_armed.store(true, Ordering::Relaxed);
    }
    for id in expired {
        crate::posix_timers::fire(process, id, 0);
    }
}
