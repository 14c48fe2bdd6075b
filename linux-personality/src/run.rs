//! Running a process: its thread enters user mode, and every exit comes
//! back here — a system call to dispatch, a page fault to resolve (or a
//! SIGSEGV), another exception as its signal, an interrupt — and pending
//! signals are delivered before it goes back. Also the end of a process:
//! its capabilities and memory go, its children go to init, its parent
//! is told.

use alloc::sync::Arc;

use machine::user::{vectors, UserContext, UserExit};
use vmem::{Access, FaultOutcome};

use super::process::{self, Pid, Process};
use super::signals::numbers::{SIGBUS, SIGCHLD, SIGFPE, SIGILL, SIGKILL, SIGSEGV, SIGTRAP};
use super::signals::{build_frame, Disposition};
use crate::syscall::{self, Flow};
use linux_abi::signal_frame::{codes, SigInfo};
use linux_abi::WaitStatus;
use kernel_objects::address_spaces::carry_out;
use linux_abi::Errno;

/// Starts the main thread of `process` (thread id = pid) from `context`.
pub fn start(process: Arc<Process>, context: UserContext) -> Result<(), Errno> {
    let tid = process.pid;
    start_thread(process, context, tid, 0)
}

/// Starts user thread `tid` of `process` from `context`; `clear_tid`: the
/// address zeroed and futex-woken when it ends (`CLONE_CHILD_CLEARTID`).
/// It starts on this CPU when its affinity (recorded before) and its
/// process's CPU group allow it, else on the least loaded CPU they allow.
/// Placement on the least loaded CPU (`sched::spawn_placed`) is off:
/// the lost kicks it exposed are fixed (`sched::kick_flag`), but on an
/// overcommitted host threads spread over CPUs still stall for seconds
/// (docs/architecture.md "Where threads run", issue 15).
pub fn start_thread(process: Arc<Process>, context: UserContext, tid: Pid, clear_tid: u64) -> Result<(), Errno> {
    let allowed = process.cpus_for(tid);
    let runner = process.clone();
    let thread = sched::spawn_here_allowed(allowed, "user", move || run(runner, context, tid, clear_tid)).map_err(|_| Errno::EAGAIN)?;
    if let Err(errno) = process.add_thread(tid, thread) {
        process.begin_group_exit(exited(127));
        return Err(errno);
    }
    Ok(())
}

/// The wait status of a normal exit with `code`.
pub fn exited(code: u32) -> u32 {
    WaitStatus::exited(code).encode()
}

/// What a user thread knows of itself.
pub struct ThreadSelf {
    pub tid: Pid,
    /// Zeroed and futex-woken when the thread ends.
    pub clear_tid: u64,
    /// The head of its robust futex list (`set_robust_list`), 0 for none.
    pub robust_list: u64,
    /// The number of the system call a signal interrupted, whose `rax`
    /// holds a restart code until signal delivery decides (`restart.rs`).
    pub interrupted_call: Option<u64>,
    /// What `restart_syscall` goes on with: an interrupted sleep.
    pub restart_block: Option<SleepRestart>,
    /// Its last descriptor look-ups.
    pub descriptors: core::cell::RefCell<crate::descriptor_cache::DescriptorCache>,
    /// Its native IPC state (mailbox, the call it holds, IPC buffer).
    pub ipc: kernel_objects::capabilities::IpcThread,
}

/// A sleep a signal interrupted with no handler to run: `restart_syscall`
/// sleeps on to the same deadline.
#[derive(Clone, Copy, Debug)]
pub struct SleepRestart {
    /// When the sleep ends.
    pub limit: crate::clock::Limit,
    /// Where to write the time left if interrupted again (0: nowhere).
    pub remaining: u64,
}

