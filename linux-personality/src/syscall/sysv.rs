//! System V IPC calls: `shmget`/`shmat`/`shmdt`/`shmctl`,
//! `semget`/`semop`/`semtimedop`/`semctl`, `msgget`/`msgsnd`/`msgrcv`/
//! `msgctl`. Arguments are checked and user memory copied here, never with
//! the IPC lock held across a copy; the objects are `crate::sysv_ipc`'s and
//! the rules `linux_abi::sysv_ipc`'s.

use alloc::vec::Vec;

use kernel_objects::address_spaces::carry_out;
use kernel_objects::capabilities::memory_objects;
use linux_abi::sysv_ipc::{self as rules, Perm, SemOp, SemopOutcome};
use linux_abi::{Errno, Timespec};
use vmem::{Rights, PAGE_SIZE};

use super::{value, Call, CallResult, UserPtr};
use crate::process::MMAP_TOP;
use crate::sysv_ipc::{detached, now_seconds, objects, Message, MessageQueue, SemaphoreSet, Segment};

/// `SHM_DEST` in a segment's mode: removed, waiting for its last detach.
const SHM_DEST: u32 = 0o1000;

/// Sleeps a step (at most 10 ms, or to `deadline`) while a System V call
/// waits; EINTR for a signal, EAGAIN once `deadline` (uptime) passed.
fn wait_a_step(call: &Call<'_>, deadline: Option<u64>) -> Result<(), Errno> {
    if call.interrupted() {
        return Err(Errno::EINTR);
    }
    let now = machine::timer::uptime_nanoseconds();
    if deadline.is_some_and(|deadline| now >= deadline) {
        return Err(Errno::EAGAIN);
    }
    sched::sleep_until((now + 10_000_000).min(deadline.unwrap_or(u64::MAX)), || call.interrupted());
    Ok(())
}

/// After a wait, a vanished object is EIDRM (it was removed while waited on).
fn removed_while_waiting(waited: bool, errno: Errno) -> Errno {
    if waited && errno == Errno::EINVAL { Errno::EIDRM } else { errno }
}

pub fn shmget(call: &mut Call<'_>) -> CallResult {
    let (key, size, flags) = (call.argument(0) as i32, call.argument(1), call.argument(2) as u32);
    let container = call.process.native.container();
    let pid = call.pid();
    let id = objects().segments.get(
        key,
        flags,
        |segment| if size > segment.size { Err(Errno::EINVAL) } else { Ok(()) },
        || {
            if size == 0 {
                return Err(Errno::EINVAL);
            }
            let pages = size.div_ceil(PAGE_SIZE);
            if pages > memory_objects::MAX_PAGES {
                return Err(Errno::ENOMEM);
            }
            let handle = memory_objects::create(container, pages)?;
            Ok(Segment { handle, size, mode: flags & 0o777, attaches: 0, removed: false, times: [0, 0, now_seconds()], creator: pid, last: 0 })
        },
    )?;
    value(id as u64)
}

pub fn shmat(call: &mut Call<'_>) -> CallResult {
    let (id, wanted, flags) = (call.argument(0) as i32, call.argument(1), call.argument(2) as u32);
    let (handle, size) = {
        let mut objects = objects();
        let segment = objects.segments.find(id)?;
        (segment.handle, segment.size)
    };
    let length = size.next_multiple_of(PAGE_SIZE);
    super::memory::within_address_limit(call, length)?;
    let address = match wanted {
        0 => super::memory::place_mapping(call, length)?,
        at if flags & rules::SHM_RND != 0 => at & !(PAGE_SIZE - 1),
        at if at % PAGE_SIZE != 0 => return Err(Errno::EINVAL),
        at => at,
    };
    if address.checked_add(length).is_none_or(|end| end > MMAP_TOP) {
        return Err(Errno::EINVAL);
    }
    let native = &call.process.native;
    if flags & rules::SHM_REMAP != 0 {
        let flush = native.with_memory(|memory| memory.unmap(address, length))?;
        carry_out(flush.map_err(Errno::from)?);
    }
    let rights = if flags & rules::SHM_RDONLY != 0 { Rights::READ } else { Rights::READ_WRITE };
    memory_objects::map_into(native, address, handle, rights).map_err(|errno| if errno == Errno::EEXIST { Errno::EINVAL } else { errno })?;
    {
        let mut objects = objects();
        if let Ok(segment) = objects.segments.find(id) {
            segment.attaches += 1;
            segment.times[0] = now_seconds();
            segment.last = call.pid();
        }
    }
    let mut state = call.process.state();
    state.sysv.attachments.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    state.sysv.attachments.push((address, id, length));
    value(address)
}

