//! Signals: dispositions, the blocked mask, pending signals, and the
//! frame a handler runs on (Linux x86-64 `rt_sigframe`: the restorer's
//! address, a `ucontext` with the interrupted registers and mask, a
//! `siginfo`), undone by `rt_sigreturn`.
//!
//! The FPU state of an interrupted program is kept by the kernel (the
//! frame's `fpstate` is NULL, which Linux programs accept) and restored by
//! `rt_sigreturn`.

use alloc::sync::Arc;
use alloc::vec::Vec;

use machine::user::{UserContext, UserRegisters};
use sched::pending_hint::PendingHint;

use linux_abi::interrupted_states::InterruptedStates;
use linux_abi::signal_frame::{self, AlternateStack, Delivery, SavedRegisters, SigInfo, SignalFrame, SS_DISABLE};
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
    pub const SIGVTALRM: u32 = 26;
    pub const SIGPROF: u32 = 27;
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

/// A thread id (the same number space as process ids).
type Tid = u32;

/// A process's signal state: what its threads share (dispositions, the
/// signals sent to the whole process) and each thread's own part.
pub struct SignalState {
    actions: [SigAction; MAX_SIGNAL as usize],
    /// Signals sent to the process (`kill`): any thread that does not
    /// block one takes it.
    shared: PendingSet,
    /// The main thread's mask, own pending signals and handler state (its
    /// id is the process's, given when the process is entered in the
    /// process table), and each other thread's.
    main: ThreadSignals,
    others: Vec<ThreadSignals>,
    /// Raised with everything made pending (and every `rt_sigsuspend`),
    /// cleared when nothing is: the process's threads skip this state's
    /// lock on their way to user mode while it is clear
    /// (`sched::pending_hint` has the protocol).
    hint: Arc<PendingHint>,
}

/// Pending signals with each one's `siginfo`: a standard signal is
/// pending once (the first sender's), a real-time one (from
/// [`FIRST_REALTIME`] on) once per sending, taken in the order sent.
#[derive(Clone)]
struct PendingSet {
    bits: u64,
    info: [SigInfo; MAX_SIGNAL as usize],
    /// Real-time signals sent again while pending, oldest first (each
    /// signal's first instance is in `info`).
    queued: Vec<(u32, SigInfo)>,
}

/// The first real-time signal (Linux's `SIGRTMIN`; C libraries keep a few
/// for themselves and call a later one `SIGRTMIN`).
pub const FIRST_REALTIME: u32 = 32;

/// Real-time signals queued beyond the first of each, per set: more are
/// dropped (Linux refuses past `RLIMIT_SIGPENDING`, 7,000 or so by
/// default).
const MOST_QUEUED: usize = 1024;

impl PendingSet {
    const fn new() -> Self {
        Self { bits: 0, info: [SigInfo { signo: 0, code: 0, words: [0; 3] }; MAX_SIGNAL as usize], queued: Vec::new() }
    }

    fn add(&mut self, signal: u32, info: SigInfo) {
        if self.bits & bit(signal) == 0 {
            self.info[signal as usize - 1] = info;
        } else if signal >= FIRST_REALTIME && self.queued.len() < MOST_QUEUED && self.queued.try_reserve(1).is_ok() {
            self.queued.push((signal, info));
        }
        if signal == SIGCONT {
            self.bits &= !(bit(SIGSTOP) | bit(SIGTSTP) | bit(SIGTTIN) | bit(SIGTTOU));
        }
        self.bits |= bit(signal);
    }

    fn take(&mut self, signal: u32) -> SigInfo {
        let info = self.info[signal as usize - 1];
        match self.queued.iter().position(|(queued, _)| *queued == signal) {
            // The next instance stays pending.
            Some(at) => self.info[signal as usize - 1] = self.queued.remove(at).1,
            None => self.bits &= !bit(signal),
        }
        info
    }

    /// Forgets every instance of `signal` (it is ignored now).
    fn discard(&mut self, signal: u32) {
        self.bits &= !bit(signal);
        self.queued.retain(|(queued, _)| *queued != signal);
    }
}

/// One thread's part of the signal state (Linux keeps these per thread).
struct ThreadSignals {
    tid: Tid,
    blocked: u64,
    /// Signals sent to this thread alone (`tgkill`, its own faults).
    own: PendingSet,
    /// `sigaltstack`: base, size, flags.
    alternate_stack: (u64, u64, u32),
    /// States of interrupted code, one per handler frame (`linux-abi`'s
    /// `interrupted_states`: a handler that leaves by `siglongjmp` does
    /// not make it grow).
    saved_fpu: InterruptedStates<UserContext>,
    /// The mask to restore after `rt_sigsuspend`'s handler.
    suspended_mask: Option<u64>,
}

