//! Pipes: a bounded byte buffer between writers and readers. A read waits
//! while the pipe is empty and a writer remains (end of file once none
//! does); a write waits while it is full and a reader remains, and is
//! `EPIPE` once none does. Writes of up to `PIPE_BUF` bytes are atomic.
//!
//! Waits end early when the waiting process gets a signal (`EINTR`).
//!
//! The same buffer carries a Unix socket's traffic: in packet mode
//! (`SOCK_DGRAM`, `SOCK_SEQPACKET` pairs) every write is one record and a
//! read takes one record whole (what does not fit the reader's buffer is
//! dropped); in stream mode a write that carries descriptors
//! (`SCM_RIGHTS`) or credentials (`SCM_CREDENTIALS`) is a record too: a
//! read may run into it but not past it, and the read that takes bytes of
//! it takes what is attached (Linux's rule for stream sockets). A record
//! also says who sent it (a named datagram socket's sender).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::descriptor_passing::InFlight;
use crate::named_sockets::SocketName;

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking};

use linux_abi::Errno;

/// Bytes a pipe holds (Linux's default).
pub const CAPACITY: usize = 65_536;
/// Bytes a record socket's direction holds: Linux's default socket buffer
/// (`SO_SNDBUF`), of which a record may take all but 32 bytes.
pub const RECORD_CAPACITY: usize = 212_992;
const LARGEST_RECORD: usize = RECORD_CAPACITY - 32;
/// Writes up to this size are never interleaved with others.
pub const PIPE_BUF: usize = 4096;
/// The pipe lock's level (above the sync layer, whose condvar it waits on).
const PIPE_LEVEL: Level = Level::new(8);

/// A record: bytes `start..end` of everything ever written, and what
/// travels with it.
struct Record {
    start: u64,
    end: u64,
    attached: Attached,
}

/// A sender's account of itself (`struct ucred`): process, user, group.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Credentials {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Credentials {
    /// What a receiver that asked for credentials gets for a record sent
    /// without them (Linux's: no process, the overflow user and group).
    pub const UNKNOWN: Credentials = Credentials { pid: 0, uid: 65534, gid: 65534 };
}

/// What travels with a record besides its bytes.
#[derive(Default)]
pub struct Attached {
    /// Open files passed (`SCM_RIGHTS`).
    pub descriptors: Option<InFlight>,
    /// The sender's credentials (`SCM_CREDENTIALS`).
    pub credentials: Option<Credentials>,
    /// The sending socket's name (datagrams sent to a name).
    pub sender: Option<SocketName>,
}

impl Attached {
    /// What a peek sees: all but the descriptors (taken only by a read).
    fn peeked(&self) -> Attached {
        Attached { descriptors: None, credentials: self.credentials, sender: self.sender.clone() }
    }
}

struct PipeState {
    bytes: VecDeque<u8>,
    /// How many bytes it holds.
    capacity: usize,
    /// Every write is a record (packet mode), or only those that carry
    /// descriptors are.
    packets: bool,
    records: VecDeque<Record>,
    /// Bytes ever written and ever taken (record positions count in them).
    written: u64,
    taken: u64,
    readers: u32,
    writers: u32,
    /// How many reading and writing ends were ever opened (a FIFO's opener
    /// waits for the other count to move: a peer that opened and closed
    /// meanwhile still ends the wait, as on Linux).
    opened: (u64, u64),
}

/// One pipe.
pub struct Pipe {
    state: KernelTicketLock<PipeState>,
    changed: Condvar<KernelBlocking>,
    /// The socket reading it asked for credentials (`SO_PASSCRED`):
    /// senders attach theirs.
    wants_credentials: AtomicBool,
    /// Who polls this pipe alone (`poll_wakeups::OwnPollers`).
    pollers: crate::poll_wakeups::OwnPollers,
    /// What `poll` asks, published under the lock at every change, before
    /// the wake-ups that follow it ([`Pipe::publish`]): the `READY_*` bits
    /// and the activity count. A poll reads them with no lock (a pipe's
    /// lock per descriptor was a third of a `poll`'s cost per descriptor).
    ready: AtomicU32,
    activity: AtomicU64,
}

