//! Signal system calls: dispositions, the blocked mask, pending signals,
//! the alternate stack, `rt_sigreturn` and `rt_sigsuspend`.

use super::{value, Call, CallResult, Outcome, UserPtr};
use linux_abi::{Errno, Timespec};
use crate::signals::{restore_from, SigAction, UCONTEXT_BYTES};

pub fn rt_sigaction(call: &mut Call<'_>) -> CallResult {
    let (signal, new, old, size) = (call.argument(0) as u32, UserPtr::<SigAction>::argument(call, 1), UserPtr::<SigAction>::argument(call, 2), call.argument(3));
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let replacement = new.map(|new| new.read(call)).transpose()?;
    let previous = {
        let mut state = call.process.state();
        let previous = state.signals.action(signal)?;
        if let Some(action) = replacement {
            state.signals.set_action(signal, action)?;
        }
        previous
    };
    if let Some(old) = old {
        old.write(call, &previous)?;
    }
    value(0)
}

pub fn rt_sigprocmask(call: &mut Call<'_>) -> CallResult {
    const SIG_BLOCK: u64 = 0;
    const SIG_UNBLOCK: u64 = 1;
    const SIG_SETMASK: u64 = 2;
    let (how, new, old, size) = (call.argument(0), UserPtr::<u64>::argument(call, 1), UserPtr::<u64>::argument(call, 2), call.argument(3));
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let mask = new.map(|new| new.read(call)).transpose()?;
    let previous = {
        let mut state = call.process.state();
        let previous = state.signals.blocked(call.thread.tid);
        if let Some(mask) = mask {
            let updated = match how {
                SIG_BLOCK => previous | mask,
                SIG_UNBLOCK => previous & !mask,
                SIG_SETMASK => mask,
                _ => return Err(Errno::EINVAL),
            };
            state.signals.set_blocked(call.thread.tid, updated);
        }
        previous
    };
    if let Some(old) = old {
        old.write(call, &previous)?;
    }
    value(0)
}

pub fn rt_sigreturn(call: &mut Call<'_>) -> CallResult {
    // The handler returned into the restorer, which popped the return
    // address: the ucontext starts at the stack pointer.
    let address = call.context.registers.rsp;
    let mut ucontext = [0u8; UCONTEXT_BYTES];
    call.read_in(address, &mut ucontext)?;
    let saved = call.process.state().signals.pop_saved(call.thread.tid, address);
    if let Some(saved) = saved {
        let fs_base = call.context.registers.fs_base;
        *call.context = saved;
        call.context.registers.fs_base = fs_base;
    }
    let mask = restore_from(&ucontext, &mut call.context.registers);
    call.process.state().signals.set_blocked(call.thread.tid, mask);
    Ok(Outcome::Registers)
}

pub fn rt_sigpending(call: &mut Call<'_>) -> CallResult {
    let pending = {
        let state = call.process.state();
        state.signals.pending_for(call.thread.tid) & state.signals.blocked(call.thread.tid)
    };
    call.write_out(call.argument(0), &pending.to_le_bytes())?;
    value(0)
}

pub fn rt_sigsuspend(call: &mut Call<'_>) -> CallResult {
    if call.argument(1) != 8 {
        return Err(Errno::EINVAL);
    }
    let mask = call.word_in(call.argument(0))?;
    let mut state = call.process.state();
    // Delivery saves the mask before in the handler's frame, so it comes
    // back with `rt_sigreturn`.
    state.signals.suspend(call.thread.tid, mask);
    drop(call.process.wait_for(state, call.thread.tid, |_| false));
    Err(linux_abi::restart::ERESTARTNOHAND)
}

