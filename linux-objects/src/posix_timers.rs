//! POSIX per-process timers (`timer_create` and kin): a table in the
//! process state of timers, each a [`TimerSlot`] (served as `itimers`
//! serves every slot) and how its expiry is told. An expiry whose signal
//! is still pending from the last one is an overrun: counted, not queued
//! again. When its signal is taken (delivered to a handler, `sigwait`ed,
//! read from a signalfd) the count is latched: it becomes the signal's
//! `si_overrun` and what `timer_getoverrun` reports until the next one is
//! taken, and counting starts again from zero (Linux's `it_overrun_last`).
//!
//! A timer on a wall clock runs on the uptime clock; a `CLOCK_REALTIME`
//! absolute time is turned into uptime when the timer is set (a later
//! `clock_settime` does not move it). A timer on a CPU-time clock (the
//! process's or one of its threads') is a [`CpuIntervalTimer`] on that
//! clock's reading, checked with the interval timers each time a thread
//! enters the kernel (`crate::cpu_itimers`). `execve` and exit delete
//! every timer; a forked child has none.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::itimers::{self, TimerKind, TimerSlot};
use super::process::{Process, ProcessState};
use super::signals::Disposition;
use linux_abi::cpu_times::{CpuIntervalTimer, CpuTimes};
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
    /// `overrun` when its last signal was taken (`timer_getoverrun`).
    pub overrun_last: u32,
    /// On a CPU-time clock: whose (the process, or thread `Some(tid)`) and
    /// its setting on that clock's reading.
    pub cpu: Option<(Option<u32>, CpuIntervalTimer)>,
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
pub fn fire(process: &Arc<Process>, id: u32, missed: u64) {
    let sent = {
        let mut state = process.state();
        // The timer and the signal state are separate fields: one lookup.
        let ProcessState { posix_timers, signals, .. } = &mut *state;
        let Some(timer) = posix_timers.iter_mut().find(|timer| timer.id == id) else { return };
        let Notify::Signal { signal, value, thread } = timer.notify else { return };
        let missed = u32::try_from(missed).unwrap_or(u32::MAX);
        if signals.is_pending(signal) {
            timer.overrun = timer.overrun.saturating_add(1).saturating_add(missed).min(i32::MAX as u32);
            None
        } else {
            // The expiries it missed are this signal's overruns (`si_overrun`).
            timer.overrun = missed.min(i32::MAX as u32);
            let info = SigInfo { signo: signal, code: codes::SI_TIMER, words: [u64::from(id), value, 0] };
            Some((signal, info, thread))
        }
    };
    match sent {
        Some((signal, info, Some(thread))) => crate::signal_sending::send_thread_signal_with(process, thread, signal, info),
        Some((signal, info, None)) => crate::signal_sending::send_signal_with(process, signal, info),
        None => {}
    }
}

/// A new timer on `realtime`'s clock (or on a CPU-time clock: the
/// process's, or thread `Some(tid)`'s) that tells `notify`; its id.
pub fn create(process: &Process, realtime: bool, cpu: Option<Option<u32>>, notify: Option<Notify>) -> Result<u32, Errno> {
    let mut state = process.state();
    if state.posix_timers.len() >= MAX_TIMERS {
        return Err(Errno::EAGAIN);
    }
    let id = (0..).find(|id| !state.posix_timers.iter().any(|timer| timer.id == *id)).unwrap_or(0);
    // Without a sigevent: SIGALRM carrying the timer's id.
    let notify = notify.unwrap_or(Notify::Signal { signal: crate::signals::numbers::SIGALRM, value: u64::from(id), thread: None });
    state.posix_timers.try_reserve(1).map_err(|_| Errno::EAGAIN)?;
    let cpu = cpu.map(|owner| (owner, CpuIntervalTimer::default()));
    state.posix_timers.push(PosixTimer { id, realtime, notify, slot: TimerSlot::default(), overrun: 0, overrun_last: 0, cpu });
    Ok(id)
}

/// Whether the timer's absolute times are on `CLOCK_REALTIME` (EINVAL: no
/// such timer).
pub fn is_realtime(process: &Process, id: u32) -> Result<bool, Errno> {
    with_timer(process, id, |timer| timer.realtime)
}

/// Arms (or with `None` disarms) timer `id`; its old setting.
pub fn set(process: &Arc<Process>, id: u32, deadline: Option<crate::clock::Limit>, interval: u64) -> Result<(u64, u64), Errno> {
    itimers::arm(process, POSIX_TIMER, id, deadline, interval)
}

/// Timer `id`'s time left and interval.
pub fn get(process: &Process, id: u32) -> Result<(u64, u64), Errno> {
    if let Some(owner) = cpu_owner(process, id)? {
        let reading = cpu_reading(process, owner);
        return with_timer(process, id, |timer| timer.cpu.map_or((0, 0), |(_, cpu)| cpu.remaining(reading)));
    }
    let now = machine::timer::uptime_nanoseconds();
    with_timer(process, id, |timer| timer.slot.remaining(now))
}