/// Bits of [`Pipe::ready`].
const READY_READ: u32 = 1;
const READY_WRITE: u32 = 2;
const READERS_GONE: u32 = 4;
const WRITERS_GONE: u32 = 8;

/// The `READY_*` bits of `state`.
fn ready_bits(state: &PipeState) -> u32 {
    let has_data = if state.packets { !state.records.is_empty() } else { !state.bytes.is_empty() };
    let mut bits = 0;
    if has_data || state.writers == 0 {
        bits |= READY_READ;
    }
    if state.bytes.len() < state.capacity || state.readers == 0 {
        bits |= READY_WRITE;
    }
    if state.readers == 0 {
        bits |= READERS_GONE;
    }
    if state.writers == 0 {
        bits |= WRITERS_GONE;
    }
    bits
}

impl crate::poll_wakeups::HasOwnPollers for Pipe {
    fn own_pollers(&self) -> &crate::poll_wakeups::OwnPollers {
        &self.pollers
    }
}

impl Pipe {
    /// Something a poller may wait for changed: wake this pipe's own
    /// pollers and the local set's (epoll instances and polls of mixed
    /// kinds wait there).
    /// Publishes what `poll` asks of `state` (call under the lock, after a
    /// change and before its wake-ups; Release pairs with the readers'
    /// Acquire).
    fn publish(&self, state: &PipeState) {
        self.ready.store(ready_bits(state), Ordering::Release);
        self.activity.store(state.written.wrapping_add(state.taken), Ordering::Release);
    }

    fn tell_pollers(&self) {
        self.pollers.changed();
        crate::poll_wakeups::changed();
    }

    /// A pipe with one reader and one writer end open.
    pub fn new() -> Self {
        Self::with_ends(false, 1)
    }

    /// A socket's pipe, both ends open: records kept whole when `packets`.
    pub fn for_socket(packets: bool) -> Self {
        Self::with_ends(packets, 1)
    }

    fn with_ends(packets: bool, ends: u32) -> Self {
        let state = PipeState {
            bytes: VecDeque::new(),
            capacity: if packets { RECORD_CAPACITY } else { CAPACITY },
            packets,
            records: VecDeque::new(),
            written: 0,
            taken: 0,
            readers: ends,
            writers: ends,
            opened: (u64::from(ends), u64::from(ends)),
        };
        let ready = AtomicU32::new(ready_bits(&state));
        Self {
            state: KernelTicketLock::new(PIPE_LEVEL, state),
            changed: Condvar::new(),
            wants_credentials: AtomicBool::new(false),
            pollers: crate::poll_wakeups::OwnPollers::new(),
            ready,
            activity: AtomicU64::new(0),
        }
    }

    /// A named pipe's (FIFO's) pipe, no end open yet.
    pub fn unopened() -> Self {
        Self::with_ends(false, 0)
    }