fn run(process: Arc<Process>, mut context: UserContext, tid: Pid, clear_tid: u64) {
    let mut me = ThreadSelf { tid, clear_tid, robust_list: 0, interrupted_call: None, restart_block: None, descriptors: Default::default(), ipc: Default::default() };
    let kernel_thread = sched::current();
    let mut entry_cache = kernel_objects::capabilities::EntryCache::default();
    // Wait until the creator has recorded this thread.
    while !process.has_thread(tid) {
        sched::yield_now();
    }
    loop {
        // Before the looks below: a kick after them stops the entry.
        kernel_thread.take_kick();
        if let Some(status) = process.group_exit() {
            return leave(&process, &me, status);
        }
        if process.must_leave_for_exec(me.tid) {
            // Another thread runs execve: this one goes (never the last).
            return leave(&process, &me, 0);
        }
        if let Some(status) = deliver_signals(&process, &mut context, &mut me) {
            process.begin_group_exit(status);
            continue;
        }
        let Ok(exit) = process.native.run_user(&mut entry_cache, &mut context, || kernel_thread.is_kicked()) else { return };
        // The stay in user mode is its user time; the rest is system time.
        kernel_thread.add_user_cycles(context.take_user_cycles());
        match exit {
            // Native IPC's fast path first, past the dispatch (seL4's).
            UserExit::Syscall if try_fast_ipc(&process, &mut context, &mut me) => {}
            UserExit::Syscall => match syscall::dispatch(&process, &mut context, &mut me) {
                Flow::Continue => {}
                Flow::ExitThread(status) => return leave(&process, &me, status),
                Flow::Exit(status) => process.begin_group_exit(status),
            },
            UserExit::Exception { vector: vectors::PAGE_FAULT, error_code, address } => {
                let access = if error_code & 2 != 0 {
                    Access::Write
                } else if error_code & 16 != 0 {
                    Access::Execute
                } else {
                    Access::Read
                };
                // The CPU is read under the space's lock (interrupts off: no move).
                let resolve = || process.native.with_memory(|memory| memory.handle_fault_on(address, access, Some(machine::percpu::current_index())));
                let mut outcome = resolve();
                // No frame for it: cached file pages go back, and it is tried again.
                while matches!(outcome, Ok(Err(vmem::Fault::OutOfMemory))) && crate::page_cache::reclaim_for(process.native.container()) > 0 {
                    outcome = resolve();
                }
                match outcome {
                    // A copy mapped read-only until this flush is done:
                    // the access faults once more and takes it over.
                    Ok(Ok(FaultOutcome::Copied { flush })) => carry_out(flush),
                    Ok(Ok(_)) => {}
                    // Another thread's flush of this space is still being
                    // carried out: the access is tried again after it.
                    Ok(Err(vmem::Fault::Busy)) => sched::yield_now(),
                    // No frame even after reclaim (the machine's or the
                    // container's): the process is killed, as Linux's OOM
                    // killer ends a lone hog (SIGKILL, not a fault signal
                    // a handler could catch and fault again in).
                    Ok(Err(vmem::Fault::OutOfMemory)) => crate::signal_sending::send_signal(&process, SIGKILL),
                    _ => {
                        // Inside a mapping, the access itself was refused.
                        let mapped = process.native.with_memory(|memory| memory.is_mapped(address & !0xfff)).unwrap_or(false);
                        let code = if mapped { codes::SEGV_ACCERR } else { codes::SEGV_MAPERR };
                        process.state().signals.force(me.tid, SigInfo::fault(SIGSEGV, code, address));
                    }
                }
            }
            UserExit::Exception { vector, .. } => {
                let (signal, code) = match vector {
                    vectors::INVALID_OPCODE => (SIGILL, codes::ILL_ILLOPN),
                    vectors::DIVIDE_ERROR => (SIGFPE, codes::FPE_INTDIV),
                    vectors::FLOATING_POINT | vectors::SIMD_FLOATING_POINT => (SIGFPE, codes::SI_KERNEL),
                    vectors::BREAKPOINT | vectors::DEBUG => (SIGTRAP, codes::TRAP_BRKPT),
                    17 => (SIGBUS, codes::SI_KERNEL),
                    _ => (SIGSEGV, codes::SI_KERNEL),
                };
                process.state().signals.force(me.tid, SigInfo::fault(signal, code, context.registers.rip));
            }
            UserExit::Interrupt { .. } | UserExit::Kicked => {}
        }
        crate::cpu_itimers::check(&process);
    }
}

