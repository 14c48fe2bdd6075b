//! Scheduling-policy calls: `sched_{get,set}scheduler`,
//! `sched_{get,set}param`, `sched_get_priority_{min,max}` and
//! `sched_rr_get_interval`, with Linux's checks and errno values
//! (`linux_abi::scheduling`). Each thread's policy and priority are kept
//! and reported, and `fork` passes them on as Linux does; the scheduler
//! itself does not act on them yet: every thread is time-shared alike.

use super::{value, Call, CallResult, UserPtr};
use crate::process::{self, Pid, Process};
use alloc::sync::Arc;
use linux_abi::scheduling::{priority_max, priority_min, round_robin_interval_nanoseconds, Scheduling};
use linux_abi::{Errno, Timespec};

/// The time-sharing slice `sched_rr_get_interval` reports for threads
/// that are not real-time: the scheduler's tick.
const FAIR_SLICE_NANOSECONDS: u64 = 10_000_000;

pub fn sched_get_priority_max(call: &mut Call<'_>) -> CallResult {
    value(priority_max(call.argument(0) as i32 as i64)? as u64)
}

pub fn sched_get_priority_min(call: &mut Call<'_>) -> CallResult {
    value(priority_min(call.argument(0) as i32 as i64)? as u64)
}

pub fn sched_getscheduler(call: &mut Call<'_>) -> CallResult {
    let (process, tid) = target(call, call.argument(0))?;
    let scheduling = process.state().scheduling_of(tid);
    value(u64::from(scheduling.policy_word()))
}

pub fn sched_setscheduler(call: &mut Call<'_>) -> CallResult {
    let (process, tid) = target(call, call.argument(0))?;
    let priority = UserPtr::<i32>::argument(call, 2).ok_or(Errno::EINVAL)?.read(call)?;
    let policy = u32::try_from(call.argument(1) as i32).map_err(|_| Errno::EINVAL)?;
    process.state().set_scheduling(tid, Scheduling::with_policy(policy, priority)?)?;
    value(0)
}

pub fn sched_getparam(call: &mut Call<'_>) -> CallResult {
    let out = UserPtr::<i32>::argument(call, 1).ok_or(Errno::EINVAL)?;
    let (process, tid) = target(call, call.argument(0))?;
    // Read first: the copy out may wait, which no spinlock may span.
    let priority = process.state().scheduling_of(tid).priority;
    out.write(call, &priority)?;
    value(0)
}

pub fn sched_setparam(call: &mut Call<'_>) -> CallResult {
    let priority = UserPtr::<i32>::argument(call, 1).ok_or(Errno::EINVAL)?.read(call)?;
    let (process, tid) = target(call, call.argument(0))?;
    let changed = process.state().scheduling_of(tid).with_priority(priority)?;
    process.state().set_scheduling(tid, changed)?;
    value(0)
}

pub fn sched_rr_get_interval(call: &mut Call<'_>) -> CallResult {
    let (process, tid) = target(call, call.argument(0))?;
    let out = UserPtr::<Timespec>::argument(call, 1).ok_or(Errno::EFAULT)?;
    let slice = round_robin_interval_nanoseconds(&process.state().scheduling_of(tid), FAIR_SLICE_NANOSECONDS);
    out.write(call, &Timespec::from_nanoseconds(slice))?;
    value(0)
}