    /// A FIFO's `open` adds a reading or writing end. Without `nonblocking`
    /// it waits until the other side has an end too (ERESTARTSYS for a
    /// signal, the end taken back). A nonblocking writing end with no
    /// reader is ENXIO (Linux's rule); a nonblocking reading end never waits.
    pub fn open_end(&self, reading: bool, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<(), Errno> {
        let mut state = self.state.lock();
        if !reading && nonblocking && state.readers == 0 {
            return Err(Errno::ENXIO);
        }
        if reading {
            state.readers += 1;
            state.opened.0 += 1;
        } else {
            state.writers += 1;
            state.opened.1 += 1;
        }
        let peers_opened = |state: &PipeState| if reading { state.opened.1 } else { state.opened.0 };
        let peers = |state: &PipeState| if reading { state.writers } else { state.readers };
        let seen = peers_opened(&state);
        self.publish(&state);
        drop(state);
        self.changed.broadcast();
        self.tell_pollers();
        if nonblocking {
            return Ok(());
        }
        let mut state = self.state.lock();
        while peers(&state) == 0 && peers_opened(&state) == seen {
            if interrupted() {
                if reading { state.readers -= 1 } else { state.writers -= 1 }
                self.publish(&state);
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            state = self.changed.wait_interruptible(state, &self.state, interrupted).0;
        }
        Ok(())
    }

    /// A reading or writing end was closed.
    pub fn end_closed(&self, reading: bool) {
        let mut state = self.state.lock();
        if reading {
            state.readers = state.readers.saturating_sub(1);
        } else {
            state.writers = state.writers.saturating_sub(1);
        }
        self.publish(&state);
        drop(state);
        self.changed.broadcast();
        self.tell_pollers();
    }

    /// Reads up to `limit` bytes, appended to `buffer`; none at end of
    /// file. `interrupted` is asked while waiting.
    pub fn read(&self, buffer: &mut Vec<u8>, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        self.receive(buffer, limit, nonblocking, interrupted, true).map(|received| received.count)
    }

    /// As [`read`](Self::read), then `deliver(bytes)` with no lock held
    /// (the copy to the reader's memory). When `deliver` fails (EFAULT),
    /// the bytes go back to the front of a stream pipe, as Linux leaves
    /// them when its copy fails — unless another read took bytes since, or
    /// the pipe carries records (then they are gone, and the error says so).
    pub fn read_and_deliver(&self, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool, deliver: impl FnOnce(&[u8]) -> Result<(), Errno>) -> Result<usize, Errno> {
        let mut buffer = Vec::new();
        let received = self.receive(&mut buffer, limit, nonblocking, interrupted, true)?;
        if let Err(errno) = deliver(&buffer) {
            self.give_back(&buffer, received.taken_to);
            return Err(errno);
        }
        Ok(received.count)
    }

    /// Puts `bytes`, which the read that brought the taken count to
    /// `taken_to` took, back in front, if no read came since.
    fn give_back(&self, bytes: &[u8], taken_to: u64) {
        let mut state = self.state.lock();
        if bytes.is_empty() || state.packets || !state.records.is_empty() || state.taken != taken_to || state.bytes.try_reserve(bytes.len()).is_err() {
            return;
        }
        for &byte in bytes.iter().rev() {
            state.bytes.push_front(byte);
        }
        state.taken -= bytes.len() as u64;
        self.publish(&state);
        drop(state);
        self.changed.broadcast();
        self.tell_pollers();
    }

    /// As [`read`](Self::read), leaving the bytes in the pipe (`MSG_PEEK`).
    pub fn peek(&self, buffer: &mut Vec<u8>, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        self.receive(buffer, limit, nonblocking, interrupted, false).map(|received| received.count)
    }

    /// Whether the socket reading it asked for senders' credentials.
    pub fn wants_credentials(&self) -> bool {
        self.wants_credentials.load(Ordering::Relaxed)
    }

    /// `SO_PASSCRED` on the socket reading it.
    pub fn set_wants_credentials(&self, on: bool) {
        self.wants_credentials.store(on, Ordering::Relaxed);
    }

    /// Reads as [`read`](Self::read) does, or leaves the bytes (`take`
    /// false), and says how long the record was and what came with the
    /// bytes (descriptors only when taken).
    pub fn receive(&self, buffer: &mut Vec<u8>, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool, take: bool) -> Result<Received, Errno> {
        let mut state = self.state.lock();
        loop {
            let waiting = if state.packets { state.records.is_empty() } else { state.bytes.is_empty() };
            if !waiting {
                let (available, whole) = readable_now(&state);
                let count = limit.min(available);
                buffer.try_reserve(count).map_err(|_| Errno::ENOMEM)?;
                let (front, back) = state.bytes.as_slices();
                let from_front = count.min(front.len());
                buffer.extend_from_slice(&front[..from_front]);
                buffer.extend_from_slice(&back[..count - from_front]);
                let mut attached = Attached::default();
                if !take {
                    if let Some(record) = state.records.front().filter(|record| state.packets || record.start < state.taken + count as u64) {
                        attached = record.attached.peeked();
                    }
                }
                let mut taken_to = state.taken;
                if take {
                    // A packet's unread rest goes with it.
                    let drained = if state.packets { available } else { count };
                    state.bytes.drain(..drained);
                    state.taken += drained as u64;
                    taken_to = state.taken;
                    let (taken, packets) = (state.taken, state.packets);
                    if let Some(record) = state.records.front_mut() {
                        if packets || record.start < taken {
                            attached = core::mem::take(&mut record.attached);
                        }
                        if record.end <= taken {
                            state.records.pop_front();
                        }
                    }
                    self.publish(&state);
                    drop(state);
                    self.changed.broadcast();
                    self.tell_pollers();
                }
                return Ok(Received { count, length: whole, attached, taken_to });
            }
            if state.writers == 0 || (limit == 0 && !state.packets) {
                return Ok(Received { count: 0, length: 0, attached: Attached::default(), taken_to: state.taken });
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                // EINTR, or run again after the signal (SA_RESTART).
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            // Interruptible: a signal's sender unparks the reader, which
            // then sees `interrupted` (SIGKILL ends a blocked reader).
            state = self.changed.wait_interruptible(state, &self.state, interrupted).0;
        }
    }

    /// Writes `data` as one record carrying `attached` (waiting until it
    /// all fits; EMSGSIZE when it never could): a datagram, or a stream
    /// write with `SCM_RIGHTS` or `SCM_CREDENTIALS`. EPIPE when no reader
    /// is left. `attached` is taken only when the record is sent (a caller
    /// that tries again still has it).
    pub fn send_record(&self, data: &[u8], attached: &mut Attached, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        let mut state = self.state.lock();
        if data.len() > state.capacity.min(LARGEST_RECORD) {
            return Err(Errno::EMSGSIZE);
        }
        loop {
            if state.readers == 0 {
                return Err(Errno::EPIPE);
            }
            if state.capacity - state.bytes.len() >= data.len() {
                break;
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            state = self.changed.wait_interruptible(state, &self.state, interrupted).0;
        }
        if !reserve_queue(&mut state.bytes, data.len()) || state.records.try_reserve(1).is_err() {
            return Err(Errno::ENOMEM);
        }
        let start = state.written;
        state.bytes.extend(data);
        state.written += data.len() as u64;
        let end = state.written;
        state.records.push_back(Record { start, end, attached: core::mem::take(attached) });
        self.publish(&state);
        drop(state);
        self.changed.broadcast();
        self.tell_pollers();
        Ok(data.len())
    }

    /// Writes all of `data` (waiting for room); returns the bytes written,
    /// `EPIPE` when no reader is left.
    pub fn write(&self, data: &[u8], nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        let mut written = 0;
        let mut state = self.state.lock();
        if state.packets {
            drop(state);
            return self.send_record(data, &mut Attached::default(), nonblocking, interrupted);
        }
        while written < data.len() {
            if state.readers == 0 {
                return if written > 0 { Ok(written) } else { Err(Errno::EPIPE) };
            }
            let room = state.capacity - state.bytes.len();
            let rest = data.len() - written;
            // An atomic write waits until all of it fits.
            let fits = if rest <= PIPE_BUF { room >= rest } else { room > 0 };
            if fits {
                let count = room.min(rest);
                if !reserve_queue(&mut state.bytes, count) {
                    return if written > 0 { Ok(written) } else { Err(Errno::ENOMEM) };
                }
                state.bytes.extend(&data[written..written + count]);
                state.written += count as u64;
                written += count;
                self.publish(&state);
                drop(state);
                self.changed.broadcast();
                self.tell_pollers();
                state = self.state.lock();
                continue;
            }
            if nonblocking {
                return if written > 0 { Ok(written) } else { Err(Errno::EAGAIN) };
            }
            if interrupted() {
                return if written > 0 { Ok(written) } else { Err(linux_abi::restart::ERESTARTSYS) };
            }
            state = self.changed.wait_interruptible(state, &self.state, interrupted).0;
        }
        Ok(written)
    }

    /// How many bytes it holds (`F_GETPIPE_SZ`).
    pub fn capacity(&self) -> usize {
        self.state.lock().capacity
    }

    /// Makes it hold `bytes` (`F_SETPIPE_SZ`, already rounded): EBUSY when
    /// more than that is in it now.
    pub fn set_capacity(&self, bytes: usize) -> Result<(), Errno> {
        let mut state = self.state.lock();
        if state.bytes.len() > bytes {
            return Err(Errno::EBUSY);
        }
        state.capacity = bytes;
        self.publish(&state);
        drop(state);
        self.changed.broadcast();
        self.tell_pollers();
        Ok(())
    }

    /// Whether every writing end has closed.
    pub fn writers_gone(&self) -> bool {
        self.ready.load(Ordering::Acquire) & WRITERS_GONE != 0
    }

    /// Whether every reading end has closed.
    pub fn readers_gone(&self) -> bool {
        self.ready.load(Ordering::Acquire) & READERS_GONE != 0
    }

    /// Whether a write would not wait, and whether every reading end has
    /// closed (one look under the lock).
    pub fn write_readiness(&self) -> (bool, bool) {
        let bits = self.ready.load(Ordering::Acquire);
        (bits & READY_WRITE != 0, bits & READERS_GONE != 0)
    }

    /// Bytes ever written in plus bytes ever read out: moves with every
    /// arrival and every departure (edge-triggered epoll reports each).
    pub fn activity(&self) -> u64 {
        self.activity.load(Ordering::Acquire)
    }

    /// Whether a read would not wait, and whether a write would not.
    pub fn readiness(&self) -> (bool, bool) {
        let bits = self.ready.load(Ordering::Acquire);
        (bits & READY_READ != 0, bits & READY_WRITE != 0)
    }
}

/// What one read took.
pub struct Received {
    /// Bytes put in the caller's buffer.
    pub count: usize,
    /// The whole record's length in packet mode (more than `count` when it
    /// was cut short: `MSG_TRUNC`); the bytes available otherwise.
    pub length: usize,
    /// What came with them: descriptors (`SCM_RIGHTS`; only when taken),
    /// credentials, the sender's name.
    pub attached: Attached,
    /// The pipe's count of bytes ever taken, after this read.
    pub taken_to: u64,
}

/// What a read may take now from a pipe with bytes or records waiting:
/// how many bytes, and the length to report. A packet read takes the
/// first record; a stream read stops at the end of the first record.
fn readable_now(state: &PipeState) -> (usize, usize) {
    let queued = state.bytes.len();
    match state.records.front() {
        Some(record) if state.packets => {
            let length = (record.end - record.start) as usize;
            (length, length)
        }
        Some(record) => {
            let rest = ((record.end - state.taken) as usize).min(queued);
            (rest, rest)
        }
        None => (queued, queued),
    }
}

/// Makes room for `more` bytes in a queue, fallibly; a growth (which
/// about doubles the queue, the old one held until copied) must also
/// leave the heap's last part to the kernel
/// (`kernel_memory::program_data_fits`).
fn reserve_queue(queue: &mut VecDeque<u8>, more: usize) -> bool {
    let grows = queue.capacity() - queue.len() < more;
    // A growth allocates about twice the queue (or what it must hold).
    if grows && !kernel_objects::kernel_memory::program_data_fits((queue.capacity() * 2).max(queue.len() + more)) {
        return false;
    }
    queue.try_reserve(more).is_ok()
}
