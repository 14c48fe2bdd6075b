//! Time system calls: clocks (realtime, monotonic and their variants),
//! `gettimeofday`, `time`, and sleeping (ended early by signals).

use super::{value, Call, CallResult, UserPtr};
use linux_abi::{Timespec, Timeval};
use linux_abi::cpu_times::{CpuClock, CpuClockOwner};
use linux_abi::Errno;
use crate::clock::{monotonic_nanoseconds, realtime_nanoseconds, Limit};

pub(super) const CLOCK_REALTIME: u64 = 0;
pub(super) const CLOCK_MONOTONIC: u64 = 1;
pub(super) const CLOCK_MONOTONIC_RAW: u64 = 4;
pub(super) const CLOCK_REALTIME_COARSE: u64 = 5;
pub(super) const CLOCK_MONOTONIC_COARSE: u64 = 6;
pub(super) const CLOCK_BOOTTIME: u64 = 7;
const CLOCK_REALTIME_ALARM: u64 = 8;
const CLOCK_BOOTTIME_ALARM: u64 = 9;

/// For the clocks timers run on (`timer_create`, `timerfd_create`):
/// whether absolute times are on CLOCK_REALTIME (`Some(true)`) or on the
/// uptime (`Some(false)`: MONOTONIC, BOOTTIME); the alarm forms count as
/// their clocks (root may use them). `None` for any other clock.
pub(super) fn timer_clock_is_realtime(id: u64) -> Option<bool> {
    match id {
        CLOCK_REALTIME | CLOCK_REALTIME_ALARM => Some(true),
        CLOCK_MONOTONIC | CLOCK_BOOTTIME | CLOCK_BOOTTIME_ALARM => Some(false),
        _ => None,
    }
}

fn clock(id: u64) -> Result<u64, Errno> {
    match id {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE => Ok(realtime_nanoseconds()),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => Ok(monotonic_nanoseconds()),
        _ => Err(Errno::EINVAL),
    }
}

/// The reading of clock `id` for `call`'s process and thread: the system
/// clocks, or a CPU clock of this or another process or thread (EINVAL
/// for a malformed or unknown id, as Linux answers for a process or thread
/// that does not exist).
fn clock_of(call: &Call<'_>, id: u64) -> Result<u64, Errno> {
    let Some(cpu_clock) = CpuClock::decode(id as i32)? else { return clock(id) };
    let times = match cpu_clock.owner {
        CpuClockOwner::ThisProcess => call.process.cpu_times(),
        CpuClockOwner::ThisThread => call.process.thread_cpu_times(call.thread.tid).ok_or(Errno::EINVAL)?,
        CpuClockOwner::Process(pid) => crate::process::find(pid).ok_or(Errno::EINVAL)?.cpu_times(),
        CpuClockOwner::Thread(tid) => call.process.thread_cpu_times(tid).ok_or(Errno::EINVAL)?,
    };
    Ok(cpu_clock.reading(times))
}

pub fn clock_gettime(call: &mut Call<'_>) -> CallResult {
    let now = clock_of(call, call.argument(0))?;
    let out = UserPtr::<Timespec>::argument(call, 1).ok_or(Errno::EFAULT)?;
    out.write(call, &Timespec::from_nanoseconds(now))?;
    value(0)
}

/// `clock_settime`: only `CLOCK_REALTIME` can be set (EINVAL for the
/// others, as Linux's clocks without a setter); EINVAL for a negative or
/// unnormalized time.
pub fn clock_settime(call: &mut Call<'_>) -> CallResult {
    if call.argument(0) != CLOCK_REALTIME {
        return Err(Errno::EINVAL);
    }
    let now = duration(call, UserPtr::<Timespec>::argument(call, 1))?;
    crate::clock::set_realtime(now);
    value(0)
}

/// `settimeofday`: sets `CLOCK_REALTIME` from a `timeval` (EINVAL for a
/// bad one); the time-zone argument is accepted and ignored.
pub fn settimeofday(call: &mut Call<'_>) -> CallResult {
    if let Some(time) = UserPtr::<Timeval>::argument(call, 0) {
        crate::clock::set_realtime(time.read(call)?.as_nanoseconds());
    }
    value(0)
}

