//! Timer system calls: `alarm`, `setitimer` and `getitimer` on the
//! real-time timer (`ITIMER_REAL`, SIGALRM; `crate::itimers` keeps it), and
//! `ITIMER_VIRTUAL` and `ITIMER_PROF` on the process's CPU time
//! (`crate::cpu_itimers`), and the POSIX timers of `timer_create`
//! (`crate::posix_timers`).

use super::{value, Call, CallResult, UserPtr};
use crate::cpu_itimers::{self, CpuTimerKind};
use linux_abi::cpu_times::{CpuClock, CpuClockOwner};
use crate::clock::Limit;
use crate::{itimers, posix_timers};
use linux_abi::sigevent::{parse_sigevent, SIGEVENT_READ_BYTES};
use linux_abi::{Errno, ItimerSpec, ItimerVal, Timespec, Timeval};

const ITIMER_REAL: u64 = 0;
const ITIMER_VIRTUAL: u64 = 1;
const ITIMER_PROF: u64 = 2;
const NANOSECONDS_PER_SECOND: u64 = 1_000_000_000;

/// The CPU timer `which` names (`None`: the real one); EINVAL for none.
fn which_timer(which: u64) -> Result<Option<CpuTimerKind>, Errno> {
    match which {
        ITIMER_REAL => Ok(None),
        ITIMER_VIRTUAL => Ok(Some(CpuTimerKind::Virtual)),
        ITIMER_PROF => Ok(Some(CpuTimerKind::Profile)),
        _ => Err(Errno::EINVAL),
    }
}

fn as_itimerval((remaining, interval): (u64, u64)) -> ItimerVal {
    ItimerVal { interval: Timeval::from_nanoseconds(interval), value: round_up_to_microseconds(remaining) }
}

/// A remaining time in whole microseconds, rounded up, so that an armed
/// timer never reads as zero (disarmed).
fn round_up_to_microseconds(nanoseconds: u64) -> Timeval {
    Timeval::from_nanoseconds(nanoseconds.div_ceil(1000).saturating_mul(1000))
}

pub fn setitimer(call: &mut Call<'_>) -> CallResult {
    let which = which_timer(call.argument(0))?;
    let new = UserPtr::<ItimerVal>::argument(call, 1).ok_or(Errno::EFAULT)?.read(call)?;
    let old_out = UserPtr::<ItimerVal>::argument(call, 2);
    let (first, interval) = (new.value.as_nanoseconds(), new.interval.as_nanoseconds());
    let old = match which {
        None => itimers::set(call.process, first, interval)?,
        Some(kind) => cpu_itimers::set(call.process, kind, first, interval),
    };
    if let Some(out) = old_out {
        out.write(call, &as_itimerval(old))?;
    }
    value(0)
}

pub fn getitimer(call: &mut Call<'_>) -> CallResult {
    let which = which_timer(call.argument(0))?;
    let out = UserPtr::<ItimerVal>::argument(call, 1).ok_or(Errno::EFAULT)?;
    let current = match which {
        None => call.process.state().real_timer.remaining(machine::timer::uptime_nanoseconds()),
        Some(kind) => cpu_itimers::get(call.process, kind),
    };
    out.write(call, &as_itimerval(current))?;
    value(0)
}

/// `alarm(seconds)`: a one-shot real timer; returns the seconds left of
/// the old one, rounded to the nearest second but at least 1 if it was
/// armed (Linux's rule).
pub fn alarm(call: &mut Call<'_>) -> CallResult {
    let seconds = call.argument(0) as u32;
    let (remaining, _) = itimers::set(call.process, u64::from(seconds) * NANOSECONDS_PER_SECOND, 0)?;
    let left = if remaining == 0 { 0 } else { ((remaining + NANOSECONDS_PER_SECOND / 2) / NANOSECONDS_PER_SECOND).max(1) };
    value(left)
}

