//! Time system calls: clocks (realtime, monotonic and their variants),
//! `gettimeofday`, `time`, and sleeping (ended early by signals).

use super::{value, Call, CallResult};
use linux_abi::Errno;
use crate::clock::{monotonic_nanoseconds, realtime_nanoseconds};

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
const CLOCK_MONOTONIC_RAW: u64 = 4;
const CLOCK_REALTIME_COARSE: u64 = 5;
const CLOCK_MONOTONIC_COARSE: u64 = 6;
const CLOCK_BOOTTIME: u64 = 7;

fn clock(id: u64) -> Result<u64, Errno> {
    match id {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE => Ok(realtime_nanoseconds()),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => Ok(monotonic_nanoseconds()),
        // No per-process CPU accounting yet: time since boot bounds it.
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => Ok(monotonic_nanoseconds()),
        _ => Err(Errno::EINVAL),
    }
}

fn timespec(nanoseconds: u64) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&(nanoseconds / 1_000_000_000).to_le_bytes());
    bytes[8..].copy_from_slice(&(nanoseconds % 1_000_000_000).to_le_bytes());
    bytes
}

pub fn clock_gettime(call: &mut Call<'_>) -> CallResult {
    let now = clock(call.argument(0))?;
    call.write_out(call.argument(1), &timespec(now))?;
    value(0)
}

pub fn clock_getres(call: &mut Call<'_>) -> CallResult {
    clock(call.argument(0))?;
    if call.argument(1) != 0 {
        call.write_out(call.argument(1), &timespec(1))?;
    }
    value(0)
}

pub fn gettimeofday(call: &mut Call<'_>) -> CallResult {
    if call.argument(0) != 0 {
        let now = realtime_nanoseconds();
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&(now / 1_000_000_000).to_le_bytes());
        bytes[8..].copy_from_slice(&((now % 1_000_000_000) / 1000).to_le_bytes());
        call.write_out(call.argument(0), &bytes)?;
    }
    value(0)
}

pub fn time(call: &mut Call<'_>) -> CallResult {
    let seconds = realtime_nanoseconds() / 1_000_000_000;
    if call.argument(0) != 0 {
        call.write_out(call.argument(0), &seconds.to_le_bytes())?;
    }
    value(seconds)
}

/// Reads a `timespec` duration (EINVAL for a negative or unnormalized one).
pub fn duration(call: &Call<'_>, address: u64) -> Result<u64, Errno> {
    let seconds = call.word_in(address)?;
    let nanoseconds = call.word_in(address + 8)?;
    if seconds as i64 <= -1 || nanoseconds >= 1_000_000_000 {
        return Err(Errno::EINVAL);
    }
    Ok(seconds.saturating_mul(1_000_000_000).saturating_add(nanoseconds))
}

/// Sleeps until uptime `deadline`; on a signal writes what is left to
/// `remaining` (if not 0) and fails with EINTR.
fn sleep(call: &Call<'_>, deadline: u64, remaining: u64) -> CallResult {
    match sched::sleep_until(deadline, || call.interrupted()) {
        sched::Woken::Deadline => value(0),
        sched::Woken::Done => {
            if remaining != 0 {
                let left = deadline.saturating_sub(monotonic_nanoseconds());
                call.write_out(remaining, &timespec(left))?;
            }
            Err(Errno::EINTR)
        }
    }
}

pub fn nanosleep(call: &mut Call<'_>) -> CallResult {
    let span = duration(call, call.argument(0))?;
    sleep(call, monotonic_nanoseconds().saturating_add(span), call.argument(1))
}

pub fn clock_nanosleep(call: &mut Call<'_>) -> CallResult {
    const TIMER_ABSTIME: u64 = 1;
    let (id, flags, request, remaining) = (call.argument(0), call.argument(1), call.argument(2), call.argument(3));
    let now = clock(id)?;
    let span = duration(call, request)?;
    let deadline = if flags & TIMER_ABSTIME != 0 { monotonic_nanoseconds() + span.saturating_sub(now) } else { monotonic_nanoseconds().saturating_add(span) };
    sleep(call, deadline, if flags & TIMER_ABSTIME != 0 { 0 } else { remaining })
}