/// Runs a native `call` or `reply_recv` by the IPC fast path if it can
/// (`kernel_objects::capabilities::try_fast_ipc`); false otherwise.
#[inline(always)]
fn try_fast_ipc(process: &Process, context: &mut UserContext, me: &mut ThreadSelf) -> bool {
    use kernel_objects::capabilities::numbers;
    if !matches!(context.registers.rax, numbers::CALL | numbers::REPLY_RECV) {
        return false;
    }
    let tid = me.tid;
    let interrupted = || syscall::thread_interrupted(process, tid);
    kernel_objects::capabilities::try_fast_ipc(&process.native, &mut me.ipc, context, &interrupted)
}

/// Delivers deliverable signals: runs a handler (builds its frame) or
/// takes the default action. Returns a wait status if the process ends.
/// A system call a signal interrupted runs again or fails with EINTR, as
/// the handler that runs (if any) decides.
fn deliver_signals(process: &Process, context: &mut UserContext, me: &mut ThreadSelf) -> Option<u32> {
    let ending = deliver_or_handle(process, context, me);
    // No handler ran (none was due, the signal stopped the process or was
    // ignored): an interrupted call runs again.
    settle_interrupted_call(context, me, None);
    ending
}

/// Backs `context` up to run its interrupted system call again, or makes
/// the call fail with EINTR, as `linux_abi::restart::decide` says for a
/// handler with `handler_flags` (`None`: no handler runs).
fn settle_interrupted_call(context: &mut UserContext, me: &mut ThreadSelf, handler_flags: Option<u64>) {
    let Some(number) = me.interrupted_call.take() else { return };
    let registers = &mut context.registers;
    let decision = linux_abi::restart::decide(registers.rax, handler_flags);
    if decision != linux_abi::restart::Restart::Continue {
        // Only a sleep that goes on keeps its restart block.
        me.restart_block = None;
    }
    match decision {
        linux_abi::restart::Restart::Again => {
            // `syscall` is two bytes long; `rax` gets the number back.
            registers.rip = registers.rip.wrapping_sub(2);
            registers.rax = number;
        }
        linux_abi::restart::Restart::Continue => {
            registers.rip = registers.rip.wrapping_sub(2);
            registers.rax = linux_abi::restart::RESTART_SYSCALL;
        }
        linux_abi::restart::Restart::Interrupted => registers.rax = Errno::EINTR.to_return_value(),
        linux_abi::restart::Restart::Keep => {}
    }
}

fn deliver_or_handle(process: &Process, context: &mut UserContext, me: &mut ThreadSelf) -> Option<u32> {
    loop {
        let (disposition, old_mask, alternate) = {
            // After the kick was taken (the caller's loop): a clear hint
            // means nothing to look at (`sched::pending_hint`).
            if !process.signals_maybe_pending() {
                return None;
            }
            let mut state = process.state();
            if state.signals.nothing_to_deliver(me.tid) {
                state.signals.clear_hint_if_quiet();
                return None;
            }
            let suspended = state.signals.take_suspended_mask(me.tid);
            let old_mask = suspended.unwrap_or(state.signals.blocked(me.tid));
            let alternate = state.signals.alternate_stack(me.tid);
            let taken = crate::posix_timers::take_signal(&mut state, me.tid);
            if let Some(previous) = suspended.filter(|_| !matches!(taken, Some(Disposition::Handle(..)))) {
                state.signals.set_blocked(me.tid, previous);
            }
            (taken?, old_mask, alternate)
        };
        match disposition {
            Disposition::Terminate(status) => return Some(status),
            Disposition::Stop(signal) => stop(process, me.tid, signal),
            Disposition::Handle(signal, action, info) => {
                // Before the frame saves the registers: the handler returns
                // to the restarted call, or to its EINTR.
                settle_interrupted_call(context, me, Some(action.flags));
                let Ok(frame) = build_frame(signal, info, &action, &context.registers, old_mask, alternate) else {
                    return Some(SIGSEGV);
                };
                if process.native.user_memory().write(frame.address, &frame.bytes).is_err() {
                    return Some(SIGSEGV);
                }
                {
                    let mut state = process.state();
                    if state.signals.push_saved(me.tid, frame.ucontext_address(), context).is_err() {
                        return Some(SIGSEGV);
                    }
                    let mut mask = old_mask | action.mask;
                    if action.flags & super::signals::SA_NODEFER == 0 {
                        mask |= 1 << (signal - 1);
                    }
                    state.signals.set_blocked(me.tid, mask);
                }
                let registers = &mut context.registers;
                registers.rsp = frame.address;
                registers.rip = action.handler;
                registers.rdi = u64::from(signal);
                registers.rsi = frame.siginfo_address();
                registers.rdx = frame.ucontext_address();
                registers.rax = 0;
            }
        }
    }
}

