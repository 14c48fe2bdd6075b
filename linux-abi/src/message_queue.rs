//! POSIX message queues (`mq_overview(7)`) as Linux keeps them: messages
//! of up to `msgsize` bytes, at most `maxmsg` of them, taken highest
//! priority first and in order of arrival within a priority; the checks of
//! `mq_open`'s name and attributes. Pure bookkeeping: the kernel locks a
//! queue and makes callers that must wait, wait.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::Errno;

/// Priorities run below this (`MQ_PRIO_MAX`).
pub const PRIORITY_LIMIT: u32 = 32_768;
/// `maxmsg` without attributes (Linux's `msg_default`).
pub const DEFAULT_MAX_MESSAGES: u64 = 10;
/// `msgsize` without attributes (Linux's `msgsize_default`).
pub const DEFAULT_MESSAGE_SIZE: u64 = 8192;
/// The most messages a queue may hold (Linux's `HARD_MSGMAX`).
pub const HARD_MAX_MESSAGES: u64 = 65_536;
/// The largest message (Linux's `HARD_MSGSIZEMAX`, 16 MiB).
pub const HARD_MESSAGE_SIZE: u64 = 16 << 20;
/// The most bytes of messages one queue may hold here (a kernel-heap bound).
pub const MAX_QUEUE_BYTES: u64 = 8 << 20;
/// Longest name (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// `struct mq_attr`: `mq_flags`, `mq_maxmsg`, `mq_msgsize`, `mq_curmsgs`.
pub const ATTR_BYTES: usize = 64;

/// A queue's fixed shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueShape {
    /// `mq_maxmsg`.
    pub max_messages: u64,
    /// `mq_msgsize`.
    pub message_size: u64,
}

impl Default for QueueShape {
    fn default() -> Self {
        QueueShape { max_messages: DEFAULT_MAX_MESSAGES, message_size: DEFAULT_MESSAGE_SIZE }
    }
}

impl QueueShape {
    /// The shape `mq_open` asks for in `attr` bytes (EINVAL for a size or
    /// count of 0 or past the limits, or a whole queue past
    /// [`MAX_QUEUE_BYTES`]: ENOMEM).
    pub fn from_attr(bytes: &[u8; ATTR_BYTES]) -> Result<Self, Errno> {
        let field = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
        let (max_messages, message_size) = (field(8), field(16));
        if max_messages <= 0 || message_size <= 0 || max_messages as u64 > HARD_MAX_MESSAGES || message_size as u64 > HARD_MESSAGE_SIZE {
            return Err(Errno::EINVAL);
        }
        if (max_messages as u64).saturating_mul(message_size as u64) > MAX_QUEUE_BYTES {
            return Err(Errno::ENOMEM);
        }
        Ok(QueueShape { max_messages: max_messages as u64, message_size: message_size as u64 })
    }
}

