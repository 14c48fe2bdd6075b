//! Signals: dispositions, the blocked mask, pending signals, and the
//! frame a handler runs on (Linux x86-64 `rt_sigframe`: the restorer's
//! address, a `ucontext` with the interrupted registers and mask, a
//! `siginfo`), undone by `rt_sigreturn`.
//!
//! The FPU state of an interrupted program is kept by the kernel (the
//! frame's `fpstate` is NULL, which Linux programs accept) and restored by
//! `rt_sigreturn`.

use alloc::vec::Vec;

use machine::user::{UserContext, UserRegisters};

use linux_abi::signal_frame::{self, codes, AlternateStack, Delivery, SavedRegisters, SigInfo, SignalFrame};
use linux_abi::Errno;

/// Signal numbers.
#[allow(missing_docs, dead_code)]
pub mod numbers {
    pub const SIGHUP: u32 = 1;
    pub const SIGINT: u32 = 2;
    pub const SIGQUIT: u32 = 3;
    pub const SIGILL: u32 = 4;
    pub const SIGTRAP: u32 = 5;
    pub const SIGABRT: u32 = 6;
    pub const SIGBUS: u32 = 7;
    pub const SIGFPE: u32 = 8;
    pub const SIGKILL: u32 = 9;
    pub const SIGUSR1: u32 = 10;
    pub const SIGSEGV: u32 = 11;
    pub const SIGUSR2: u32 = 12;
    pub const SIGPIPE: u32 = 13;
    pub const SIGALRM: u32 = 14;
    pub const SIGTERM: u32 = 15;
    pub const SIGCHLD: u32 = 17;
    pub const SIGCONT: u32 = 18;
    pub const SIGSTOP: u32 = 19;
    pub const SIGTSTP: u32 = 20;
    pub const SIGTTIN: u32 = 21;
    pub const SIGTTOU: u32 = 22;
    pub const SIGURG: u32 = 23;
    pub const SIGXCPU: u32 = 24;
    pub const SIGXFSZ: u32 = 25;
    pub const SIGWINCH: u32 = 28;
    pub const SIGSYS: u32 = 31;
}
use numbers::*;

/// Highest signal number.
pub const MAX_SIGNAL: u32 = 64;
/// `sa_handler` values.
pub const SIG_DFL: u64 = 0;
/// Ignore the signal.
pub const SIG_IGN: u64 = 1;
/// The handler's own signal stays unblocked while it runs.
pub const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;

pub use linux_abi::signal_frame::SigAction;

/// What a signal does when nobody handles it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DefaultAction {
    Terminate,
    Core,
    Ignore,
    Stop,
    Continue,
}

/// The default action of `signal`.
pub fn default_action(signal: u32) -> DefaultAction {
    match signal {
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ignore,
        SIGCONT => DefaultAction::Continue,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ | SIGSYS => DefaultAction::Core,
        _ => DefaultAction::Terminate,
    }
}

fn bit(signal: u32) -> u64 {
    1 << (signal - 1)
}

/// Signals that can be neither blocked nor caught.
const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

/// A process's signal state.
pub struct SignalState {
    actions: [SigAction; MAX_SIGNAL as usize],
    pub blocked: u64,
    pending: u64,
    /// `sigaltstack`: base, size, flags.
    pub alternate_stack: (u64, u64, u32),
    /// FPU states of interrupted code, one per handler running.
    saved_fpu: Vec<UserContext>,
    /// The mask to restore after `rt_sigsuspend`'s handler.
    pub suspended_mask: Option<u64>,
    /// Each pending signal's `siginfo` (the first sender's: a standard
    /// signal is pending once).
    info: [SigInfo; MAX_SIGNAL as usize],
}

/// What to do with the next deliverable signal.
pub enum Disposition {
    /// Run the handler.
    Handle(u32, SigAction),
    /// End the process with this wait status.
    Terminate(u32),
    /// Stop the process (job control) with this signal.
    Stop(u32),
}

