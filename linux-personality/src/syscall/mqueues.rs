//! POSIX message-queue calls: `mq_open`, `mq_unlink`, `mq_timedsend`,
//! `mq_timedreceive`, `mq_notify` and `mq_getsetattr`, on descriptors of
//! `crate::mqueues` queues, with Linux's order of checks and errno values.
//! Time limits are absolute `CLOCK_REALTIME` times, read into uptime when
//! the call starts.

use super::files::install;
use super::{value, Call, CallResult, UserPtr};
use crate::clock::Limit;
use crate::mqueues::{self, MessageQueue, Waiting};
use crate::open_files::{self, flags, Backing, OpenFile};
use alloc::sync::Arc;
use caps::Placement;
use linux_abi::message_queue::{attr_bytes, check_name, flags_of_attr, QueueShape, ATTR_BYTES, NAME_MAX};
use linux_abi::sigevent::{parse_sigevent, Notify, SIGEVENT_READ_BYTES};
use linux_abi::{Errno, Timespec};

fn queue_name(call: &Call<'_>, address: u64) -> Result<alloc::vec::Vec<u8>, Errno> {
    let name = call.string_in(address, NAME_MAX + 1)?;
    check_name(&name)?;
    Ok(name)
}

pub fn mq_open(call: &mut Call<'_>) -> CallResult {
    let (open_flags, attr) = (call.argument(1) as u32, call.argument(3));
    let name = queue_name(call, call.argument(0))?;
    if open_flags & flags::O_ACCMODE == flags::O_ACCMODE {
        return Err(Errno::EINVAL);
    }
    let create = open_flags & flags::O_CREAT != 0;
    let shape = if create && attr != 0 {
        let mut bytes = [0u8; ATTR_BYTES];
        call.read_in(attr, &mut bytes)?;
        QueueShape::from_attr(&bytes)?
    } else {
        QueueShape::default()
    };
    let queue = mqueues::open(&name, create, open_flags & flags::O_EXCL != 0, shape)?;
    let status = open_flags & (flags::O_ACCMODE | flags::O_NONBLOCK);
    // Message-queue descriptors are closed by execve, as on Linux.
    install(call, OpenFile::new(Backing::MessageQueue(queue), status), Placement::LowestFrom(0), true)
}

pub fn mq_unlink(call: &mut Call<'_>) -> CallResult {
    let name = queue_name(call, call.argument(0))?;
    mqueues::unlink(&name)?;
    value(0)
}

/// The queue behind descriptor `fd` and its description (EBADF if it is
/// none).
fn queue_of(call: &Call<'_>, fd: u64) -> Result<(Arc<OpenFile>, Arc<MessageQueue>), Errno> {
    let file = open_files::file(call.process.native.space(), fd)?;
    let Backing::MessageQueue(queue) = &file.backing else { return Err(Errno::EBADF) };
    let queue = queue.clone();
    Ok((file, queue))
}

/// An absolute `CLOCK_REALTIME` limit (EINVAL for a bad timespec; never
/// without one).
fn limit(call: &Call<'_>, index: usize) -> Result<Limit, Errno> {
    let Some(limit) = UserPtr::<Timespec>::argument(call, index) else { return Ok(Limit::NEVER) };
    Ok(Limit::Realtime(limit.read(call)?.as_nanoseconds()))
}

pub fn mq_timedsend(call: &mut Call<'_>) -> CallResult {
    let (fd, message, length, priority) = (call.argument(0), call.argument(1), call.argument(2) as usize, call.argument(3));
    if priority >= u64::from(linux_abi::message_queue::PRIORITY_LIMIT) {
        return Err(Errno::EINVAL);
    }
    let limit = limit(call, 4)?;
    let (file, queue) = queue_of(call, fd)?;
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    if length as u64 > queue.attributes().0.message_size {
        return Err(Errno::EMSGSIZE);
    }
    let mut bytes = super::buffers::zeroed(length)?;
    call.read_in(message, &mut bytes)?;
    let interrupted = || call.interrupted();
    let waiting = Waiting { nonblocking: file.status() & flags::O_NONBLOCK != 0, limit, interrupted: &interrupted };
    queue.send(&bytes, priority as u32, call.pid(), &waiting)?;
    value(0)
}

pub fn mq_timedreceive(call: &mut Call<'_>) -> CallResult {
    let (fd, buffer, capacity, priority_out) = (call.argument(0), call.argument(1), call.argument(2) as usize, call.argument(3));
    let limit = limit(call, 4)?;
    let (file, queue) = queue_of(call, fd)?;
    if !file.readable() {
        return Err(Errno::EBADF);
    }
    let interrupted = || call.interrupted();
    let waiting = Waiting { nonblocking: file.status() & flags::O_NONBLOCK != 0, limit, interrupted: &interrupted };
    let (message, priority) = queue.receive(capacity, &waiting)?;
    // The message is taken: a bad buffer loses it, as on Linux.
    call.write_out(buffer, &message)?;
    if priority_out != 0 {
        call.write_out(priority_out, &priority.to_le_bytes())?;
    }
    value(message.len() as u64)
}

pub fn mq_notify(call: &mut Call<'_>) -> CallResult {
    let (_, queue) = queue_of(call, call.argument(0))?;
    let pid = call.pid();
    match call.argument(1) {
        0 => queue.notify(pid, false, None)?,
        address => {
            let mut bytes = [0u8; SIGEVENT_READ_BYTES];
            call.read_in(address, &mut bytes)?;
            // Only SIGEV_NONE and SIGEV_SIGNAL here (SIGEV_THREAD is the C
            // library's, through a netlink socket Lamina does not have).
            let signal = match parse_sigevent(&bytes, |_| false)? {
                Notify::Nothing => None,
                Notify::Signal { signal, value, .. } => Some((signal, value)),
            };
            queue.notify(pid, true, signal)?;
        }
    }
    value(0)
}

pub fn mq_getsetattr(call: &mut Call<'_>) -> CallResult {
    let (fd, new, old) = (call.argument(0), call.argument(1), call.argument(2));
    let new_flags = if new != 0 {
        let mut bytes = [0u8; ATTR_BYTES];
        call.read_in(new, &mut bytes)?;
        let wanted = flags_of_attr(&bytes);
        if wanted & !u64::from(flags::O_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        Some(wanted as u32)
    } else {
        None
    };
    let (file, queue) = queue_of(call, fd)?;
    if old != 0 {
        let (shape, current) = queue.attributes();
        call.write_out(old, &attr_bytes(u64::from(file.status() & flags::O_NONBLOCK), shape, current))?;
    }
    if let Some(wanted) = new_flags {
        file.set_status((file.status() & !flags::O_NONBLOCK) | wanted);
    }
    value(0)
}