/// `sigaltstack`'s "disabled" flag: a new thread has no alternate stack.
const NO_ALTERNATE_STACK: (u64, u64, u32) = (0, 0, 2);

impl ThreadSignals {
    fn new(tid: Tid, blocked: u64, alternate_stack: (u64, u64, u32)) -> Self {
        Self { tid, blocked, own: PendingSet::new(), alternate_stack, saved_fpu: InterruptedStates::default(), suspended_mask: None }
    }
}

/// What to do with the next deliverable signal.
pub enum Disposition {
    /// Run the handler with this `siginfo`.
    Handle(u32, SigAction, SigInfo),
    /// End the process with this wait status.
    Terminate(u32),
    /// Stop the process (job control) with this signal.
    Stop(u32),
}

impl SignalState {
    /// Defaults everywhere, nothing pending, one thread blocking nothing.
    pub fn new() -> Self {
        Self {
            actions: [SigAction::default(); MAX_SIGNAL as usize],
            shared: PendingSet::new(),
            main: ThreadSignals::new(0, 0, NO_ALTERNATE_STACK),
            others: Vec::new(),
            hint: Arc::new(PendingHint::new()),
        }
    }

    /// The hint the process reads without the lock.
    pub fn hint(&self) -> Arc<PendingHint> {
        self.hint.clone()
    }

    /// Clears the hint if nothing is pending for any thread and no
    /// `rt_sigsuspend` mask waits to be put back.
    pub fn clear_hint_if_quiet(&self) {
        if self.shared.bits == 0 && self.threads().all(|thread| thread.own.bits == 0 && thread.suspended_mask.is_none()) {
            self.hint.clear();
        }
    }

    /// The main thread's id: the process's, once it has one.
    pub fn name_main_thread(&mut self, tid: Tid) {
        self.main.tid = tid;
    }

    /// The state of a child that thread `parent_tid` forks: the
    /// dispositions, and the thread's mask and alternate stack; nothing
    /// pending.
    pub fn for_child(&self, parent_tid: Tid) -> Self {
        let mut state = Self::new();
        state.actions = self.actions;
        if let Some(parent) = self.thread(parent_tid) {
            state.main.blocked = parent.blocked;
            state.main.alternate_stack = parent.alternate_stack;
        }
        state
    }

    /// A new thread `tid` created by thread `creator`: it starts with the
    /// creator's mask, nothing pending and no alternate stack, as on Linux.
    pub fn add_thread(&mut self, tid: Tid, creator: Tid) -> Result<(), Errno> {
        let blocked = self.blocked(creator);
        self.others.try_reserve(1).map_err(|_| Errno::EAGAIN)?;
        self.others.push(ThreadSignals::new(tid, blocked, NO_ALTERNATE_STACK));
        Ok(())
    }

    /// Thread `tid` has ended: signals sent to it alone go with it (the
    /// main thread's part stays while the process lives, as Linux keeps
    /// the thread group leader).
    pub fn remove_thread(&mut self, tid: Tid) {
        self.others.retain(|thread| thread.tid != tid);
    }

    /// After `execve` by thread `tid`, which takes the process id
    /// `new_tid`: the other threads are gone, handled signals go back to
    /// default (ignored stay ignored), the mask and pending signals stay,
    /// the alternate stack goes.
    pub fn reset_for_exec(&mut self, tid: Tid, new_tid: Tid) {
        for action in self.actions.iter_mut() {
            if action.handler != SIG_IGN {
                *action = SigAction::default();
            }
        }
        if let Some(position) = self.others.iter().position(|thread| thread.tid == tid) {
            self.main = self.others.swap_remove(position);
        }
        self.others.clear();
        let main = &mut self.main;
        main.tid = new_tid;
        main.alternate_stack = NO_ALTERNATE_STACK;
        main.saved_fpu.clear();
        main.suspended_mask = None;
    }

    fn threads(&self) -> impl Iterator<Item = &ThreadSignals> {
        core::iter::once(&self.main).chain(self.others.iter())
    }

    fn thread(&self, tid: Tid) -> Option<&ThreadSignals> {
        self.threads().find(|thread| thread.tid == tid)
    }

    fn thread_mut(&mut self, tid: Tid) -> Option<&mut ThreadSignals> {
        if self.main.tid == tid {
            return Some(&mut self.main);
        }
        self.others.iter_mut().find(|thread| thread.tid == tid)
    }

