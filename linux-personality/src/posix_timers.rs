//! POSIX per-process timers (`timer_create` and kin): a table in the
//! process state of timers, each a [`TimerSlot`] (served as `itimers`
//! serves every slot) and how its expiry is told. An expiry whose signal
//! is still pending from the last one is an overrun: counted, not queued
//! again, and reported by `timer_getoverrun` and in `si_overrun`.
//!
//! Every clock's timer runs on the uptime clock; a `CLOCK_REALTIME`
//! absolute time is turned into uptime when the timer is set (a later
//! `clock_settime` does not move it). The CPU-time clocks are approximated
//! by elapsed time, as `clock_gettime` approximates them. `execve` and
//! exit delete every timer; a forked child has none.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::itimers::{self, TimerKind, TimerSlot};
use super::process::{Process, ProcessState};
use linux_abi::sigevent::Notify;
use linux_abi::signal_frame::{codes, SigInfo};
use linux_abi::Errno;

/// Most timers a process may have (Linux bounds them by the pending
/// signal limit; EAGAIN past it).
const MAX_TIMERS: usize = 4096;

/// One timer.
pub struct PosixTimer {
    pub id: u32,
    /// The clock its absolute times are read on.
    pub realtime: bool,
    pub notify: Notify,
    pub slot: TimerSlot,
    /// Expiries while its signal was still pending (since it was last sent).
    pub overrun: u32,
}

fn locate(state: &mut ProcessState, id: u32) -> Option<&mut TimerSlot> {
    find_mut(state, id).map(|timer| &mut timer.slot)
}

fn find_mut(state: &mut ProcessState, id: u32) -> Option<&mut PosixTimer> {
    state.posix_timers.iter_mut().find(|timer| timer.id == id)
}

/// What `read` says of timer `id` (EINVAL: no such timer).
fn with_timer<R>(process: &Process, id: u32, read: impl FnOnce(&PosixTimer) -> R) -> Result<R, Errno> {
    process.state().posix_timers.iter().find(|timer| timer.id == id).map(read).ok_or(Errno::EINVAL)
}

const POSIX_TIMER: TimerKind = TimerKind { locate, fire };

/// An expiry: the signal with `SI_TIMER` information, or an overrun if
/// this timer's last signal is still pending.
fn fire(process: &Arc<Process>, id: u32) {
    let sent = {
        let mut state = process.state();
        // The timer and the signal state are separate fields: one lookup.
        let ProcessState { posix_timers, signals, .. } = &mut *state;
        let Some(timer) = posix_timers.iter_mut().find(|timer| timer.id == id) else { return };
        let Notify::Signal { signal, value, thread } = timer.notify else { return };
        if signals.is_pending(signal) {
            timer.overrun = timer.overrun.saturating_add(1).min(i32::MAX as u32);
            None
        } else {
            timer.overrun = 0;
            let info = SigInfo { signo: signal, code: codes::SI_TIMER, words: [u64::from(id), value, 0] };
            Some((signal, info, thread))
        }
    };
    match sent {
        Some((signal, info, Some(thread))) => crate::syscall::send_thread_signal_with(process, thread, signal, info),
        Some((signal, info, None)) => crate::syscall::send_signal_with(process, signal, info),
        None => {}
    }
}

/// A new timer on `realtime`'s clock that tells `notify`; its id.
pub fn create(process: &Process, realtime: bool, notify: Option<Notify>) -> Result<u32, Errno> {
    let mut state = process.state();
    if state.posix_timers.len() >= MAX_TIMERS {
        return Err(Errno::EAGAIN);
    }
    let id = (0..).find(|id| !state.posix_timers.iter().any(|timer| timer.id == *id)).unwrap_or(0);
    // Without a sigevent: SIGALRM carrying the timer's id.
    let notify = notify.unwrap_or(Notify::Signal { signal: crate::signals::numbers::SIGALRM, value: u64::from(id), thread: None });
    state.posix_timers.try_reserve(1).map_err(|_| Errno::EAGAIN)?;
    state.posix_timers.push(PosixTimer { id, realtime, notify, slot: TimerSlot::default(), overrun: 0 });
    Ok(id)
}

/// Whether the timer's absolute times are on `CLOCK_REALTIME` (EINVAL: no
/// such timer).
pub fn is_realtime(process: &Process, id: u32) -> Result<bool, Errno> {
    with_timer(process, id, |timer| timer.realtime)
}

/// Arms (or with `None` disarms) timer `id`; its old setting.
pub fn set(process: &Arc<Process>, id: u32, deadline: Option<u64>, interval: u64) -> Result<(u64, u64), Errno> {
    itimers::arm(process, POSIX_TIMER, id, deadline, interval)
}

/// Timer `id`'s time left and interval.
pub fn get(process: &Process, id: u32) -> Result<(u64, u64), Errno> {
    let now = machine::timer::uptime_nanoseconds();
    with_timer(process, id, |timer| timer.slot.remaining(now))
}

/// Timer `id`'s overrun count.
pub fn overrun(process: &Process, id: u32) -> Result<u32, Errno> {
    with_timer(process, id, |timer| timer.overrun)
}

/// Deletes timer `id`.
pub fn delete(process: &Process, id: u32) -> Result<(), Errno> {
    with_timer(process, id, |_| ())?;
    itimers::disarm(process, locate, id);
    process.state().posix_timers.retain(|timer| timer.id != id);
    Ok(())
}

/// Deletes every timer (`execve`, exit).
pub fn delete_all(process: &Process) {
    let ids: Vec<u32> = process.state().posix_timers.iter().map(|timer| timer.id).collect();
    for id in ids {
        let _ = delete(process, id);
    }
}