pub fn shmdt(call: &mut Call<'_>) -> CallResult {
    let address = call.argument(0);
    let (id, length) = {
        let mut state = call.process.state();
        let index = state.sysv.attachments.iter().position(|(at, _, _)| *at == address).ok_or(Errno::EINVAL)?;
        let (_, id, length) = state.sysv.attachments.remove(index);
        (id, length)
    };
    let flush = call.process.native.with_memory(|memory| memory.unmap(address, length))?;
    call.process.native.carry_out(flush.map_err(Errno::from)?);
    detached(id, call.pid());
    value(0)
}

pub fn shmctl(call: &mut Call<'_>) -> CallResult {
    const SHM_LOCK: u32 = 11;
    const SHM_UNLOCK: u32 = 12;
    let (id, command, buffer) = (call.argument(0) as i32, call.argument(1) as u32 & !rules::IPC_64, call.argument(2));
    match command {
        rules::IPC_STAT => {
            let record = {
                let mut objects = objects();
                let key = objects.segments.key_of(id).unwrap_or(0);
                let segment = objects.segments.find(id)?;
                let mode = segment.mode | if segment.removed { SHM_DEST } else { 0 };
                rules::shmid_ds(Perm { key, mode, sequence: Perm::sequence_of(id) }, segment.size, segment.times, (segment.creator, segment.last), segment.attaches)
            };
            call.write_out(buffer, &record)?;
            value(0)
        }
        rules::IPC_SET => {
            let mode = read_mode(call, buffer)?;
            let mut objects = objects();
            let segment = objects.segments.find(id)?;
            segment.mode = mode;
            segment.times[2] = now_seconds();
            value(0)
        }
        rules::IPC_RMID => {
            let mut objects = objects();
            let segment = objects.segments.find(id)?;
            segment.removed = true;
            if segment.attaches == 0 {
                if let Some(segment) = objects.segments.remove(id) {
                    memory_objects::release(segment.handle);
                }
            } else {
                objects.segments.forget_key(id);
            }
            value(0)
        }
        SHM_LOCK | SHM_UNLOCK => objects().segments.find(id).and_then(|_| value(0)), // nothing is ever paged out
        _ => Err(Errno::EINVAL),
    }
}

/// The permission bits of the `ipc64_perm` at the start of a record.
fn read_mode(call: &Call<'_>, buffer: u64) -> Result<u32, Errno> {
    let mut bytes = [0u8; 4];
    call.read_in(buffer.checked_add(20).ok_or(Errno::EFAULT)?, &mut bytes)?;
    Ok(u32::from_le_bytes(bytes) & 0o777)
}

pub fn semget(call: &mut Call<'_>) -> CallResult {
    let (key, count, flags) = (call.argument(0) as i32, call.argument(1) as i32, call.argument(2) as u32);
    if count < 0 || count as usize > rules::SEMMSL {
        return Err(Errno::EINVAL);
    }
    let count = count as usize;
    let id = objects().semaphores.get(
        key,
        flags,
        |set| if count > set.values.len() { Err(Errno::EINVAL) } else { Ok(()) },
        || {
            if count == 0 {
                return Err(Errno::EINVAL);
            }
            let mut values = Vec::new();
            values.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
            values.resize(count, 0);
            let mut last_pids = Vec::new();
            last_pids.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
            last_pids.resize(count, 0);
            let mut waiting = Vec::new();
            waiting.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
            waiting.resize(count, (0, 0));
            Ok(SemaphoreSet { waiting, values, last_pids, mode: flags & 0o777, operated: 0, changed: now_seconds() })
        },
    )?;
    value(id as u64)
}

/// `semop(id, ops, count)` and `semtimedop(…, timeout)`: all operations at
/// once, waiting until they can be.
pub fn semop(call: &mut Call<'_>, timed: bool) -> CallResult {
    let (id, address, count) = (call.argument(0) as i32, call.argument(1), call.argument(2));
    if count == 0 {
        return Err(Errno::EINVAL);
    }
    if count as usize > rules::SEMOPM {
        return Err(Errno::E2BIG);
    }
    let deadline = match UserPtr::<Timespec>::argument(call, 3).filter(|_| timed) {
        Some(limit) => Some(machine::timer::uptime_nanoseconds().saturating_add(limit.read(call)?.as_nanoseconds())),
        None => None,
    };
    let mut bytes = super::buffers::zeroed(count as usize * rules::SEMBUF_BYTES)?;
    call.read_in(address, &mut bytes)?;
    let ops: Vec<SemOp> = bytes.chunks(rules::SEMBUF_BYTES).map(SemOp::decode).collect();
    let pid = call.pid();
    let mut waited = false;
    loop {
        let outcome = {
            let mut objects = objects();
            let set = objects.semaphores.find(id).map_err(|errno| removed_while_waiting(waited, errno))?;
            let outcome = rules::semop(&mut set.values, &ops)?;
            match &outcome {
                SemopOutcome::Done(_) => {
                    for op in ops.iter().filter(|op| op.op != 0) {
                        set.last_pids[usize::from(op.number)] = pid;
                    }
                    set.operated = now_seconds();
                }
                SemopOutcome::Wait { number, for_zero } => {
                    let counts = &mut set.waiting[usize::from(*number)];
                    if *for_zero { counts.1 += 1 } else { counts.0 += 1 }
                }
            }
            outcome
        };
        match outcome {
            SemopOutcome::Done(undo) => {
                if !undo.is_empty() {
                    record_undo(call, id, &undo)?;
                }
                return value(0);
            }
            SemopOutcome::Wait { number, for_zero } => {
                let waited_out = wait_a_step(call, deadline);
                if let Ok(set) = objects().semaphores.find(id) {
                    let counts = &mut set.waiting[usize::from(number)];
                    if for_zero { counts.1 -= 1 } else { counts.0 -= 1 }
                }
                waited_out?;
                waited = true;
            }
        }
    }
}