/// Job control: the process stops until SIGCONT (or SIGKILL); its parent
/// is told (`WUNTRACED`, SIGCHLD).
fn stop(process: &Process, tid: Pid, signal: u32) {
    let parent = {
        let mut state = process.state();
        state.stopped = true;
        state.parent
    };
    if let Some(parent) = process::find(parent).filter(|parent| parent.pid != process.pid) {
        {
            let mut state = parent.state();
            if let Some(record) = state.children.iter_mut().find(|child| child.pid == process.pid) {
                record.stopped = Some(WaitStatus::Stopped(signal as u8).encode());
            }
            state.signals.raise_with(SIGCHLD, SigInfo::child(codes::CLD_STOPPED, process.pid, 0, signal as i32));
        }
        parent.notify();
    }
    let mut state = process.state();
    while state.stopped && !state.signals.kill_pending() && process.group_exit().is_none() {
        state = process.wait_for(state, tid, |state| !state.stopped);
        if state.stopped {
            // Woken by another signal: it waits, pending, until SIGCONT.
            drop(state);
            let deadline = machine::timer::uptime_nanoseconds() + 50_000_000;
            sched::sleep_until(deadline, || !process.state().stopped || process.group_exit().is_some());
            state = process.state();
        }
    }
}

/// User thread `me` ends: its `clear_tid` word is zeroed and woken; the
/// last thread out ends the process with `status` (the group exit's, if
/// one is under way).
fn leave(process: &Arc<Process>, me: &ThreadSelf, status: u32) {
    crate::futexes::release_robust_list(process, me.tid, me.robust_list);
    if me.clear_tid != 0 {
        let _ = process.native.user_memory().write(me.clear_tid, &0u32.to_le_bytes());
        crate::futexes::wake_word(process, me.clear_tid, 1);
    }
    process.state().signals.remove_thread(me.tid);
    let current = sched::current();
    let times = process::thread_times(&current, &current);
    // Counted among the ended only once gone from the live threads, so
    // that no reader sees it twice (the process's CPU clock never goes back).
    let remaining = process.remove_thread(me.tid);
    {
        let mut state = process.state();
        state.ended_threads = state.ended_threads.plus(times);
    }
    if remaining == 0 {
        exit(process, process.group_exit().unwrap_or(status));
    }
}

/// Hands `children` of the ending `process` (whose parent is `parent`)
/// to their new parent: the nearest living ancestor with
/// `PR_SET_CHILD_SUBREAPER` set, else init. Each orphan names its new
/// parent before it is entered in that parent's list, and the list takes
/// it only while its owner lives: a reaper that ends meanwhile passes the
/// orphans on by its own exit, or (if it ended first) is passed over. An
/// orphan that ends while it moves may miss the record it should mark
/// (its old parent's list is gone, its new one not filled yet): each is
/// looked at again once entered (the fuzzer found such a zombie that no
/// wait could reap).
fn adopt_orphans(process: &Arc<Process>, parent: Pid, children: &[process::Child]) {
    // Bounded: each pass skips a reaper that ended, and ancestors only end.
    for _ in 0..64 {
        let Some(reaper) = reaper_of(process, parent) else { return };
        for child in children {
            if let Some(orphan) = process::find(child.pid) {
                // PR_SET_PDEATHSIG: a living child asked to be told its parent died.
                let death_signal = {
                    let mut state = orphan.state();
                    state.parent = reaper.pid;
                    Some(state.control.death_signal).filter(|signal| *signal != 0 && state.exit_status.is_none())
                };
                if let Some(signal) = death_signal {
                    crate::signal_sending::send_signal(&orphan, signal);
                }
            }
        }
        {
            let mut state = reaper.state();
            if state.exit_status.is_some() && reaper.pid != 1 {
                continue;
            }
            if state.children.try_reserve(children.len()).is_ok() {
                state.children.extend(children.iter().copied());
            }
            // Told of the zombies among them, as Linux tells a new parent.
            for child in children {
                if let Some(status) = child.status {
                    state.signals.raise_with(SIGCHLD, child_info(child.pid, status));
                }
            }
        }
        // An orphan that ended while it moved told a parent list it was
        // not in yet (or no longer): its new parent's record learns it now.
        for child in children.iter().filter(|child| child.status.is_none()) {
            let ended = process::find(child.pid).and_then(|orphan| {
                let state = orphan.state();
                state.exit_status.map(|status| (status, state.ended_threads.plus(state.reaped_children)))
            });
            if let Some((status, times)) = ended {
                let mut state = reaper.state();
                if let Some(record) = state.children.iter_mut().find(|record| record.pid == child.pid && record.status.is_none()) {
                    record.status = Some(status);
                    record.times = times;
                    state.signals.raise_with(SIGCHLD, child_info(child.pid, status));
                }
            }
        }
        reaper.notify();
        return;
    }
}

