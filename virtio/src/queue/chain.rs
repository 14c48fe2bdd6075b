//! What a driver hands a queue (a chain of buffers) and what it gets back
//! (a token for the chain, then the used length).
//!
//! Must never: let a token be made outside this crate (a token names a
//! chain this queue put in flight).

/// Who writes a buffer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    /// The driver filled it; the device reads it.
    DeviceReads,
    /// The device fills it.
    DeviceWrites,
}

/// One physically contiguous buffer of a chain.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Buffer {
    /// Its physical address.
    pub physical: u64,
    /// Its length in bytes.
    pub length: u32,
    /// Who writes it.
    pub direction: Direction,
}

/// A chain in flight, named by its head descriptor.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub struct Token(u16);

impl Token {
    pub(crate) fn new(head: u16) -> Self {
        Self(head)
    }

    /// The head descriptor's index (below the queue size).
    pub fn head(&self) -> u16 {
        self.0
    }
}

/// A chain the device has finished with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Used {
    /// The chain.
    pub token: Token,
    /// How many bytes the device says it wrote into the chain's
    /// device-writable buffers (checked not to exceed their total).
    pub written_length: u32,
}