/// `sched_setaffinity(tid, size, mask)`: the CPUs of the mask that exist
/// (EINVAL when none does), kept for the thread, which runs only there
/// from now on (the caller moves before it returns; another thread moves
/// at once if it waits, within a tick if it runs); ESRCH for a thread
/// that does not exist. With CPU groups (issue 20) a process lives in one
/// group: a mask naming none of its group's CPUs moves the whole process
/// to the group of the mask's first CPU (`taskset` to another group), and
/// the thread runs on the mask's CPUs within the group.
pub fn sched_setaffinity(call: &mut Call<'_>) -> CallResult {
    let (process, tid) = affinity_target(call)?;
    let size = (call.argument(1) as usize).min(8);
    let mut bytes = [0u8; 8];
    call.read_in(call.argument(2), &mut bytes[..size])?;
    let mask = u64::from_le_bytes(bytes) & process::online_cpu_mask();
    if mask == 0 {
        return Err(Errno::EINVAL);
    }
    // One move at a time per process, none after its exit's clean-up
    // (ESRCH then: it has ended).
    process.while_placed(|| {
        let group_cpus = kernel_objects::groups::cpus_of(process.group()).bits();
        let target = (mask & group_cpus == 0).then(|| kernel_objects::groups::group_of_cpu(mask.trailing_zeros() as usize));
        if let Some(target) = target {
            // Its descriptors' copies move with it first (EAGAIN: nothing changed).
            crate::group_descriptors::process_moving(process.pid, process.native.space(), process.group(), target)?;
        }
        process.state().set_affinity(tid, (mask != process::online_cpu_mask()).then_some(mask))?;
        match target {
            Some(target) => process.move_to_group(target),
            None => {
                if let Some(thread) = process.kernel_thread(tid) {
                    sched::set_allowed(&thread, process.cpus_for(tid)).map_err(|_| Errno::EINVAL)?;
                }
            }
        }
        Ok(())
    })?;
    value(0)
}

/// `getcpu(cpu, node, cache)`: the CPU the caller runs on (it may have
/// moved by the time the caller looks) and NUMA node 0; either pointer
/// may be null; the third argument is unused since Linux 2.6.24.
pub fn getcpu(call: &mut Call<'_>) -> CallResult {
    let cpu = machine::percpu::current_index() as u32;
    for (index, word) in [(0, cpu), (1, 0)] {
        if call.argument(index) != 0 {
            call.write_out(call.argument(index), &word.to_le_bytes())?;
        }
    }
    value(0)
}

/// `sched_getaffinity(tid, size, mask)`: the thread's CPUs; the size must
/// hold a whole `unsigned long` per 64 CPUs (EINVAL); returns the bytes
/// written.
pub fn sched_getaffinity(call: &mut Call<'_>) -> CallResult {
    let size = call.argument(1) as usize;
    let bytes_needed = machine::percpu::online_count().div_ceil(64) * 8;
    if size < bytes_needed || size % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    let (process, tid) = affinity_target(call)?;
    // What the thread may use: its affinity within its process's group.
    let mask = process.allowed_cpu_mask(tid);
    let mut bytes = alloc::vec::Vec::new();
    bytes.try_reserve_exact(bytes_needed).map_err(|_| Errno::ENOMEM)?;
    bytes.resize(bytes_needed, 0);
    bytes[..8].copy_from_slice(&mask.to_le_bytes());
    call.write_out(call.argument(2), &bytes)?;
    value(bytes_needed as u64)
}

/// The thread an affinity call names: a negative id is ESRCH here (Linux
/// looks it up and finds none).
fn affinity_target(call: &Call<'_>) -> Result<(Arc<Process>, Pid), Errno> {
    if (call.argument(0) as i32) < 0 {
        return Err(Errno::ESRCH);
    }
    target(call, call.argument(0))
}

/// The thread a `pid` argument names: 0 the caller, else any thread id
/// (a process id names its first thread). EINVAL below 0, ESRCH unknown.
fn target(call: &Call<'_>, pid: u64) -> Result<(Arc<Process>, Pid), Errno> {
    let pid = pid as i32;
    match pid {
        0 => Ok((call.process.clone(), call.thread.tid)),
        negative if negative < 0 => Err(Errno::EINVAL),
        tid => {
            let tid = tid as Pid;
            let living = |found: &Arc<Process>| found.state().exit_status.is_none() && (found.pid == tid || found.has_thread(tid));
            process::all().into_iter().find(living).map(|found| (found, tid)).ok_or(Errno::ESRCH)
        }
    }
}
