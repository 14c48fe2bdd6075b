//! Interval-timer system calls: `alarm`, `setitimer` and `getitimer` on
//! the real-time timer (`ITIMER_REAL`, SIGALRM; `crate::itimers` keeps it).
//! `ITIMER_VIRTUAL` and `ITIMER_PROF` need per-process CPU time, which the
//! kernel does not account yet: ENOSYS, not a silent success.

use super::{value, Call, CallResult, UserPtr};
use crate::itimers;
use linux_abi::{Errno, ItimerVal, Timeval};

const ITIMER_REAL: u64 = 0;
const ITIMER_VIRTUAL: u64 = 1;
const ITIMER_PROF: u64 = 2;
const NANOSECONDS_PER_SECOND: u64 = 1_000_000_000;

fn which_timer(which: u64) -> Result<(), Errno> {
    match which {
        ITIMER_REAL => Ok(()),
        ITIMER_VIRTUAL | ITIMER_PROF => Err(Errno::ENOSYS),
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
    which_timer(call.argument(0))?;
    let new = UserPtr::<ItimerVal>::argument(call, 1).ok_or(Errno::EFAULT)?.read(call)?;
    let old_out = UserPtr::<ItimerVal>::argument(call, 2);
    let old = itimers::set(call.process, new.value.as_nanoseconds(), new.interval.as_nanoseconds())?;
    if let Some(out) = old_out {
        out.write(call, &as_itimerval(old))?;
    }
    value(0)
}

pub fn getitimer(call: &mut Call<'_>) -> CallResult {
    which_timer(call.argument(0))?;
    let out = UserPtr::<ItimerVal>::argument(call, 1).ok_or(Errno::EFAULT)?;
    let now = machine::timer::uptime_nanoseconds();
    let current = call.process.state().real_timer.remaining(now);
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
