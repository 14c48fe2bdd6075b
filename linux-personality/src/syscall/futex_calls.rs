//! `futex(2)`, `set_robust_list(2)` and `get_robust_list(2)`: decoding the
//! arguments of each operation and their time limits; the table, keys and
//! PI locks are `crate::futexes`.

use linux_abi::futex::{decode_operation, Command, WakeOp, MATCH_ANY, ROBUST_LIST_HEAD_BYTES};
use linux_abi::{Errno, Timespec};

use super::{value, Call, CallResult, UserPtr};
use crate::clock::Limit;
use crate::futexes::{self, WaitEnd};

pub fn futex(call: &mut Call<'_>) -> CallResult {
    let operation = decode_operation(call.argument(1) as u32)?;
    let (address, number) = (call.argument(0), call.argument(2) as u32);
    let key = futexes::key_for(call.process, address, operation.private)?;
    match operation.command {
        Command::Wait | Command::WaitBitset => {
            let bitset = if operation.command == Command::Wait { MATCH_ANY } else { call.argument(5) as u32 };
            let deadline = deadline(call, operation.command, operation.realtime)?;
            let memory = call.process.native.user_memory();
            let still_expected = || {
                let mut word = [0u8; 4];
                memory.read(address, &mut word)?;
                Ok(u32::from_le_bytes(word) == number)
            };
            match futexes::wait(key, bitset, deadline, still_expected, || call.interrupted())? {
                WaitEnd::Woken => value(0),
                WaitEnd::TimedOut => Err(Errno::ETIMEDOUT),
                WaitEnd::Interrupted => Err(Errno::EINTR),
            }
        }
        Command::Wake => value(futexes::wake(key, wake_limit(number), MATCH_ANY)? as u64),
        Command::WakeBitset => value(futexes::wake(key, wake_limit(number), call.argument(5) as u32)? as u64),
        Command::Requeue | Command::CompareRequeue => {
            let (move_limit, target) = (call.argument(3) as u32 as i32, call.argument(4));
            if (number as i32) < 0 || move_limit < 0 {
                return Err(Errno::EINVAL);
            }
            let to = futexes::key_for(call.process, target, operation.private)?;
            if operation.command == Command::CompareRequeue {
                let mut word = [0u8; 4];
                call.read_in(address, &mut word)?;
                if u32::from_le_bytes(word) != call.argument(5) as u32 {
                    return Err(Errno::EAGAIN);
                }
            }
            value(futexes::requeue(key, to, number as usize, move_limit as usize) as u64)
        }
        Command::WakeOp => {
            let (second_limit, target) = (call.argument(3) as u32, call.argument(4));
            let change = WakeOp::decode(call.argument(5) as u32)?;
            let second = futexes::key_for(call.process, target, operation.private)?;
            let old = call.process.native.user_memory().update_u32(target, |old| Some(change.apply(old)))?;
            let mut woken = futexes::wake(key, wake_limit(number), MATCH_ANY)?;
            if change.condition_holds(old) {
                woken += futexes::wake(second, wake_limit(second_limit), MATCH_ANY)?;
            }
            value(woken as u64)
        }
        Command::LockPi => {
            let deadline = deadline(call, Command::LockPi, operation.realtime || call.argument(1) & 0x7f == 6)?;
            let tid = call.thread.tid;
            futexes::lock_pi(call.process, key, address, tid, deadline, || call.interrupted())?;
            value(0)
        }
        Command::TryLockPi => futexes::try_lock_pi(call.process, key, address, call.thread.tid).and_then(|()| value(0)),
        Command::UnlockPi => futexes::unlock_pi(call.process, key, address, call.thread.tid).and_then(|()| value(0)),
    }
}

/// How many a wake wakes: Linux wakes at least one even when asked for 0
/// or a negative number.
fn wake_limit(number: u32) -> usize {
    (number as i32).max(1) as usize
}

/// When a wait ends: `FUTEX_WAIT`'s limit is relative, the others'
/// absolute, on CLOCK_REALTIME when `realtime` (always for
/// `FUTEX_LOCK_PI`), else CLOCK_MONOTONIC. No limit: never.
fn deadline(call: &Call<'_>, command: Command, realtime: bool) -> Result<Limit, Errno> {
    let Some(limit) = UserPtr::<Timespec>::argument(call, 3) else { return Ok(Limit::NEVER) };
    let limit = limit.read(call)?.as_nanoseconds();
    Ok(match command {
        Command::Wait => Limit::Uptime(machine::timer::uptime_nanoseconds().saturating_add(limit)),
        _ if realtime => Limit::Realtime(limit),
        _ => Limit::Uptime(limit),
    })
}

pub fn set_robust_list(call: &mut Call<'_>) -> CallResult {
    if call.argument(1) != ROBUST_LIST_HEAD_BYTES {
        return Err(Errno::EINVAL);
    }
    call.thread.robust_list = call.argument(0);
    value(0)
}

/// The caller's own list (pid 0 or its own id); another thread's is not
/// kept where this thread can read it: EPERM, ESRCH when it does not exist.
pub fn get_robust_list(call: &mut Call<'_>) -> CallResult {
    let pid = call.argument(0) as u32;
    if pid != 0 && pid != call.thread.tid {
        return Err(if crate::process::owner_of_thread(pid).is_some() { Errno::EPERM } else { Errno::ESRCH });
    }
    let head = UserPtr::<u64>::argument(call, 1).ok_or(Errno::EFAULT)?;
    let length = UserPtr::<u64>::argument(call, 2).ok_or(Errno::EFAULT)?;
    head.write(call, &call.thread.robust_list)?;
    length.write(call, &ROBUST_LIST_HEAD_BYTES)?;
    value(0)
}