/// `struct mq_attr` bytes for `flags` and a queue's state.
pub fn attr_bytes(flags: u64, shape: QueueShape, current: u64) -> [u8; ATTR_BYTES] {
    let mut bytes = [0u8; ATTR_BYTES];
    for (at, value) in [(0, flags), (8, shape.max_messages), (16, shape.message_size), (24, current)] {
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// `mq_getsetattr`'s new `mq_flags` (only `O_NONBLOCK` counts).
pub fn flags_of_attr(bytes: &[u8; ATTR_BYTES]) -> u64 {
    u64::from_le_bytes(bytes[0..8].try_into().unwrap_or([0; 8]))
}

/// Checks a name as the `mq_open` system call gets it (the C library has
/// taken the leading `/` off): not empty (ENOENT), no `/` (EACCES), not
/// `.` or `..` (EINVAL), at most [`NAME_MAX`] bytes (ENAMETOOLONG).
pub fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.contains(&b'/') {
        return Err(Errno::EACCES);
    }
    if name == b"." || name == b".." {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Why a message could not go in or come out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueRefusal {
    /// Full (send) or empty (receive): wait, or EAGAIN.
    WouldBlock,
    /// EMSGSIZE: a message longer than `msgsize`, or a receive buffer
    /// shorter than it.
    Size,
    /// EINVAL: a priority of [`PRIORITY_LIMIT`] or more.
    Priority,
    /// ENOMEM: no kernel memory for the message.
    Memory,
}

/// The messages of one queue.
#[derive(Debug, Default)]
pub struct Messages {
    shape: QueueShape,
    /// Highest priority first; arrival order within one.
    queued: VecDeque<(u32, Vec<u8>)>,
}

impl Messages {
    /// An empty queue of `shape`.
    pub fn new(shape: QueueShape) -> Self {
        Messages { shape, queued: VecDeque::new() }
    }

    /// Its shape.
    pub fn shape(&self) -> QueueShape {
        self.shape
    }

    /// How many messages it holds.
    pub fn len(&self) -> u64 {
        self.queued.len() as u64
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// Whether a send would wait.
    pub fn is_full(&self) -> bool {
        self.len() >= self.shape.max_messages
    }

    /// Checks a send without doing it.
    pub fn check_send(&self, length: usize, priority: u32) -> Result<(), QueueRefusal> {
        if priority >= PRIORITY_LIMIT {
            return Err(QueueRefusal::Priority);
        }
        if length as u64 > self.shape.message_size {
            return Err(QueueRefusal::Size);
        }
        if self.is_full() {
            return Err(QueueRefusal::WouldBlock);
        }
        Ok(())
    }

    /// Queues `message` behind every message of its priority or higher.
    pub fn send(&mut self, message: &[u8], priority: u32) -> Result<(), QueueRefusal> {
        self.check_send(message.len(), priority)?;
        let mut copy = Vec::new();
        copy.try_reserve_exact(message.len()).map_err(|_| QueueRefusal::Memory)?;
        copy.extend_from_slice(message);
        self.queued.try_reserve(1).map_err(|_| QueueRefusal::Memory)?;
        let at = self.queued.iter().position(|(queued, _)| *queued < priority).unwrap_or(self.queued.len());
        self.queued.insert(at, (priority, copy));
        Ok(())
    }

    /// Checks a receive into a buffer of `capacity` bytes without doing it.
    pub fn check_receive(&self, capacity: usize) -> Result<(), QueueRefusal> {
        if (capacity as u64) < self.shape.message_size {
            return Err(QueueRefusal::Size);
        }
        if self.is_empty() {
            return Err(QueueRefusal::WouldBlock);
        }
        Ok(())
    }

    /// Takes the first message: its bytes and priority.
    pub fn receive(&mut self, capacity: usize) -> Result<(Vec<u8>, u32), QueueRefusal> {
        self.check_receive(capacity)?;
        let (priority, message) = self.queued.pop_front().ok_or(QueueRefusal::WouldBlock)?;
        Ok((message, priority))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(max_messages: i64, message_size: i64) -> [u8; ATTR_BYTES] {
        let mut bytes = [0u8; ATTR_BYTES];
        bytes[8..16].copy_from_slice(&max_messages.to_le_bytes());
        bytes[16..24].copy_from_slice(&message_size.to_le_bytes());
        bytes
    }

    #[test]
    fn higher_priorities_come_first_and_equal_ones_in_order() {
        let mut queue = Messages::new(QueueShape { max_messages: 4, message_size: 8 });
        for (message, priority) in [(&b"a"[..], 1), (b"b", 5), (b"c", 1), (b"d", 5)] {
            queue.send(message, priority).unwrap();
        }
        assert_eq!(queue.send(b"e", 9), Err(QueueRefusal::WouldBlock));
        let order: Vec<(Vec<u8>, u32)> = (0..4).map(|_| queue.receive(8).unwrap()).collect();
        assert_eq!(order, [(b"b".to_vec(), 5), (b"d".to_vec(), 5), (b"a".to_vec(), 1), (b"c".to_vec(), 1)]);
        assert_eq!(queue.receive(8), Err(QueueRefusal::WouldBlock));
    }

    #[test]
    fn sizes_and_priorities_are_checked() {
        let mut queue = Messages::new(QueueShape { max_messages: 2, message_size: 4 });
        assert_eq!(queue.send(b"12345", 0), Err(QueueRefusal::Size));
        assert_eq!(queue.send(b"1", PRIORITY_LIMIT), Err(QueueRefusal::Priority));
        queue.send(b"1234", PRIORITY_LIMIT - 1).unwrap();
        assert_eq!(queue.receive(3), Err(QueueRefusal::Size));
        assert_eq!(queue.receive(4).map(|(bytes, _)| bytes), Ok(b"1234".to_vec()));
    }

    #[test]
    fn attributes_and_names_are_checked_as_linux_checks_them() {
        assert_eq!(QueueShape::from_attr(&attr(5, 100)), Ok(QueueShape { max_messages: 5, message_size: 100 }));
        for bad in [attr(0, 10), attr(10, 0), attr(-1, 10), attr(10, -5), attr(HARD_MAX_MESSAGES as i64 + 1, 1)] {
            assert_eq!(QueueShape::from_attr(&bad), Err(Errno::EINVAL));
        }
        assert_eq!(QueueShape::from_attr(&attr(65_536, 8192)), Err(Errno::ENOMEM));
        assert_eq!(check_name(b"queue"), Ok(()));
        assert_eq!(check_name(b""), Err(Errno::ENOENT));
        assert_eq!(check_name(b"a/b"), Err(Errno::EACCES));
        assert_eq!(check_name(&[b'x'; 256]), Err(Errno::ENAMETOOLONG));
        let bytes = attr_bytes(2048, QueueShape { max_messages: 3, message_size: 9 }, 1);
        assert_eq!((flags_of_attr(&bytes), QueueShape::from_attr(&bytes)), (2048, Ok(QueueShape { max_messages: 3, message_size: 9 })));
    }
}
