//! A process's identities (the `get*id`/`set*id` family, with Linux's
//! rules from `linux_abi::credentials`), its supplementary groups
//! (`getgroups`, `setgroups`: root only) and nice value (`getpriority`,
//! `setpriority`: lowering it needs root). Files stay root's and their
//! permission bits are not checked yet; `kill` checks who may signal whom.
//! The scheduler does not weigh nice values yet.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{value, Call, CallResult};
use crate::process::{self, Process};
use linux_abi::credentials::Credentials;
use linux_abi::Errno;

const PRIO_PROCESS: u64 = 0;
const PRIO_PGRP: u64 = 1;
const PRIO_USER: u64 = 2;

/// The processes `which` and `who` name (0: the caller's own); ESRCH for
/// none, EINVAL for an unknown `which`.
fn targets(call: &Call<'_>, which: u64, who: u32) -> Result<Vec<Arc<Process>>, Errno> {
    let found: Vec<Arc<Process>> = match which {
        PRIO_PROCESS => {
            let pid = if who == 0 { call.pid() } else { who };
            process::find(pid).into_iter().filter(|found| found.state().exit_status.is_none()).collect()
        }
        PRIO_PGRP => {
            let group = if who == 0 { call.process.state().pgid } else { who };
            process::all().into_iter().filter(|found| found.state().pgid == group && found.state().exit_status.is_none()).collect()
        }
        // Every process is root's.
        PRIO_USER if who == 0 => process::all().into_iter().filter(|found| found.state().exit_status.is_none()).collect(),
        PRIO_USER => Vec::new(),
        _ => return Err(Errno::EINVAL),
    };
    if found.is_empty() {
        return Err(Errno::ESRCH);
    }
    Ok(found)
}

/// `getpriority`: 20 minus the lowest nice value of the targets (the raw
/// system call's answer; the C library turns it back).
pub fn getpriority(call: &mut Call<'_>) -> CallResult {
    let lowest = targets(call, call.argument(0), call.argument(1) as u32)?.iter().map(|found| found.state().nice).min().unwrap_or(0);
    value((20 - lowest) as u64)
}

/// `setpriority`: the targets' nice value, clamped to -20..=19.
pub fn setpriority(call: &mut Call<'_>) -> CallResult {
    let nice = (call.argument(2) as i32).clamp(-20, 19);
    let privileged = call.process.state().credentials.privileged();
    for found in targets(call, call.argument(0), call.argument(1) as u32)? {
        if !privileged && nice < found.state().nice {
            return Err(Errno::EACCES);
        }
        found.state().nice = nice;
    }
    value(0)
}

/// The most supplementary groups (`NGROUPS_MAX`).
const GROUPS_MAX: usize = 65536;

/// `getgroups(size, list)`: how many with size 0, EINVAL when they do not fit.
pub fn getgroups(call: &mut Call<'_>) -> CallResult {
    let size = call.argument(0) as i32;
    let groups = call.process.state().groups.clone();
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    if size == 0 {
        return value(groups.len() as u64);
    }
    if (size as usize) < groups.len() {
        return Err(Errno::EINVAL);
    }
    let mut bytes = super::buffers::zeroed(groups.len() * 4)?;
    for (word, group) in bytes.chunks_mut(4).zip(groups.iter()) {
        word.copy_from_slice(&group.to_le_bytes());
    }
    call.write_out(call.argument(1), &bytes)?;
    value(groups.len() as u64)
}

/// `setgroups(size, list)`: EINVAL past `NGROUPS_MAX`.
pub fn setgroups(call: &mut Call<'_>) -> CallResult {
    if !call.process.state().credentials.privileged() {
        return Err(Errno::EPERM);
    }
    let size = call.argument(0) as i32;
    if size < 0 || size as usize > GROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size as usize * 4).map_err(|_| Errno::ENOMEM)?;
    bytes.resize(size as usize * 4, 0);
    call.read_in(call.argument(1), &mut bytes)?;
    let mut groups = Vec::new();
    groups.try_reserve_exact(size as usize).map_err(|_| Errno::ENOMEM)?;
    groups.extend(bytes.chunks(4).map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]])));
    // The list itself was reserved fallibly above; `Arc::new` adds only its two counters.
    call.process.state().groups = alloc::sync::Arc::new(groups);
    value(0)
}

/// Which of a credential's ids a getter or setter works on.
#[derive(Clone, Copy)]
pub enum Which {
    User,
    Group,
}

/// `getuid`, `geteuid` (`effective`), `getgid`, `getegid`.
pub fn get_id(call: &mut Call<'_>, which: Which, effective: bool) -> CallResult {
    let credentials = call.process.state().credentials;
    let ids = match which {
        Which::User => credentials.user,
        Which::Group => credentials.group,
    };
    value(u64::from(if effective { ids.effective } else { ids.real }))
}

/// `getresuid`, `getresgid`: real, effective and saved.
pub fn get_all_ids(call: &mut Call<'_>, which: Which) -> CallResult {
    let credentials = call.process.state().credentials;
    let ids = match which {
        Which::User => credentials.user,
        Which::Group => credentials.group,
    };
    for (index, id) in [ids.real, ids.effective, ids.saved].into_iter().enumerate() {
        super::UserPtr::<u32>::argument(call, index).ok_or(Errno::EFAULT)?.write(call, &id)?;
    }
    value(0)
}

/// The `set*id` family: `change` applies Linux's rules
/// (`linux_abi::credentials`); EPERM, EINVAL as they answer.
pub fn set_ids(call: &mut Call<'_>, change: impl FnOnce(&mut Credentials, [u32; 3]) -> Result<u64, Errno>) -> CallResult {
    let arguments = [call.argument(0) as u32, call.argument(1) as u32, call.argument(2) as u32];
    let mut state = call.process.state();
    let mut credentials = state.credentials;
    let answer = change(&mut credentials, arguments)?;
    if state.credentials.change_ends_dumpable(&credentials) {
        state.control.not_dumpable = true;
    }
    state.credentials = credentials;
    value(answer)
}

/// Whether the caller may signal `target` (`kill`): root, or a real or
/// effective uid that is the target's real or saved one.
pub fn may_signal(call: &Call<'_>, target: &Process) -> bool {
    let mine = call.process.state().credentials;
    let theirs = target.state().credentials;
    mine.may_signal(&theirs)
}