/// `timer_create(clock, sigevent, id)`: the clocks Linux has timers on
/// (EOPNOTSUPP for the raw and coarse ones, EINVAL for others).
pub fn timer_create(call: &mut Call<'_>) -> CallResult {
    use super::clocks::{timer_clock_is_realtime, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE};
    // A CPU clock: the process's or one of its threads' (another
    // process's: EINVAL here).
    let cpu = match CpuClock::decode(call.argument(0) as i32)? {
        None => None,
        Some(clock) => Some(match clock.owner {
            CpuClockOwner::ThisProcess => None,
            CpuClockOwner::Process(pid) if pid == call.pid() => None,
            CpuClockOwner::ThisThread => Some(call.thread.tid),
            CpuClockOwner::Thread(tid) if call.process.has_thread(tid) => Some(tid),
            _ => return Err(Errno::EINVAL),
        }),
    };
    let realtime = match (cpu, timer_clock_is_realtime(call.argument(0))) {
        (Some(_), _) => false,
        (None, Some(realtime)) => realtime,
        (None, None) if matches!(call.argument(0), CLOCK_MONOTONIC_RAW | CLOCK_REALTIME_COARSE | CLOCK_MONOTONIC_COARSE) => return Err(Errno::EOPNOTSUPP),
        (None, None) => return Err(Errno::EINVAL),
    };
    let notify = match call.argument(1) {
        0 => None,
        address => {
            let mut bytes = [0u8; SIGEVENT_READ_BYTES];
            call.read_in(address, &mut bytes)?;
            let process = call.process.clone();
            Some(parse_sigevent(&bytes, |tid| process.has_thread(tid))?)
        }
    };
    let id = posix_timers::create(call.process, realtime, cpu, notify)?;
    if let Err(errno) = call.write_out(call.argument(2), &(id as i32).to_le_bytes()) {
        let _ = posix_timers::delete(call.process, id);
        return Err(errno);
    }
    value(0)
}

fn as_itimerspec((remaining, interval): (u64, u64)) -> ItimerSpec {
    ItimerSpec { interval: Timespec::from_nanoseconds(interval), value: Timespec::from_nanoseconds(remaining) }
}

/// `timer_settime(id, flags, new, old)`: relative, or with `TIMER_ABSTIME`
/// a time on the timer's clock (one already past expires at once).
pub fn timer_settime(call: &mut Call<'_>) -> CallResult {
    const TIMER_ABSTIME: u64 = 1;
    let (id, flags) = (call.argument(0) as u32, call.argument(1));
    let new = UserPtr::<ItimerSpec>::argument(call, 2).ok_or(Errno::EINVAL)?.read(call)?;
    if posix_timers::cpu_owner(call.process, id)?.is_some() {
        let old = posix_timers::set_cpu(call.process, id, new.value.as_nanoseconds(), flags & TIMER_ABSTIME != 0, new.interval.as_nanoseconds())?;
        if let Some(out) = UserPtr::<ItimerSpec>::argument(call, 3) {
            out.write(call, &as_itimerspec(old))?;
        }
        return value(0);
    }
    let realtime = posix_timers::is_realtime(call.process, id)?;
    let now = crate::clock::monotonic_nanoseconds();
    let deadline = match (new.value.as_nanoseconds(), flags & TIMER_ABSTIME != 0) {
        (0, _) => None,
        (relative, false) => Some(Limit::Uptime(now.saturating_add(relative))),
        // Moves with `clock_settime`, as on Linux.
        (absolute, true) if realtime => Some(Limit::Realtime(absolute)),
        (absolute, true) => Some(Limit::Uptime(absolute.max(now))),
    };
    let old = posix_timers::set(call.process, id, deadline, new.interval.as_nanoseconds())?;
    if let Some(out) = UserPtr::<ItimerSpec>::argument(call, 3) {
        out.write(call, &as_itimerspec(old))?;
    }
    value(0)
}

pub fn timer_gettime(call: &mut Call<'_>) -> CallResult {
    let current = posix_timers::get(call.process, call.argument(0) as u32)?;
    UserPtr::<ItimerSpec>::argument(call, 1).ok_or(Errno::EFAULT)?.write(call, &as_itimerspec(current))?;
    value(0)
}

pub fn timer_getoverrun(call: &mut Call<'_>) -> CallResult {
    value(u64::from(posix_timers::overrun(call.process, call.argument(0) as u32)?))
}

pub fn timer_delete(call: &mut Call<'_>) -> CallResult {
    posix_timers::delete(call.process, call.argument(0) as u32)?;
    value(0)
}