/// Adds `SEM_UNDO` adjustments of set `id` to the caller's.
fn record_undo(call: &Call<'_>, id: i32, undo: &[(u16, i32)]) -> Result<(), Errno> {
    let mut state = call.process.state();
    for &(number, adjustment) in undo {
        match state.sysv.undo.iter_mut().find(|(set, semaphore, _)| *set == id && *semaphore == number) {
            Some(entry) => entry.2 += adjustment,
            None => {
                state.sysv.undo.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                state.sysv.undo.push((id, number, adjustment));
            }
        }
    }
    Ok(())
}

pub fn semctl(call: &mut Call<'_>) -> CallResult {
    const GETPID: u32 = 11;
    const GETVAL: u32 = 12;
    const GETALL: u32 = 13;
    const GETNCNT: u32 = 14;
    const GETZCNT: u32 = 15;
    const SETVAL: u32 = 16;
    const SETALL: u32 = 17;
    let (id, number, command, argument) = (call.argument(0) as i32, call.argument(1) as usize, call.argument(2) as u32 & !rules::IPC_64, call.argument(3));
    let one = |read: fn(&SemaphoreSet, usize) -> u64| -> CallResult {
        let mut objects = objects();
        let set = objects.semaphores.find(id)?;
        if number >= set.values.len() {
            return Err(Errno::EINVAL);
        }
        value(read(set, number))
    };
    match command {
        GETVAL => one(|set, number| set.values[number] as u64),
        GETPID => one(|set, number| u64::from(set.last_pids[number])),
        GETNCNT => one(|set, number| u64::from(set.waiting[number].0)),
        GETZCNT => one(|set, number| u64::from(set.waiting[number].1)),
        SETVAL => {
            let new = argument as i32;
            if !(0..=rules::SEMVMX).contains(&new) {
                return Err(Errno::ERANGE);
            }
            let mut objects = objects();
            let set = objects.semaphores.find(id)?;
            let value_slot = set.values.get_mut(number).ok_or(Errno::EINVAL)?;
            *value_slot = new;
            set.last_pids[number] = call.pid();
            set.changed = now_seconds();
            value(0)
        }
        GETALL => {
            let values: Vec<u8> = {
                let mut objects = objects();
                objects.semaphores.find(id)?.values.iter().flat_map(|value| (*value as u16).to_le_bytes()).collect()
            };
            call.write_out(argument, &values)?;
            value(0)
        }
        SETALL => {
            let count = objects().semaphores.find(id)?.values.len();
            let mut bytes = super::buffers::zeroed(count * 2)?;
            call.read_in(argument, &mut bytes)?;
            let new: Vec<i32> = bytes.chunks(2).map(|pair| i32::from(u16::from_le_bytes([pair[0], pair[1]]))).collect();
            if new.iter().any(|value| *value > rules::SEMVMX) {
                return Err(Errno::ERANGE);
            }
            let mut objects = objects();
            let set = objects.semaphores.find(id)?;
            if set.values.len() != new.len() {
                return Err(Errno::EIDRM);
            }
            set.values.copy_from_slice(&new);
            let pid = call.pid();
            set.last_pids.iter_mut().for_each(|last| *last = pid);
            set.changed = now_seconds();
            value(0)
        }
        rules::IPC_STAT => {
            let record = {
                let mut objects = objects();
                let key = objects.semaphores.key_of(id).unwrap_or(0);
                let set = objects.semaphores.find(id)?;
                rules::semid_ds(Perm { key, mode: set.mode, sequence: Perm::sequence_of(id) }, set.operated, set.changed, set.values.len() as u64)
            };
            call.write_out(argument, &record)?;
            value(0)
        }
        rules::IPC_SET => {
            let mode = read_mode(call, argument)?;
            let mut objects = objects();
            let set = objects.semaphores.find(id)?;
            set.mode = mode;
            set.changed = now_seconds();
            value(0)
        }
        rules::IPC_RMID => objects().semaphores.remove(id).ok_or(Errno::EINVAL).and_then(|_| value(0)),
        _ => Err(Errno::EINVAL),
    }
}