    /// The action for `signal`.
    pub fn action(&self, signal: u32) -> Result<SigAction, Errno> {
        valid(signal)?;
        Ok(self.actions[signal as usize - 1])
    }

    /// Sets the action for `signal` (not SIGKILL or SIGSTOP). A signal
    /// now ignored is discarded wherever it is pending.
    pub fn set_action(&mut self, signal: u32, action: SigAction) -> Result<(), Errno> {
        valid(signal)?;
        if matches!(signal, SIGKILL | SIGSTOP) {
            return Err(Errno::EINVAL);
        }
        self.actions[signal as usize - 1] = SigAction { mask: action.mask & !UNBLOCKABLE, ..action };
        if self.ignores(signal) {
            self.shared.discard(signal);
            self.main.own.discard(signal);
            for thread in self.others.iter_mut() {
                thread.own.discard(signal);
            }
        }
        Ok(())
    }

    fn ignores(&self, signal: u32) -> bool {
        let action = self.actions[signal as usize - 1];
        action.handler == SIG_IGN || (action.handler == SIG_DFL && default_action(signal) == DefaultAction::Ignore)
    }

    /// Makes `signal` pending for the whole process with `info` (unless it
    /// is ignored). Returns whether it is pending. As on Linux, a signal
    /// the main thread blocks stays pending even when ignored: `sigwait`
    /// may take it, or its action may change before it is unblocked.
    pub fn raise_with(&mut self, signal: u32, info: SigInfo) -> bool {
        if self.dropped(signal, self.main.blocked) {
            return false;
        }
        self.shared.add(signal, info);
        self.hint.raise();
        true
    }

    /// Makes `signal` pending for thread `tid` alone with `info` (unless
    /// it is ignored and the thread does not block it, or there is no
    /// such thread). Returns whether it is pending.
    pub fn raise_for_thread(&mut self, tid: Tid, signal: u32, info: SigInfo) -> bool {
        let Some(blocked) = self.thread(tid).map(|thread| thread.blocked) else { return false };
        if self.dropped(signal, blocked) {
            return false;
        }
        if let Some(thread) = self.thread_mut(tid) {
            thread.own.add(signal, info);
            self.hint.raise();
        }
        true
    }

    /// Whether `signal`, sent to a thread with mask `blocked`, is dropped
    /// at once because it is ignored.
    fn dropped(&self, signal: u32, blocked: u64) -> bool {
        signal != SIGKILL && self.ignores(signal) && blocked & bit(signal) == 0
    }

    /// Whether `signal` is pending anywhere in the process.
    pub fn is_pending(&self, signal: u32) -> bool {
        (self.shared.bits | self.threads().fold(0, |all, thread| all | thread.own.bits)) & bit(signal) != 0
    }

    /// Signals pending for thread `tid`: its own and the process's.
    pub fn pending_for(&self, tid: Tid) -> u64 {
        self.shared.bits | self.thread(tid).map_or(0, |thread| thread.own.bits)
    }

    /// Thread `tid`'s blocked mask.
    pub fn blocked(&self, tid: Tid) -> u64 {
        self.thread(tid).map_or(0, |thread| thread.blocked)
    }

    /// Sets thread `tid`'s blocked mask (SIGKILL and SIGSTOP stay unblocked).
    pub fn set_blocked(&mut self, tid: Tid, mask: u64) {
        if let Some(thread) = self.thread_mut(tid) {
            thread.blocked = mask & !UNBLOCKABLE;
        }
    }

    /// Whether signal delivery has nothing to do for thread `tid`: no
    /// signal it does not block is pending and no `rt_sigsuspend` mask
    /// waits to be put back (the common case, checked before every return
    /// to user mode).
    #[inline]
    pub fn nothing_to_deliver(&self, tid: Tid) -> bool {
        let thread = if self.main.tid == tid { Some(&self.main) } else { self.others.iter().find(|thread| thread.tid == tid) };
        thread.is_none_or(|thread| thread.suspended_mask.is_none() && (self.shared.bits | thread.own.bits) & !thread.blocked == 0)
    }

    /// Whether a signal thread `tid` does not block is pending for it.
    pub fn deliverable(&self, tid: Tid) -> bool {
        let (own, blocked) = self.thread(tid).map_or((0, 0), |thread| (thread.own.bits, thread.blocked));
        (self.shared.bits | own) & !blocked != 0
    }