/// The process that adopts the orphans of `process`, whose parent is
/// `parent`: the nearest living ancestor that is a child subreaper, else
/// init (none if `process` is init).
fn reaper_of(process: &Arc<Process>, parent: Pid) -> Option<Arc<Process>> {
    let mut next = parent;
    // Parent links may name a process already gone: stop there.
    for _ in 0..4096 {
        if next <= 1 {
            break;
        }
        let Some(ancestor) = process::find(next) else { break };
        let (subreaper, living, up) = {
            let state = ancestor.state();
            (state.control.child_subreaper, state.exit_status.is_none(), state.parent)
        };
        if subreaper && living && ancestor.pid != process.pid {
            return Some(ancestor);
        }
        next = up;
    }
    process::find(1).filter(|init| init.pid != process.pid)
}

/// SIGCHLD's `siginfo` for child `pid` ending with wait status `status`.
fn child_info(pid: Pid, status: u32) -> SigInfo {
    let signal = status & 0x7f;
    if signal == 0 {
        SigInfo::child(codes::CLD_EXITED, pid, 0, ((status >> 8) & 0xff) as i32)
    } else {
        let code = if status & 0x80 != 0 { codes::CLD_DUMPED } else { codes::CLD_KILLED };
        SigInfo::child(code, pid, 0, signal as i32)
    }
}

/// Ends `process` with wait status `status`.
pub fn exit(process: &Arc<Process>, status: u32) {
    // Its copies of descriptions held in other groups go (issue 20), after
    // any move to another group in progress; no move starts after. Before
    // its descriptors close: a close that releases a description revokes
    // every copy of it, which a move still revoking its old copies would
    // meet as a refusal (seen once in a fresh-clone run's groups check).
    process.end_placement(|| crate::group_descriptors::process_ended(process.pid));
    process.native.destroy();
    crate::record_locks::release(linux_abi::record_locks::LockOwner::Process(process.pid));
    let (parent, children, times) = {
        let mut state = process.state();
        state.exit_status = Some(status);
        (state.parent, core::mem::take(&mut state.children), state.ended_threads.plus(state.reaped_children))
    };
    let ipc = core::mem::take(&mut process.state().sysv);
    crate::sysv_ipc::leave(ipc, process.pid, true);
    crate::itimers::disarm(process, crate::itimers::REAL_TIMER.locate, 0);
    crate::posix_timers::delete_all(process);
    // Orphans go to their nearest living ancestor that asked to be a child
    // subreaper, else to init (pid 1); zombies with them so it can reap them.
    if !children.is_empty() {
        adopt_orphans(process, parent, &children);
    }
    if let Some(parent) = process::find(parent).filter(|parent| parent.pid != process.pid) {
        {
            let mut state = parent.state();
            if let Some(record) = state.children.iter_mut().find(|child| child.pid == process.pid) {
                record.status = Some(status);
                record.times = times;
            }
            state.signals.raise_with(SIGCHLD, child_info(process.pid, status));
        }
        parent.notify();
    }
    if process.pid == 1 {
        super::init_exited(status);
    }
}