/// Whose CPU clock timer `id` runs on: `Some(None)` the process's,
/// `Some(Some(tid))` a thread's, `None` a wall clock (EINVAL: no timer).
pub fn cpu_owner(process: &Process, id: u32) -> Result<Option<Option<u32>>, Errno> {
    with_timer(process, id, |timer| timer.cpu.map(|(owner, _)| owner))
}

/// The reading of the CPU clock `owner` names (a thread that ended reads 0).
pub fn cpu_reading(process: &Process, owner: Option<u32>) -> u64 {
    match owner {
        None => process.cpu_times().total(),
        Some(tid) => process.thread_cpu_times(tid).map_or(0, CpuTimes::total),
    }
}

/// Arms CPU-clock timer `id`: first expiry `first` on its clock (absolute)
/// or `first` from now (0: disarm), then every `interval`; the old setting.
pub fn set_cpu(process: &Process, id: u32, first: u64, absolute: bool, interval: u64) -> Result<(u64, u64), Errno> {
    let owner = cpu_owner(process, id)?.ok_or(Errno::EINVAL)?;
    let reading = cpu_reading(process, owner);
    let value = match (first, absolute) {
        (0, _) => 0,
        (at, true) => at.saturating_sub(reading).max(1),
        (span, false) => span,
    };
    let old = {
        let mut state = process.state();
        let timer = find_mut(&mut state, id).ok_or(Errno::EINVAL)?;
        let Some((_, cpu)) = &mut timer.cpu else { return Err(Errno::EINVAL) };
        let old = cpu.remaining(reading);
        *cpu = CpuIntervalTimer::armed(reading, value, interval);
        old
    };
    if value > 0 {
        process.cpu_timers_armed.store(true, core::sync::atomic::Ordering::Relaxed);
    }
    Ok(old)
}

/// The CPU-clock timers that expired by now (`crate::cpu_itimers` fires
/// them), and whether any is still armed. `process_times`: the process's
/// CPU time, which the caller has just read (a thread's clock is read here).
pub fn expired_cpu_timers(process: &Process, process_times: CpuTimes) -> (Vec<u32>, bool) {
    let owners: Vec<(u32, Option<u32>)> = process.state().posix_timers.iter().filter_map(|timer| timer.cpu.map(|(owner, _)| (timer.id, owner))).collect();
    if owners.is_empty() {
        return (Vec::new(), false);
    }
    let reading = |owner: Option<u32>| match owner {
        None => process_times.total(),
        Some(_) => cpu_reading(process, owner),
    };
    let readings: Vec<(u32, u64)> = owners.iter().map(|(id, owner)| (*id, reading(*owner))).collect();
    let mut state = process.state();
    let mut due = Vec::new();
    let mut armed = false;
    for (id, reading) in readings {
        if let Some((_, cpu)) = find_mut(&mut state, id).and_then(|timer| timer.cpu.as_mut()) {
            if cpu.expire(reading) {
                due.push(id);
            }
            armed |= cpu.is_armed();
        }
    }
    (due, armed)
}

/// Timer `id`'s overrun count when its last signal was taken.
pub fn overrun(process: &Process, id: u32) -> Result<u32, Errno> {
    with_timer(process, id, |timer| timer.overrun_last)
}

/// Takes thread `tid`'s next deliverable signal (`SignalState::take`);
/// each timer's signal taken, ignored ones too, latches its overrun count.
pub fn take_signal(state: &mut ProcessState, tid: u32) -> Option<Disposition> {
    let ProcessState { posix_timers, signals, .. } = state;
    signals.take(tid, |info| latch_overrun(posix_timers, info))
}

/// Takes thread `tid`'s lowest pending signal of `set`
/// (`SignalState::take_waited`); a timer's signal latches its overrun count.
pub fn take_waited_signal(state: &mut ProcessState, tid: u32, set: u64) -> Option<(u32, SigInfo)> {
    let ProcessState { posix_timers, signals, .. } = state;
    let mut taken = signals.take_waited(tid, set);
    if let Some((_, info)) = &mut taken {
        latch_overrun(posix_timers, info);
    }
    taken
}

/// A timer's signal was taken: its overruns so far become `si_overrun`
/// (the high half of the first word, after the timer id) and what
/// `timer_getoverrun` says, and counting starts again.
fn latch_overrun(timers: &mut [PosixTimer], info: &mut SigInfo) {
    if info.code != codes::SI_TIMER {
        return;
    }
    let id = info.words[0] as u32;
    if let Some(timer) = timers.iter_mut().find(|timer| timer.id == id) {
        timer.overrun_last = core::mem::take(&mut timer.overrun);
        info.words[0] = u64::from(id) | (u64::from(timer.overrun_last) << 32);
    }
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
