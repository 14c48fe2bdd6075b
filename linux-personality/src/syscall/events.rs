//! Event descriptors: `eventfd` counters, `epoll` instances (create,
//! control, wait), `timerfd` timers and `signalfd` descriptors. The objects
//! are `event_counters.rs`, `epoll.rs`, `timer_fds.rs` and `signal_fds.rs`;
//! this file checks arguments and moves bytes.

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::Placement;

use super::files::{descriptor, install_descriptor, timespec_deadline, wait_ready};
use super::{value, Call, CallResult};
use crate::epoll::{Control, EpollSet, KNOWN_EVENTS};
use crate::event_counters::EventCounter;
use crate::signal_fds::SignalFd;
use crate::timer_fds::TimerFd;
use super::UserPtr;
use linux_abi::{signalfd, timerfd, ItimerSpec, Timespec};
use crate::open_files::{flags, Backing, OpenFile};
use linux_abi::Errno;

const EFD_SEMAPHORE: u64 = 1;
const EFD_NONBLOCK: u64 = 0o4000;
const EFD_CLOEXEC: u64 = 0o2000000;
const EPOLL_CLOEXEC: u64 = 0o2000000;
/// `struct epoll_event` is packed on x86-64: events (4), data (8).
const EPOLL_EVENT_BYTES: usize = 12;
/// Events an `epoll_wait` gathers on the kernel stack; more go to the heap.
const EVENTS_ON_STACK: usize = 32;
/// The most events one `epoll_wait` returns (Linux's `EP_MAX_EVENTS`).
const MAX_EVENTS: i32 = (i32::MAX as usize / EPOLL_EVENT_BYTES) as i32;