impl SignalState {
    /// Defaults everywhere, nothing blocked or pending.
    pub fn new() -> Self {
        Self {
            actions: [SigAction::default(); MAX_SIGNAL as usize],
            blocked: 0,
            pending: 0,
            alternate_stack: (0, 0, 2),
            saved_fpu: Vec::new(),
            suspended_mask: None,
            info: [SigInfo::default(); MAX_SIGNAL as usize],
        }
    }

    /// The state a child inherits at fork (dispositions and mask; nothing pending).
    pub fn for_child(&self) -> Self {
        Self { actions: self.actions, blocked: self.blocked, alternate_stack: self.alternate_stack, ..Self::new() }
    }

    /// After `execve`: handled signals go back to default, ignored stay ignored.
    pub fn reset_for_exec(&mut self) {
        for action in self.actions.iter_mut() {
            if action.handler != SIG_IGN {
                *action = SigAction::default();
            }
        }
        self.alternate_stack = (0, 0, 2);
        self.saved_fpu.clear();
    }

    /// The action for `signal`.
    pub fn action(&self, signal: u32) -> Result<SigAction, Errno> {
        valid(signal)?;
        Ok(self.actions[signal as usize - 1])
    }

    /// Sets the action for `signal` (not SIGKILL or SIGSTOP).
    pub fn set_action(&mut self, signal: u32, action: SigAction) -> Result<(), Errno> {
        valid(signal)?;
        if matches!(signal, SIGKILL | SIGSTOP) {
            return Err(Errno::EINVAL);
        }
        self.actions[signal as usize - 1] = SigAction { mask: action.mask & !UNBLOCKABLE, ..action };
        if action.handler == SIG_IGN || (action.handler == SIG_DFL && default_action(signal) == DefaultAction::Ignore) {
            self.pending &= !bit(signal);
        }
        Ok(())
    }

    /// Makes `signal` pending (unless it is ignored), sent by the kernel
    /// itself (`SI_KERNEL`). Returns whether it was.
    pub fn raise(&mut self, signal: u32) -> bool {
        self.raise_with(signal, SigInfo::from_process(signal, codes::SI_KERNEL, 0, 0))
    }

    /// Makes `signal` pending with `info` (unless it is ignored; a signal
    /// already pending keeps its first `info`). Returns whether it is.
    pub fn raise_with(&mut self, signal: u32, info: SigInfo) -> bool {
        if self.pending & bit(signal) == 0 {
            self.info[signal as usize - 1] = info;
        }
        self.raise_bit(signal)
    }

    /// The `siginfo` of `signal` as it was raised (read when delivering).
    pub fn info(&self, signal: u32) -> SigInfo {
        self.info.get(signal as usize - 1).copied().unwrap_or_default()
    }

    fn raise_bit(&mut self, signal: u32) -> bool {
        let action = self.actions[signal as usize - 1];
        let ignored = action.handler == SIG_IGN || (action.handler == SIG_DFL && default_action(signal) == DefaultAction::Ignore);
        // As on Linux, a blocked signal stays pending even when ignored:
        // `sigwait` may take it, or its action may change before unblocking.
        if ignored && signal != SIGKILL && self.blocked & bit(signal) == 0 {
            return false;
        }
        if signal == SIGCONT {
            self.pending &= !(bit(SIGSTOP) | bit(SIGTSTP) | bit(SIGTTIN) | bit(SIGTTOU));
        }
        self.pending |= bit(signal);
        true
    }

    /// Pending signals.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Sets the blocked mask (SIGKILL and SIGSTOP stay unblocked).
    pub fn set_blocked(&mut self, mask: u64) {
        self.blocked = mask & !UNBLOCKABLE;
    }

    /// Whether a signal is pending and not blocked.
    pub fn deliverable(&self) -> bool {
        self.pending & !self.blocked != 0
    }

