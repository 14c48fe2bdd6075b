//! Pipes: a bounded byte buffer between writers and readers. A read waits
//! while the pipe is empty and a writer remains (end of file once none
//! does); a write waits while it is full and a reader remains, and is
//! `EPIPE` once none does. Writes of up to `PIPE_BUF` bytes are atomic.
//!
//! Waits end early when the waiting process gets a signal (`EINTR`).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking};

use linux_abi::Errno;

/// Bytes a pipe holds (Linux's default).
pub const CAPACITY: usize = 65_536;
/// Writes up to this size are never interleaved with others.
pub const PIPE_BUF: usize = 4096;
/// The pipe lock's level (above the sync layer, whose condvar it waits on).
const PIPE_LEVEL: Level = Level::new(8);

struct PipeState {
    bytes: VecDeque<u8>,
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
}

impl Pipe {
    /// A pipe with one reader and one writer end open.
    pub fn new() -> Self {
        let state = PipeState { bytes: VecDeque::new(), readers: 1, writers: 1, opened: (1, 1) };
        Self { state: KernelTicketLock::new(PIPE_LEVEL, state), changed: Condvar::new() }
    }

    /// A named pipe's (FIFO's) pipe, no end open yet.
    pub fn unopened() -> Self {
        let state = PipeState { bytes: VecDeque::new(), readers: 0, writers: 0, opened: (0, 0) };
        Self { state: KernelTicketLock::new(PIPE_LEVEL, state), changed: Condvar::new() }
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
        drop(state);
        self.changed.broadcast();
                crate::poll_wakeups::changed();
        if nonblocking {
            return Ok(());
        }
        let mut state = self.state.lock();
        while peers(&state) == 0 && peers_opened(&state) == seen {
            if interrupted() {
                if reading { state.readers -= 1 } else { state.writers -= 1 }
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
        drop(state);
        self.changed.broadcast();
                crate::poll_wakeups::changed();
    }

    /// Reads up to `limit` bytes, appended to `buffer`; none at end of
    /// file. `interrupted` is asked while waiting.
    pub fn read(&self, buffer: &mut Vec<u8>, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        self.take_or_peek(buffer, limit, nonblocking, interrupted, true)
    }

    /// As [`read`](Self::read), leaving the bytes in the pipe (`MSG_PEEK`).
    pub fn peek(&self, buffer: &mut Vec<u8>, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        self.take_or_peek(buffer, limit, nonblocking, interrupted, false)
    }

    fn take_or_peek(&self, buffer: &mut Vec<u8>, limit: usize, nonblocking: bool, interrupted: &dyn Fn() -> bool, take: bool) -> Result<usize, Errno> {
        let mut state = self.state.lock();
        loop {
            if !state.bytes.is_empty() {
                let count = limit.min(state.bytes.len());
                buffer.try_reserve(count).map_err(|_| Errno::ENOMEM)?;
                let (front, back) = state.bytes.as_slices();
                let from_front = count.min(front.len());
                buffer.extend_from_slice(&front[..from_front]);
                buffer.extend_from_slice(&back[..count - from_front]);
                if take {
                    state.bytes.drain(..count);
                    drop(state);
                    self.changed.broadcast();
                crate::poll_wakeups::changed();
                }
                return Ok(count);
            }
            if state.writers == 0 || limit == 0 {
                return Ok(0);
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

    /// Writes all of `data` (waiting for room); returns the bytes written,
    /// `EPIPE` when no reader is left.
    pub fn write(&self, data: &[u8], nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
        let mut written = 0;
        let mut state = self.state.lock();
        while written < data.len() {
            if state.readers == 0 {
                return if written > 0 { Ok(written) } else { Err(Errno::EPIPE) };
            }
            let room = CAPACITY - state.bytes.len();
            let rest = data.len() - written;
            // An atomic write waits until all of it fits.
            let fits = if rest <= PIPE_BUF { room >= rest } else { room > 0 };
            if fits {
                let count = room.min(rest);
                if state.bytes.try_reserve(count).is_err() {
                    return if written > 0 { Ok(written) } else { Err(Errno::ENOMEM) };
                }
                state.bytes.extend(&data[written..written + count]);
                written += count;
                drop(state);
                self.changed.broadcast();
                crate::poll_wakeups::changed();
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

    /// Whether every writing end has closed.
    pub fn writers_gone(&self) -> bool {
        self.state.lock().writers == 0
    }

    /// Whether every reading end has closed.
    pub fn readers_gone(&self) -> bool {
        self.state.lock().readers == 0
    }

    /// Whether a read would not wait, and whether a write would not.
    pub fn readiness(&self) -> (bool, bool) {
        let state = self.state.lock();
        (!state.bytes.is_empty() || state.writers == 0, state.bytes.len() < CAPACITY || state.readers == 0)
    }
}