/// `eventfd(initial)` and `eventfd2(initial, flags)`.
pub fn eventfd(call: &mut Call<'_>, with_flags: bool) -> CallResult {
    let initial = call.argument(0) as u32;
    let event_flags = if with_flags { call.argument(1) } else { 0 };
    if event_flags & !(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let status = flags::O_RDWR | if event_flags & EFD_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let counter = EventCounter::new(initial, event_flags & EFD_SEMAPHORE != 0);
    let fd = install_descriptor(call, OpenFile::new(Backing::EventCounter(counter), status), Placement::LowestFrom(0), event_flags & EFD_CLOEXEC != 0)?;
    value(u64::from(fd))
}

/// `epoll_create(size)` (size > 0, otherwise unused) and
/// `epoll_create1(flags)`.
pub fn epoll_create(call: &mut Call<'_>, with_flags: bool) -> CallResult {
    let close_on_exec = if with_flags {
        if call.argument(0) & !EPOLL_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        call.argument(0) & EPOLL_CLOEXEC != 0
    } else {
        if call.argument(0) as i32 <= 0 {
            return Err(Errno::EINVAL);
        }
        false
    };
    let fd = install_descriptor(call, OpenFile::new(Backing::Epoll(EpollSet::new()), flags::O_RDWR), Placement::LowestFrom(0), close_on_exec)?;
    value(u64::from(fd))
}

/// `epoll_ctl(epfd, op, fd, event)`.
pub fn epoll_ctl(call: &mut Call<'_>) -> CallResult {
    const EPOLL_CTL_ADD: u64 = 1;
    const EPOLL_CTL_DEL: u64 = 2;
    const EPOLL_CTL_MOD: u64 = 3;
    let (epoll_fd, operation, fd) = (call.argument(0), call.argument(1), call.argument(2));
    let operation = match operation {
        EPOLL_CTL_ADD => Control::Add,
        EPOLL_CTL_DEL => Control::Delete,
        EPOLL_CTL_MOD => Control::Modify,
        _ => return Err(Errno::EINVAL),
    };
    let instance = descriptor(call, epoll_fd)?;
    let target = descriptor(call, fd)?;
    let Backing::Epoll(set) = &instance.backing else { return Err(Errno::EINVAL) };
    if epoll_fd == fd {
        return Err(Errno::EINVAL);
    }
    // Regular files and directories are always ready: Linux refuses them.
    if matches!(target.backing, Backing::Inode(_)) {
        return Err(Errno::EPERM);
    }
    let (events, data) = if operation == Control::Delete {
        (0, 0)
    } else {
        let mut bytes = [0u8; EPOLL_EVENT_BYTES];
        call.read_in(call.argument(3), &mut bytes)?;
        let events = u32::from_le_bytes(bytes[..4].try_into().map_err(|_| Errno::EFAULT)?);
        let data = u64::from_le_bytes(bytes[4..].try_into().map_err(|_| Errno::EFAULT)?);
        if events & !KNOWN_EVENTS != 0 {
            return Err(Errno::EINVAL);
        }
        (events, data)
    };
    set.control(operation, fd as u32, &target, events, data)?;
    value(0)
}

/// `epoll_wait(epfd, events, max, timeout_ms)` and `epoll_pwait` (the
/// signal mask is not applied yet); returns how many events it wrote.
pub fn epoll_wait(call: &mut Call<'_>) -> CallResult {
    let (epoll_fd, address, most, timeout) = (call.argument(0), call.argument(1), call.argument(2) as i32, call.argument(3) as i32);
    if most <= 0 || most > MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    let deadline = (timeout >= 0).then(|| super::files::deadline_after(timeout as u64 * 1_000_000));
    wait_for_events(call, epoll_fd, address, most as usize, deadline)
}

/// `epoll_pwait2(epfd, events, max, timeout timespec, mask)`.
pub fn epoll_pwait2(call: &mut Call<'_>) -> CallResult {
    let (epoll_fd, address, most) = (call.argument(0), call.argument(1), call.argument(2) as i32);
    if most <= 0 || most > MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    let deadline = timespec_deadline(call, 3)?;
    wait_for_events(call, epoll_fd, address, most as usize, deadline)
}

fn wait_for_events(call: &Call<'_>, epoll_fd: u64, address: u64, most: usize, deadline: Option<u64>) -> CallResult {
    let instance = descriptor(call, epoll_fd)?;
    let Backing::Epoll(set) = &instance.backing else { return Err(Errno::EINVAL) };
    // The events as the caller's memory has them, on the kernel stack when
    // few may come.
    let mut on_stack = [0u8; EVENTS_ON_STACK * EPOLL_EVENT_BYTES];
    let mut on_heap = alloc::vec::Vec::new();
    let bytes: &mut [u8] = if most <= EVENTS_ON_STACK {
        &mut on_stack[..most * EPOLL_EVENT_BYTES]
    } else {
        // Room for every entry, not for `most`, which may be huge (at
        // least the stack's worth: entries may come while it waits).
        let room = most.min(set.entry_count().max(EVENTS_ON_STACK)) * EPOLL_EVENT_BYTES;
        on_heap.try_reserve_exact(room).map_err(|_| Errno::ENOMEM)?;
        on_heap.resize(room, 0);
        &mut on_heap
    };
    let capacity = bytes.len() / EPOLL_EVENT_BYTES;
    let found = wait_ready(call, deadline, true, || {
        let mut at = 0;
        set.ready(capacity, 0, true, |events, data| {
            bytes[at..at + 4].copy_from_slice(&events.to_le_bytes());
            bytes[at + 4..at + EPOLL_EVENT_BYTES].copy_from_slice(&data.to_le_bytes());
            at += EPOLL_EVENT_BYTES;
        })
    })
    // An epoll wait is never restarted after a handler (Linux: EINTR).
    .map_err(|errno| if errno == linux_abi::restart::ERESTARTNOHAND { Errno::EINTR } else { errno })?;
    call.write_out(address, &bytes[..found * EPOLL_EVENT_BYTES])?;
    value(found as u64)
}

/// `timerfd_create(clock, flags)`: CLOCK_REALTIME, CLOCK_MONOTONIC,
/// CLOCK_BOOTTIME and their alarm forms (root may use them).
pub fn timerfd_create(call: &mut Call<'_>) -> CallResult {
    let (clock, timer_flags) = (call.argument(0), call.argument(1));
    timerfd::check_create_flags(timer_flags)?;
    let realtime = super::clocks::timer_clock_is_realtime(clock).ok_or(Errno::EINVAL)?;
    let status = flags::O_RDWR | if timer_flags & timerfd::NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let file = OpenFile::new(Backing::Timer(TimerFd::new(realtime)), status);
    let fd = install_descriptor(call, file, Placement::LowestFrom(0), timer_flags & timerfd::CLOEXEC != 0)?;
    value(u64::from(fd))
}

fn timer_of(call: &Call<'_>, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    let file = descriptor(call, fd)?;
    match file.backing {
        Backing::Timer(_) => Ok(file),
        _ => Err(Errno::EINVAL),
    }
}

fn as_itimerspec((remaining, interval): (u64, u64)) -> ItimerSpec {
    ItimerSpec { interval: Timespec::from_nanoseconds(interval), value: Timespec::from_nanoseconds(remaining) }
}

/// `timerfd_settime(fd, flags, new, old)`.
pub fn timerfd_settime(call: &mut Call<'_>) -> CallResult {
    let file = timer_of(call, call.argument(0))?;
    let timer_flags = call.argument(1);
    timerfd::check_set_flags(timer_flags)?;
    let new = UserPtr::<ItimerSpec>::argument(call, 2).ok_or(Errno::EFAULT)?.read(call)?;
    let Backing::Timer(timer) = &file.backing else { return Err(Errno::EINVAL) };
    let old = timer.set(new.value.as_nanoseconds(), timer_flags & timerfd::TIMER_ABSTIME != 0, new.interval.as_nanoseconds());
    if let Some(out) = UserPtr::<ItimerSpec>::argument(call, 3) {
        out.write(call, &as_itimerspec(old))?;
    }
    value(0)
}

/// `timerfd_gettime(fd, current)`.
pub fn timerfd_gettime(call: &mut Call<'_>) -> CallResult {
    let file = timer_of(call, call.argument(0))?;
    let Backing::Timer(timer) = &file.backing else { return Err(Errno::EINVAL) };
    let out = UserPtr::<ItimerSpec>::argument(call, 1).ok_or(Errno::EFAULT)?;
    out.write(call, &as_itimerspec(timer.get()))?;
    value(0)
}

/// `signalfd(fd, mask, size)` and `signalfd4(fd, mask, size, flags)`: a
/// new descriptor (fd -1) or a new mask for an existing one.
pub fn signalfd(call: &mut Call<'_>, with_flags: bool) -> CallResult {
    const SFD_NONBLOCK: u64 = 0o4000;
    const SFD_CLOEXEC: u64 = 0o2000000;
    let (fd, size) = (call.argument(0) as i32, call.argument(2));
    let signal_flags = if with_flags { call.argument(3) } else { 0 };
    if size != 8 || signal_flags & !(SFD_NONBLOCK | SFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let mask = call.word_in(call.argument(1))?;
    if fd != -1 {
        let file = descriptor(call, fd as u64)?;
        let Backing::Signals(signals) = &file.backing else { return Err(Errno::EINVAL) };
        signals.set_mask(mask);
        return value(fd as u64);
    }
    let process = Arc::downgrade(call.process);
    let status = flags::O_RDWR | if signal_flags & SFD_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let file = OpenFile::new(Backing::Signals(SignalFd::new(mask, process, call.thread.tid)), status);
    let fd = install_descriptor(call, file, Placement::LowestFrom(0), signal_flags & SFD_CLOEXEC != 0)?;
    value(u64::from(fd))
}

/// A read of a signal descriptor: as many pending signals of its mask as
/// fit, at least one (waiting for it unless `nonblocking`).
pub(super) fn read_signals(call: &Call<'_>, signals: &SignalFd, length: usize, nonblocking: bool) -> Result<Vec<u8>, Errno> {
    if length < signalfd::RECORD_BYTES {
        return Err(Errno::EINVAL);
    }
    let room = (length / signalfd::RECORD_BYTES).min(64);
    loop {
        let mut records = Vec::new();
        records.try_reserve_exact(room * signalfd::RECORD_BYTES).map_err(|_| Errno::ENOMEM)?;
        {
            let mut state = call.process.state();
            while records.len() < room * signalfd::RECORD_BYTES {
                let Some((_, info)) = crate::posix_timers::take_waited_signal(&mut state, call.thread.tid, signals.mask()) else { break };
                records.extend_from_slice(&signalfd::record(&info));
            }
        }
        if !records.is_empty() {
            return Ok(records);
        }
        if nonblocking {
            return Err(Errno::EAGAIN);
        }
        if call.interrupted() {
            return Err(linux_abi::restart::ERESTARTSYS);
        }
        let pending = || call.process.state().signals.pending_for(call.thread.tid) & signals.mask() != 0 || call.interrupted();
        sched::sleep_until(u64::MAX, pending);
    }
}