/// `rt_sigtimedwait` (`sigwait`, `sigwaitinfo`, `sigtimedwait`): takes
/// a pending signal of the set (blocked or not) and returns its number,
/// writing its `siginfo`; else waits for one, until the time limit
/// (EAGAIN; a zero limit only polls) or until another signal's handler is
/// to run (EINTR: this call is never restarted, as on Linux).
pub fn rt_sigtimedwait(call: &mut Call<'_>) -> CallResult {
    if call.argument(3) != 8 {
        return Err(Errno::EINVAL);
    }
    let set = call.word_in(call.argument(0))?;
    let deadline = match UserPtr::<Timespec>::argument(call, 2) {
        Some(limit) => Some(crate::clock::monotonic_nanoseconds().saturating_add(limit.read(call)?.as_nanoseconds())),
        None => None,
    };
    loop {
        let taken = crate::posix_timers::take_waited_signal(&mut call.process.state(), call.thread.tid, set);
        if let Some((signal, info)) = taken {
            if call.argument(1) != 0 {
                call.write_out(call.argument(1), &info.encode())?;
            }
            return value(u64::from(signal));
        }
        if call.interrupted() {
            return Err(Errno::EINTR);
        }
        if deadline.is_some_and(|deadline| crate::clock::monotonic_nanoseconds() >= deadline) {
            return Err(Errno::EAGAIN);
        }
        let waited = || call.process.state().signals.pending_for(call.thread.tid) & set != 0 || call.interrupted();
        sched::sleep_until(deadline.unwrap_or(u64::MAX), waited);
    }
}

/// `pause(2)`: sleeps until a signal is delivered; returns EINTR once a
/// handler ran (a signal that ends the process never returns).
pub fn pause(call: &mut Call<'_>) -> CallResult {
    drop(call.process.wait_for(call.process.state(), call.thread.tid, |_| false));
    Err(linux_abi::restart::ERESTARTNOHAND)
}

pub fn sigaltstack(call: &mut Call<'_>) -> CallResult {
    let (new, old) = (call.argument(0), call.argument(1));
    let current = call.process.state().signals.alternate_stack(call.thread.tid);
    if old != 0 {
        let mut bytes = [0u8; 24];
        bytes[0..8].copy_from_slice(&current.0.to_le_bytes());
        bytes[8..12].copy_from_slice(&current.2.to_le_bytes());
        bytes[16..24].copy_from_slice(&current.1.to_le_bytes());
        call.write_out(old, &bytes)?;
    }
    if new != 0 {
        let base = call.word_in(new)?;
        let flags = call.word_in(new + 8)? as u32;
        let size = call.word_in(new + 16)?;
        const SS_DISABLE: u32 = 2;
        if flags & !SS_DISABLE != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & SS_DISABLE == 0 && size < 2048 {
            return Err(Errno::ENOMEM);
        }
        call.process.state().signals.set_alternate_stack(call.thread.tid, (base, size, flags));
    }
    value(0)
}

/// The signal mask a waiting call (`ppoll`, `pselect6`, `epoll_pwait`,
/// `epoll_pwait2`) was given: none for a NULL pointer, EINVAL for a size
/// other than 8.
pub(super) fn wait_mask(call: &Call<'_>, pointer: u64, size: u64) -> Result<Option<u64>, Errno> {
    if pointer == 0 {
        return Ok(None);
    }
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    Ok(Some(call.word_in(pointer)?))
}

/// Runs a waiting call with `mask` as the thread's signal mask while it
/// waits, as Linux does: when a signal interrupts it, the mask stays for
/// the delivery (the handler's frame keeps the old one, as for
/// `rt_sigsuspend`); on any other return the old mask is back at once, so
/// a signal it blocks stays pending.
pub(super) fn with_wait_mask(call: &mut Call<'_>, mask: Option<u64>, wait: impl FnOnce(&mut Call<'_>) -> CallResult) -> CallResult {
    let Some(mask) = mask else { return wait(call) };
    call.process.state().signals.suspend(call.thread.tid, mask);
    let result = wait(call);
    let interrupted = matches!(result, Err(errno) if errno == Errno::EINTR || errno == linux_abi::restart::ERESTARTNOHAND);
    if !interrupted {
        let mut state = call.process.state();
        if let Some(previous) = state.signals.take_suspended_mask(call.thread.tid) {
            state.signals.set_blocked(call.thread.tid, previous);
        }
    }
    result
}