pub fn clock_getres(call: &mut Call<'_>) -> CallResult {
    clock_of(call, call.argument(0))?;
    if let Some(out) = UserPtr::<Timespec>::argument(call, 1) {
        out.write(call, &Timespec::from_nanoseconds(1))?;
    }
    value(0)
}

pub fn gettimeofday(call: &mut Call<'_>) -> CallResult {
    if let Some(out) = UserPtr::<Timeval>::argument(call, 0) {
        out.write(call, &Timeval::from_nanoseconds(realtime_nanoseconds()))?;
    }
    value(0)
}

pub fn time(call: &mut Call<'_>) -> CallResult {
    let seconds = realtime_nanoseconds() / 1_000_000_000;
    if let Some(out) = UserPtr::<u64>::argument(call, 0) {
        out.write(call, &seconds)?;
    }
    value(seconds)
}

/// Reads a `timespec` duration (EINVAL for a negative or unnormalized one,
/// EFAULT for NULL).
pub fn duration(call: &Call<'_>, pointer: Option<UserPtr<Timespec>>) -> Result<u64, Errno> {
    Ok(pointer.ok_or(Errno::EFAULT)?.read(call)?.as_nanoseconds())
}

/// Sleeps until `limit`; on a signal writes what is left to `remaining`
/// (if not 0) and ends with EINTR if a handler runs, or goes on to the
/// same limit through `restart_syscall` if none does.
fn sleep(call: &mut Call<'_>, limit: Limit, remaining: Option<UserPtr<Timespec>>) -> CallResult {
    match crate::clock::sleep_until(limit, || call.interrupted()) {
        sched::Woken::Deadline => value(0),
        sched::Woken::Done => {
            if let Some(remaining) = &remaining {
                let left = limit.deadline().saturating_sub(monotonic_nanoseconds());
                remaining.write(call, &Timespec::from_nanoseconds(left))?;
            }
            call.thread.restart_block = Some(crate::run::SleepRestart { limit, remaining: remaining.map_or(0, |pointer| pointer.address()) });
            Err(linux_abi::restart::ERESTART_RESTARTBLOCK)
        }
    }
}

/// `restart_syscall`: goes on with the sleep a signal interrupted (EINTR
/// when there is none, as Linux).
pub fn restart_syscall(call: &mut Call<'_>) -> CallResult {
    match call.thread.restart_block.take() {
        Some(block) => {
            let remaining = UserPtr::<Timespec>::at(block.remaining);
            sleep(call, block.limit, remaining)
        }
        None => Err(Errno::EINTR),
    }
}

pub fn nanosleep(call: &mut Call<'_>) -> CallResult {
    let span = duration(call, UserPtr::argument(call, 0))?;
    sleep(call, Limit::Uptime(monotonic_nanoseconds().saturating_add(span)), UserPtr::argument(call, 1))
}

pub fn clock_nanosleep(call: &mut Call<'_>) -> CallResult {
    const TIMER_ABSTIME: u64 = 1;
    let (id, flags) = (call.argument(0), call.argument(1));
    // A thread's CPU clock cannot be slept on (EINVAL, as Linux); a
    // process's is taken to advance as elapsed time does.
    if let Some(CpuClock { owner: CpuClockOwner::ThisThread | CpuClockOwner::Thread(_), .. }) = CpuClock::decode(id as i32)? {
        return Err(Errno::EINVAL);
    }
    let now = clock_of(call, id)?;
    let span = duration(call, UserPtr::argument(call, 2))?;
    let absolute = flags & TIMER_ABSTIME != 0;
    let limit = match (absolute, id) {
        // Until a wall-clock time: moves when the clock is set.
        (true, CLOCK_REALTIME | CLOCK_REALTIME_ALARM) => Limit::Realtime(span),
        (true, _) => Limit::Uptime(monotonic_nanoseconds() + span.saturating_sub(now)),
        (false, _) => Limit::Uptime(monotonic_nanoseconds().saturating_add(span)),
    };
    sleep(call, limit, if absolute { None } else { UserPtr::argument(call, 3) })
}
