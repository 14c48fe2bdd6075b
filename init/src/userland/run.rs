//! Running a process: its thread enters user mode, and every exit comes
//! back here — a system call to dispatch, a page fault to resolve (or a
//! SIGSEGV), another exception as its signal, an interrupt — and pending
//! signals are delivered before it goes back. Also the end of a process:
//! its capabilities and memory go, its children go to init, its parent
//! is told.

use alloc::sync::Arc;

use machine::percpu;
use machine::user::{run_user_in, vectors, UserContext, UserExit};
use vmem::{Access, FaultOutcome};

use super::process::{self, Process};
use super::signals::numbers::{SIGBUS, SIGCHLD, SIGFPE, SIGILL, SIGSEGV, SIGTRAP};
use super::signals::{build_frame, Disposition};
use super::syscalls::{self, Flow};
use super::user_memory::{write_user, PendingFlush};
use crate::address_spaces::carry_out;
use crate::errno::Errno;

/// Starts the thread that runs `process` from `context`.
pub fn start(process: Arc<Process>, context: UserContext) -> Result<(), Errno> {
    sched::spawn("user", move || run(process, context)).map(drop).map_err(|_| Errno::EAGAIN)
}

/// The wait status of a normal exit with `code`.
pub fn exited(code: u32) -> u32 {
    (code & 0xff) << 8
}

fn run(process: Arc<Process>, mut context: UserContext) {
    process.set_thread(sched::current());
    loop {
        if let Some(status) = deliver_signals(&process, &mut context) {
            return exit(&process, status);
        }
        let root = process.native.with_memory(|memory| {
            memory.activate_on(percpu::current_index());
            memory.root()
        });
        let Ok(root) = root else { return };
        match run_user_in(root, &mut context) {
            UserExit::Syscall => {
                if let Flow::Exit(status) = syscalls::dispatch(&process, &mut context) {
                    return exit(&process, status);
                }
            }
            UserExit::Exception { vector: vectors::PAGE_FAULT, error_code, address } => {
                let access = if error_code & 2 != 0 {
                    Access::Write
                } else if error_code & 16 != 0 {
                    Access::Execute
                } else {
                    Access::Read
                };
                match process.native.with_memory(|memory| memory.handle_fault(address, access)) {
                    Ok(Ok(FaultOutcome::Copied { flush })) => carry_out(flush),
                    Ok(Ok(_)) => {}
                    _ => force_signal(&process, SIGSEGV),
                }
            }
            UserExit::Exception { vector, .. } => {
                let signal = match vector {
                    vectors::INVALID_OPCODE => SIGILL,
                    vectors::DIVIDE_ERROR | vectors::FLOATING_POINT | vectors::SIMD_FLOATING_POINT => SIGFPE,
                    vectors::BREAKPOINT | vectors::DEBUG => SIGTRAP,
                    17 => SIGBUS,
                    _ => SIGSEGV,
                };
                force_signal(&process, signal);
            }
            UserExit::Interrupt { .. } => {}
        }
    }
}

/// A signal the program caused: if it cannot be handled (blocked or
/// ignored), it takes its default action anyway, as on Linux.
fn force_signal(process: &Process, signal: u32) {
    let mut state = process.state();
    let bit = 1u64 << (signal - 1);
    let action = state.signals.action(signal).unwrap_or_default();
    if state.signals.blocked & bit != 0 || action.handler == super::signals::SIG_IGN {
        state.signals.blocked &= !bit;
        let _ = state.signals.set_action(signal, Default::default());
    }
    state.signals.raise(signal);
}

/// Delivers deliverable signals: runs a handler (builds its frame) or
/// takes the default action. Returns a wait status if the process ends.
fn deliver_signals(process: &Process, context: &mut UserContext) -> Option<u32> {
    loop {
        let (disposition, old_mask, alternate) = {
            let mut state = process.state();
            let suspended = state.signals.suspended_mask.take();
            let old_mask = suspended.unwrap_or(state.signals.blocked);
            let alternate = state.signals.alternate_stack;
            let taken = state.signals.take();
            if let Some(previous) = suspended.filter(|_| !matches!(taken, Some(Disposition::Handle(..)))) {
                state.signals.set_blocked(previous);
            }
            (taken?, old_mask, alternate)
        };
        match disposition {
            Disposition::Terminate(status) => return Some(status),
            Disposition::Stop => continue, // job-control stops are not supported yet: ignored
            Disposition::Handle(signal, action) => {
                let Ok((frame, bytes)) = build_frame(signal, &action, &context.registers, old_mask, alternate) else {
                    return Some(SIGSEGV);
                };
                let mut flush = PendingFlush::default();
                let written = process.native.with_memory(|memory| write_user(memory, frame, &bytes, &mut flush));
                flush.carry_out();
                if !matches!(written, Ok(Ok(()))) {
                    return Some(SIGSEGV);
                }
                {
                    let mut state = process.state();
                    if state.signals.push_saved(context).is_err() {
                        return Some(SIGSEGV);
                    }
                    let mut mask = old_mask | action.mask;
                    if action.flags & 0x4000_0000 == 0 {
                        mask |= 1 << (signal - 1);
                    }
                    state.signals.set_blocked(mask);
                }
                let registers = &mut context.registers;
                registers.rsp = frame;
                registers.rip = action.handler;
                registers.rdi = u64::from(signal);
                registers.rsi = frame + 8 + super::signals::UCONTEXT_BYTES as u64;
                registers.rdx = frame + 8;
                registers.rax = 0;
            }
        }
    }
}

/// Ends `process` with wait status `status`.
pub fn exit(process: &Arc<Process>, status: u32) {
    process.native.destroy();
    let (parent, children) = {
        let mut state = process.state();
        state.exit_status = Some(status);
        (state.parent, core::mem::take(&mut state.children))
    };
    // Orphans go to init (pid 1), zombies with them so it can reap them.
    if let Some(init) = process::find(1).filter(|init| init.pid != process.pid) {
        for child in &children {
            if let Some(orphan) = process::find(child.pid) {
                orphan.state().parent = 1;
            }
        }
        let mut state = init.state();
        if state.children.try_reserve(children.len()).is_ok() {
            state.children.extend(children.iter().copied());
        }
    }
    if let Some(parent) = process::find(parent).filter(|parent| parent.pid != process.pid) {
        {
            let mut state = parent.state();
            if let Some(record) = state.children.iter_mut().find(|child| child.pid == process.pid) {
                record.status = Some(status);
            }
            state.signals.raise(SIGCHLD);
        }
        parent.notify();
    }
    if process.pid == 1 {
        super::init_exited(status);
    }
}