    /// Takes the lowest pending signal of `set` (`sigwait` and kin, which
    /// take blocked signals too) with its `siginfo`.
    pub fn take_waited(&mut self, set: u64) -> Option<(u32, SigInfo)> {
        let ready = self.pending & set & !UNBLOCKABLE;
        if ready == 0 {
            return None;
        }
        let signal = ready.trailing_zeros() + 1;
        self.pending &= !bit(signal);
        Some((signal, self.info(signal)))
    }

    /// Takes the lowest deliverable signal and decides what it does.
    pub fn take(&mut self) -> Option<Disposition> {
        loop {
            let ready = self.pending & !self.blocked;
            if ready == 0 {
                return None;
            }
            let signal = ready.trailing_zeros() + 1;
            self.pending &= !bit(signal);
            let action = self.actions[signal as usize - 1];
            match action.handler {
                SIG_IGN if signal != SIGKILL => continue,
                SIG_DFL => match default_action(signal) {
                    DefaultAction::Ignore | DefaultAction::Continue => continue,
                    DefaultAction::Stop => return Some(Disposition::Stop(signal)),
                    DefaultAction::Terminate => return Some(Disposition::Terminate(signal)),
                    // Linux sets the core flag (0x80) of the wait status
                    // only when it wrote a core file; Lamina writes none,
                    // as Linux under its default RLIMIT_CORE of 0.
                    DefaultAction::Core => return Some(Disposition::Terminate(signal)),
                },
                _ if signal == SIGKILL => return Some(Disposition::Terminate(signal)),
                _ => {
                    if action.flags & SA_RESETHAND != 0 {
                        self.actions[signal as usize - 1] = SigAction::default();
                    }
                    return Some(Disposition::Handle(signal, action));
                }
            }
        }
    }

    /// Keeps the interrupted context's FPU state for `rt_sigreturn`.
    pub fn push_saved(&mut self, context: &UserContext) -> Result<(), Errno> {
        self.saved_fpu.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.saved_fpu.push(context.clone());
        Ok(())
    }

    /// The FPU state saved by the latest delivery.
    pub fn pop_saved(&mut self) -> Option<UserContext> {
        self.saved_fpu.pop()
    }
}

fn valid(signal: u32) -> Result<(), Errno> {
    if signal == 0 || signal > MAX_SIGNAL {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

pub use linux_abi::signal_frame::UCONTEXT_BYTES;

/// The registers `sigcontext` saves, in its order.
fn saved_registers(r: &UserRegisters) -> SavedRegisters {
    [r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax, r.rcx, r.rsp, r.rip, r.rflags]
}

/// The frame for handler `action` of `signal` interrupting `registers`
/// with mask `old_mask` (layout and placement: `linux-abi`'s
/// `signal_frame`); the caller writes it and points the registers at the
/// handler.
pub fn build_frame(signal: u32, info: SigInfo, action: &SigAction, registers: &UserRegisters, old_mask: u64, alternate: (u64, u64, u32)) -> Result<SignalFrame, Errno> {
    let (base, size, flags) = alternate;
    let delivery = Delivery { signal, info, flags: action.flags, restorer: action.restorer, old_mask };
    signal_frame::build(&delivery, &saved_registers(registers), AlternateStack { base, size, flags })
}

/// Reads back the registers and mask a frame's `ucontext` holds
/// (`rt_sigreturn`, with `ucontext` the bytes at the frame's ucontext).
pub fn restore_from(ucontext: &[u8; UCONTEXT_BYTES], registers: &mut UserRegisters) -> u64 {
    let (saved, mask) = signal_frame::read_ucontext(ucontext);
    let r = registers;
    let fields: [&mut u64; 18] = [
        &mut r.r8, &mut r.r9, &mut r.r10, &mut r.r11, &mut r.r12, &mut r.r13, &mut r.r14, &mut r.r15, &mut r.rdi, &mut r.rsi,
        &mut r.rbp, &mut r.rbx, &mut r.rdx, &mut r.rax, &mut r.rcx, &mut r.rsp, &mut r.rip, &mut r.rflags,
    ];
    for (field, value) in fields.into_iter().zip(saved) {
        *field = value;
    }
    mask
}
