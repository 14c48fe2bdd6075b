//! Sending a signal: marking it pending for a process, one of its threads
//! or a process group, and waking whoever can take it. The `kill` family
//! of system calls and the kernel's own senders (timers, the terminal,
//! resource limits, message-queue notification) all come here.
//!
//! Must not check permissions: callers that act for a process (`kill`)
//! check them first.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::signal_frame::{codes, SigInfo};

use crate::process::{self, Pid, Process};
use crate::signals::numbers::SIGCONT;

/// Sends `signal` from the kernel (a timer's SIGALRM) to `target`.
pub fn send_signal(target: &Process, signal: u32) {
    send_signal_with(target, signal, kernel_info(signal));
}

/// The `siginfo` of a signal the kernel sends (a terminal's ^C, a timer).
pub fn kernel_info(signal: u32) -> SigInfo {
    SigInfo::from_process(signal, codes::SI_KERNEL, 0, 0)
}

/// Sends `signal` (0: nothing) to `target` with `info` (`kill`, a
/// timer's expiry).
pub fn send_signal_with(target: &Process, signal: u32, info: SigInfo) {
    send_to(target, None, signal, info);
}

/// Sends `signal` (0: nothing) with `info` to thread `tid` of `target`,
/// or (`None`) to the whole process.
fn send_to(target: &Process, tid: Option<Pid>, signal: u32, info: SigInfo) {
    if signal == 0 {
        return;
    }
    // No preemption between marking the signal pending and kicking the
    // threads (as Linux, which does both under its siglock with interrupts
    // off): a sender preempted in between left the one thread that takes
    // the signal spinning in user mode unaware for a time slice, and it
    // could block the signal and exit meanwhile (posix
    // `pthread_cond_timedwait/4-3` hung on that).
    let _off = machine::cpu::InterruptsOff::new();
    let raised = {
        let mut state = target.state();
        if signal == SIGCONT {
            state.stopped = false;
        }
        let pending = match tid {
            Some(tid) => state.signals.raise_for_thread(tid, signal, info),
            None => state.signals.raise_with(signal, info),
        };
        pending || signal == SIGCONT
    };
    if raised {
        target.notify_signal();
    }
}

/// Sends `signal` to thread `tid` of `target` with `info` (a timer's
/// expiry for `SIGEV_THREAD_ID`).
pub fn send_thread_signal_with(target: &Process, tid: Pid, signal: u32, info: SigInfo) {
    send_to(target, Some(tid), signal, info);
}

/// Sends `signal` from the kernel to every member of process group `group`.
pub fn signal_group(group: Pid, signal: u32) -> usize {
    signal_group_with(group, signal, kernel_info(signal))
}

/// Sends `signal` with `info` to every living member of process group
/// `group`; how many there were.
pub fn signal_group_with(group: Pid, signal: u32, info: SigInfo) -> usize {
    let members: Vec<Arc<Process>> = process::all().into_iter().filter(|member| member.state().pgid == group && member.state().exit_status.is_none()).collect();
    for member in &members {
        send_signal_with(member, signal, info);
    }
    members.len()
}

