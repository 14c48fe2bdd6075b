//! `prctl(2)`, the common operations: the process name (PR_SET_NAME,
//! PR_GET_NAME), the parent-death signal, dumpability, no_new_privs, the
//! child-subreaper flag (orphans below go to the nearest living subreaper: `run::adopt_orphans`), timer slack and the
//! capability bounding set (root's: every capability), and Lamina's own
//! allocation-failure injection (`PR_LAMINA_ALLOCATION_FAILURES`, root
//! only; docs/reliability.md). Anything else is EINVAL, as Linux answers
//! an operation it does not know. And `personality(2)`, whose
//! `ADDR_NO_RANDOMIZE` (`setarch -R`) the next execve's layout honours.

use super::{value, Call, CallResult};
use linux_abi::Errno;

const PR_SET_PDEATHSIG: u64 = 1;
const PR_GET_PDEATHSIG: u64 = 2;
const PR_GET_DUMPABLE: u64 = 3;
const PR_SET_DUMPABLE: u64 = 4;
const PR_SET_NAME: u64 = 15;
const PR_GET_NAME: u64 = 16;
const PR_CAPBSET_READ: u64 = 23;
const PR_SET_TIMERSLACK: u64 = 29;
const PR_GET_TIMERSLACK: u64 = 30;
const PR_SET_CHILD_SUBREAPER: u64 = 36;
const PR_GET_CHILD_SUBREAPER: u64 = 37;
const PR_SET_NO_NEW_PRIVS: u64 = 38;
const PR_GET_NO_NEW_PRIVS: u64 = 39;
/// The highest capability number Linux 6.1 knows (CAP_CHECKPOINT_RESTORE).
const CAP_LAST_CAP: u64 = 40;
/// Lamina's own operation (`'L' 'A' 'F'`, far from Linux's): drives
/// allocation-failure injection with the sub-operation in the second
/// argument (see [`allocation_failures`]).
const PR_LAMINA_ALLOCATION_FAILURES: u64 = 0x4c41_4600;
/// Linux's default timer slack (ns).
const TIMER_SLACK: u64 = 50_000;

/// `personality(persona)`: the old value; sets the new one unless it is
/// 0xffffffff (a query). Linux takes any 32-bit value and ignores the
/// register's upper half; so does this.
pub fn personality(call: &mut Call<'_>) -> CallResult {
    const QUERY: u32 = 0xffff_ffff;
    let wanted = call.argument(0) as u32;
    let mut state = call.process.state();
    let old = state.control.personality;
    if wanted != QUERY {
        state.control.personality = wanted;
    }
    value(u64::from(old))
}

pub fn prctl(call: &mut Call<'_>) -> CallResult {
    let (operation, argument) = (call.argument(0), call.argument(1));
    match operation {
        PR_SET_NAME => {
            let mut name = [0u8; 16];
            call.read_in(argument, &mut name)?;
            let length = name.iter().position(|byte| *byte == 0).unwrap_or(15).min(15);
            call.process.state().command = name[..length].to_vec();
            value(0)
        }
        PR_GET_NAME => {
            let mut name = [0u8; 16];
            let command = call.process.state().command.clone();
            let length = command.len().min(15);
            name[..length].copy_from_slice(&command[..length]);
            call.write_out(argument, &name)?;
            value(0)
        }
        PR_SET_PDEATHSIG => {
            if argument > u64::from(crate::signals::MAX_SIGNAL) {
                return Err(Errno::EINVAL);
            }
            call.process.state().control.death_signal = argument as u32;
            value(0)
        }
        PR_GET_PDEATHSIG => {
            let signal = call.process.state().control.death_signal;
            call.write_out(argument, &signal.to_le_bytes())?;
            value(0)
        }
        PR_GET_DUMPABLE => value(u64::from(!call.process.state().control.not_dumpable)),
        PR_SET_DUMPABLE => match argument {
            0 | 1 => {
                call.process.state().control.not_dumpable = argument == 0;
                value(0)
            }
            _ => Err(Errno::EINVAL),
        },
        PR_SET_NO_NEW_PRIVS => {
            if argument != 1 || call.argument(2) != 0 || call.argument(3) != 0 || call.argument(4) != 0 {
                return Err(Errno::EINVAL);
            }
            call.process.state().control.no_new_privileges = true;
            value(0)
        }
        PR_GET_NO_NEW_PRIVS => value(u64::from(call.process.state().control.no_new_privileges)),
        PR_SET_CHILD_SUBREAPER => {
            call.process.state().control.child_subreaper = argument != 0;
            value(0)
        }
        PR_GET_CHILD_SUBREAPER => {
            let flag = u32::from(call.process.state().control.child_subreaper);
            call.write_out(argument, &flag.to_le_bytes())?;
            value(0)
        }
        PR_GET_TIMERSLACK => value(TIMER_SLACK),
        PR_SET_TIMERSLACK => value(0),
        PR_CAPBSET_READ if argument <= CAP_LAST_CAP => value(1),
        PR_LAMINA_ALLOCATION_FAILURES => allocation_failures(call),
        _ => Err(Errno::EINVAL),
    }
}

/// `prctl(PR_LAMINA_ALLOCATION_FAILURES, operation, a, b)`, root only:
/// 0 turns injection off; 1 starts recording the paths of injectable
/// threads; 2 arms path `a` (a hash from the report) to fail its
/// allocation number `b` (from 0) once; 3 makes the calling thread
/// injectable (`a` != 0) or not, threads it creates inherit it; 4 copies
/// the report (one path a line) into buffer `a` of `b` bytes and returns
/// the report's whole length; 5 returns how many allocations the armed
/// path failed (0 or 1).
fn allocation_failures(call: &mut Call<'_>) -> CallResult {
    use kernel_objects::allocation_failures::{report, FAIL_POINTS};
    let root = call.process.state().credentials.user.effective == 0;
    if !root {
        return Err(Errno::EPERM);
    }
    let (a, b) = (call.argument(2), call.argument(3));
    match call.argument(1) {
        0 => FAIL_POINTS.turn_off(),
        1 => FAIL_POINTS.record(),
        2 => FAIL_POINTS.arm(a, b),
        3 => sched::current().set_injectable(a != 0),
        4 => {
            let text = report();
            let length = text.len().min(usize::try_from(b).unwrap_or(usize::MAX));
            call.write_out(a, &text.as_bytes()[..length])?;
            return value(text.len() as u64);
        }
        5 => return value(FAIL_POINTS.fired()),
        _ => return Err(Errno::EINVAL),
    }
    value(0)
}
