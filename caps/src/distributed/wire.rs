//! Messages as the words a channel slot between two kernels carries, and
//! back. Decoding refuses anything [`encode`] would not produce (an
//! unknown tag, a key or number out of range, a flag that is neither 0
//! nor 1, a word that should be 0 and is not): a slot in shared memory is
//! input, and bad input is an error, never a panic.

use super::{CapKey, KernelId, Message, OpId, ProcessId};

/// Words in one encoded message.
pub const WORDS: usize = 5;

/// Why a slot's words are not a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The first word names no message.
    UnknownTag(u64),
    /// A field is out of its range, or an unused word is not 0.
    BadField {
        /// Which word.
        word: usize,
    },
}

const NONE: u64 = u64::MAX;

fn key(key: CapKey) -> u64 {
    (u64::from(key.kernel.0) << 32) | u64::from(key.index)
}

fn process(process: ProcessId) -> u64 {
    (u64::from(process.kernel.0) << 32) | u64::from(process.number)
}

/// `message` as words.
pub fn encode(message: &Message) -> [u64; WORDS] {
    match *message {
        Message::ObtainRequest { op, parent, child } => [1, u64::from(op.0), key(parent), key(child), 0],
        Message::ObtainReply { op, parent, child, granted } => [2, u64::from(op.0), key(parent), key(child), u64::from(granted)],
        Message::ObtainAbandoned { parent, child } => [3, key(parent), key(child), 0, 0],
        Message::DelegateRequest { op, parent, to } => [4, u64::from(op.0), key(parent), process(to), 0],
        Message::DelegateReply { op, parent, child } => [5, u64::from(op.0), key(parent), child.map_or(NONE, key), 0],
        Message::DelegateAck { parent, child, commit } => [6, key(parent), key(child), u64::from(commit), 0],
        Message::DelegateAbandoned { parent, child } => [7, key(parent), key(child), 0, 0],
        Message::RevokeRequest { cap, reply_to } => [8, key(cap), key(reply_to), 0, 0],
        Message::RevokeReply { root } => [9, key(root), 0, 0, 0],
        Message::Unlink { parent, child } => [10, key(parent), key(child), 0, 0],
    }
}

struct Reader<'a> {
    words: &'a [u64; WORDS],
}

impl Reader<'_> {
    fn split(&self, at: usize) -> Result<(u8, u32), WireError> {
        let word = self.words[at];
        let high = word >> 32;
        if high > u64::from(u8::MAX) {
            return Err(WireError::BadField { word: at });
        }
        Ok((high as u8, word as u32))
    }

    fn key(&self, at: usize) -> Result<CapKey, WireError> {
        self.split(at).map(|(kernel, index)| CapKey { kernel: KernelId(kernel), index })
    }

    fn process(&self, at: usize) -> Result<ProcessId, WireError> {
        self.split(at).map(|(kernel, number)| ProcessId { kernel: KernelId(kernel), number })
    }

    fn op(&self, at: usize) -> Result<OpId, WireError> {
        u32::try_from(self.words[at]).map(OpId).map_err(|_| WireError::BadField { word: at })
    }

    fn flag(&self, at: usize) -> Result<bool, WireError> {
        match self.words[at] {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(WireError::BadField { word: at }),
        }
    }

    /// Words from `first` on must be 0.
    fn unused_from(&self, first: usize) -> Result<(), WireError> {
        match (first..WORDS).find(|at| self.words[*at] != 0) {
            Some(word) => Err(WireError::BadField { word }),
            None => Ok(()),
        }
    }
}

/// The message `words` encode.
pub fn decode(words: &[u64; WORDS]) -> Result<Message, WireError> {
    let read = Reader { words };
    // Each message with how many words it uses; the rest must be 0, so
    // that one message has one encoding.
    let (message, used) = match words[0] {
        1 => (Message::ObtainRequest { op: read.op(1)?, parent: read.key(2)?, child: read.key(3)? }, 4),
        2 => (Message::ObtainReply { op: read.op(1)?, parent: read.key(2)?, child: read.key(3)?, granted: read.flag(4)? }, 5),
        3 => (Message::ObtainAbandoned { parent: read.key(1)?, child: read.key(2)? }, 3),
        4 => (Message::DelegateRequest { op: read.op(1)?, parent: read.key(2)?, to: read.process(3)? }, 4),
        5 => {
            let child = if words[3] == NONE { None } else { Some(read.key(3)?) };
            (Message::DelegateReply { op: read.op(1)?, parent: read.key(2)?, child }, 4)
        }
        6 => (Message::DelegateAck { parent: read.key(1)?, child: read.key(2)?, commit: read.flag(3)? }, 4),
        7 => (Message::DelegateAbandoned { parent: read.key(1)?, child: read.key(2)? }, 3),
        8 => (Message::RevokeRequest { cap: read.key(1)?, reply_to: read.key(2)? }, 3),
        9 => (Message::RevokeReply { root: read.key(1)? }, 2),
        10 => (Message::Unlink { parent: read.key(1)?, child: read.key(2)? }, 3),
        tag => return Err(WireError::UnknownTag(tag)),
    };
    read.unused_from(used)?;
    Ok(message)
}