pub fn msgget(call: &mut Call<'_>) -> CallResult {
    let (key, flags) = (call.argument(0) as i32, call.argument(1) as u32);
    let id = objects().queues.get(key, flags, |_| Ok(()), || Ok(MessageQueue::new(flags & 0o777)))?;
    value(id as u64)
}

pub fn msgsnd(call: &mut Call<'_>) -> CallResult {
    let (id, address, size, flags) = (call.argument(0) as i32, call.argument(1), call.argument(2) as i64, call.argument(3) as u32);
    if !(0..=rules::MSGMAX as i64).contains(&size) {
        return Err(Errno::EINVAL);
    }
    objects().queues.find(id)?;
    let kind = call.word_in(address)? as i64;
    if kind <= 0 {
        return Err(Errno::EINVAL);
    }
    let mut text = Vec::new();
    text.try_reserve_exact(size as usize).map_err(|_| Errno::ENOMEM)?;
    text.resize(size as usize, 0);
    call.read_in(address + 8, &mut text)?;
    let mut message = Some(Message { kind, text });
    let mut waited = false;
    loop {
        {
            let mut objects = objects();
            let queue = objects.queues.find(id).map_err(|errno| removed_while_waiting(waited, errno))?;
            let length = message.as_ref().map_or(0, |message| message.text.len() as u64);
            if queue.bytes + length <= queue.limit && (queue.messages.len() as u64) < queue.limit.max(1) {
                queue.messages.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                if let Some(message) = message.take() {
                    queue.messages.push_back(message);
                }
                queue.bytes += length;
                queue.times[0] = now_seconds();
                queue.pids.0 = call.pid();
                return value(0);
            }
        }
        if flags & rules::IPC_NOWAIT != 0 {
            return Err(Errno::EAGAIN);
        }
        wait_a_step(call, None)?;
        waited = true;
    }
}

pub fn msgrcv(call: &mut Call<'_>) -> CallResult {
    let (id, address, size, wanted, flags) = (call.argument(0) as i32, call.argument(1), call.argument(2) as i64, call.argument(3) as i64, call.argument(4) as u32);
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    let mut waited = false;
    let message = loop {
        {
            let mut objects = objects();
            let queue = objects.queues.find(id).map_err(|errno| removed_while_waiting(waited, errno))?;
            if let Some(index) = rules::choose_message(queue.messages.iter().map(|message| message.kind), wanted, flags & rules::MSG_EXCEPT != 0) {
                if queue.messages[index].text.len() as i64 > size && flags & rules::MSG_NOERROR == 0 {
                    return Err(Errno::E2BIG);
                }
                let Some(message) = queue.messages.remove(index) else { return Err(Errno::EINVAL) };
                queue.bytes -= message.text.len() as u64;
                queue.times[1] = now_seconds();
                queue.pids.1 = call.pid();
                break message;
            }
        }
        if flags & rules::IPC_NOWAIT != 0 {
            return Err(Errno::ENOMSG);
        }
        wait_a_step(call, None)?;
        waited = true;
    };
    let length = message.text.len().min(size as usize);
    call.write_out(address, &message.kind.to_le_bytes())?;
    call.write_out(address + 8, &message.text[..length])?;
    value(length as u64)
}

pub fn msgctl(call: &mut Call<'_>) -> CallResult {
    let (id, command, buffer) = (call.argument(0) as i32, call.argument(1) as u32 & !rules::IPC_64, call.argument(2));
    match command {
        rules::IPC_STAT => {
            let record = {
                let mut objects = objects();
                let key = objects.queues.key_of(id).unwrap_or(0);
                let queue = objects.queues.find(id)?;
                let perm = Perm { key, mode: queue.mode, sequence: Perm::sequence_of(id) };
                rules::msqid_ds(perm, queue.times, queue.bytes, queue.messages.len() as u64, queue.limit, queue.pids)
            };
            call.write_out(buffer, &record)?;
            value(0)
        }
        rules::IPC_SET => {
            let mode = read_mode(call, buffer)?;
            let limit = call.word_in(buffer.checked_add(88).ok_or(Errno::EFAULT)?)?;
            let mut objects = objects();
            let queue = objects.queues.find(id)?;
            queue.mode = mode;
            queue.limit = limit;
            queue.times[2] = now_seconds();
            value(0)
        }
        rules::IPC_RMID => objects().queues.remove(id).ok_or(Errno::EINVAL).and_then(|_| value(0)),
        _ => Err(Errno::EINVAL),
    }
}