    /// Whether SIGKILL is pending for the process or any of its threads.
    pub fn kill_pending(&self) -> bool {
        self.is_pending(SIGKILL)
    }

    /// Takes a pending signal for thread `tid` out of `set`: its own
    /// first, then the process's, the lowest number first.
    fn take_from(&mut self, tid: Tid, set: u64) -> Option<(u32, SigInfo)> {
        let thread = if self.main.tid == tid { &mut self.main } else { self.others.iter_mut().find(|thread| thread.tid == tid)? };
        let own = thread.own.bits & set;
        if own != 0 {
            let signal = own.trailing_zeros() + 1;
            return Some((signal, thread.own.take(signal)));
        }
        let shared = self.shared.bits & set;
        if shared != 0 {
            let signal = shared.trailing_zeros() + 1;
            return Some((signal, self.shared.take(signal)));
        }
        None
    }

    /// Takes the lowest pending signal of `set` for thread `tid`
    /// (`sigwait` and kin, which take blocked signals too) with its
    /// `siginfo`.
    pub fn take_waited(&mut self, tid: Tid, set: u64) -> Option<(u32, SigInfo)> {
        self.take_from(tid, set & !UNBLOCKABLE)
    }

    /// Takes thread `tid`'s next deliverable signal and decides what it
    /// does. `taken` sees each signal taken on the way, the ignored ones
    /// too (a timer's signal latches its overrun count even when ignored).
    pub fn take(&mut self, tid: Tid, mut taken: impl FnMut(&mut SigInfo)) -> Option<Disposition> {
        loop {
            let (signal, mut info) = self.take_from(tid, !self.blocked(tid))?;
            taken(&mut info);
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
                    return Some(Disposition::Handle(signal, action, info));
                }
            }
        }
    }

    /// A signal thread `tid` caused (a fault): if it cannot be handled
    /// (blocked or ignored), its action goes back to the default and it is
    /// unblocked, as on Linux; it is pending for that thread.
    pub fn force(&mut self, tid: Tid, info: SigInfo) {
        let signal = info.signo;
        if valid(signal).is_err() {
            return;
        }
        let blocked = self.blocked(tid) & bit(signal) != 0;
        if blocked || self.actions[signal as usize - 1].handler == SIG_IGN {
            self.set_blocked(tid, self.blocked(tid) & !bit(signal));
            let _ = self.set_action(signal, SigAction::default());
        }
        self.raise_for_thread(tid, signal, info);
    }

    /// Thread `tid`'s alternate signal stack (base, size, flags).
    pub fn alternate_stack(&self, tid: Tid) -> (u64, u64, u32) {
        self.thread(tid).map_or(NO_ALTERNATE_STACK, |thread| thread.alternate_stack)
    }

    /// Sets thread `tid`'s alternate signal stack.
    pub fn set_alternate_stack(&mut self, tid: Tid, stack: (u64, u64, u32)) {
        if let Some(thread) = self.thread_mut(tid) {
            thread.alternate_stack = stack;
        }
    }

    /// `rt_sigsuspend`: thread `tid` waits with `mask`; its mask before
    /// comes back after the handler (or at once if none runs).
    pub fn suspend(&mut self, tid: Tid, mask: u64) {
        let previous = self.blocked(tid);
        self.set_blocked(tid, mask);
        if let Some(thread) = self.thread_mut(tid) {
            thread.suspended_mask = Some(previous);
            self.hint.raise();
        }
    }

    /// The mask `rt_sigsuspend` replaced, taken once.
    pub fn take_suspended_mask(&mut self, tid: Tid) -> Option<u64> {
        self.thread_mut(tid).and_then(|thread| thread.suspended_mask.take())
    }

    /// Keeps thread `tid`'s interrupted state for `rt_sigreturn` from the
    /// frame whose `ucontext` is at `ucontext`.
    pub fn push_saved(&mut self, tid: Tid, ucontext: u64, context: &UserContext) -> Result<(), Errno> {
        let thread = self.thread_mut(tid).ok_or(Errno::ESRCH)?;
        let (base, size, flags) = thread.alternate_stack;
        let alternate = (base, if flags & SS_DISABLE != 0 { 0 } else { size });
        thread.saved_fpu.push(ucontext, alternate, context.clone()).map_err(|_| Errno::ENOMEM)
    }

    /// The state kept for the frame at `ucontext` (none for a frame the
    /// kernel did not make, or one given up on).
    pub fn pop_saved(&mut self, tid: Tid, ucontext: u64) -> Option<UserContext> {
        self.thread_mut(tid)?.saved_fpu.pop(ucontext)
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
