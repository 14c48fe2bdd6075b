//! Restarting system calls a signal interrupted, as Linux does.
//!
//! A call that a signal interrupts before it did anything returns one of
//! the kernel-internal codes below instead of EINTR; on the way back to
//! user mode, once the kernel knows whether a handler runs, [`decide`]
//! turns the code into a restart (the `syscall` instruction runs again,
//! after the handler if there is one) or into EINTR. These codes never
//! reach a program. Values and rules are Linux's (`include/linux/errno.h`,
//! `arch/x86/kernel/signal.c`).

use crate::Errno;

/// Restart if no handler runs, or if the handler has `SA_RESTART`; else
/// EINTR. Blocking reads and writes of pipes and terminals, `wait4`,
/// `waitid`.
pub const ERESTARTSYS: Errno = Errno(512);
/// Restart always, handler or not.
pub const ERESTARTNOINTR: Errno = Errno(513);
/// Restart only if no handler runs; EINTR when one does (`pause`,
/// `rt_sigsuspend`, `poll`, `select`).
pub const ERESTARTNOHAND: Errno = Errno(514);
/// Like ERESTARTNOHAND, but the call goes on through `restart_syscall`
/// with what it saved (a sleep's deadline), not from its start.
pub const ERESTART_RESTARTBLOCK: Errno = Errno(516);
/// `restart_syscall`'s number.
pub const RESTART_SYSCALL: u64 = 219;

/// `SA_RESTART` in `sa_flags`.
pub const SA_RESTART: u64 = 0x1000_0000;

/// What happens to an interrupted call on the way back to user mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Run the call again: back `rip` up over `syscall` (2 bytes) and put
    /// its number back in `rax`.
    Again,
    /// Go on with `restart_syscall`: back `rip` up, [`RESTART_SYSCALL`] in
    /// `rax`.
    Continue,
    /// Return EINTR.
    Interrupted,
    /// Not an interrupted call: leave the result as it is.
    Keep,
}

/// The fate of a call that returned `result` (`rax`), when the signal
/// being delivered has a handler with `sa_flags` (`None`: no handler runs
/// — the signal was ignored, stopped the process, or was taken by another
/// thread).
pub fn decide(result: u64, handler_flags: Option<u64>) -> Restart {
    let Some(errno) = Errno::from_return_value(result) else { return Restart::Keep };
    match (errno, handler_flags) {
        (ERESTARTNOINTR, _) => Restart::Again,
        (ERESTART_RESTARTBLOCK, None) => Restart::Continue,
        (ERESTART_RESTARTBLOCK, Some(_)) => Restart::Interrupted,
        (ERESTARTSYS | ERESTARTNOHAND, None) => Restart::Again,
        (ERESTARTSYS, Some(flags)) if flags & SA_RESTART != 0 => Restart::Again,
        (ERESTARTSYS | ERESTARTNOHAND, Some(_)) => Restart::Interrupted,
        _ => Restart::Keep,
    }
}

/// Whether `result` is one of the internal restart codes.
pub fn is_restart_code(result: u64) -> bool {
    matches!(decide(result, None), Restart::Again | Restart::Continue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_follows_linux_for_every_code_and_handler() {
        let handler = Some(0);
        let restarting = Some(SA_RESTART);
        let table = [
            (ERESTARTSYS, None, Restart::Again),
            (ERESTARTSYS, handler, Restart::Interrupted),
            (ERESTARTSYS, restarting, Restart::Again),
            (ERESTARTNOHAND, None, Restart::Again),
            (ERESTARTNOHAND, handler, Restart::Interrupted),
            (ERESTARTNOHAND, restarting, Restart::Interrupted),
            (ERESTARTNOINTR, None, Restart::Again),
            (ERESTARTNOINTR, handler, Restart::Again),
            (ERESTART_RESTARTBLOCK, None, Restart::Continue),
            (ERESTART_RESTARTBLOCK, restarting, Restart::Interrupted),
            (Errno::EINTR, None, Restart::Keep),
            (Errno::EINTR, restarting, Restart::Keep),
        ];
        for (errno, flags, expected) in table {
            assert_eq!(decide(errno.to_return_value(), flags), expected, "{errno:?} with {flags:?}");
        }
        for value in [0, 1, 512, u64::MAX / 2] {
            assert_eq!(decide(value, restarting), Restart::Keep, "{value} is a success");
        }
        assert!(is_restart_code(ERESTARTSYS.to_return_value()) && !is_restart_code(Errno::EAGAIN.to_return_value()));
    }
}
