//! The channels of a set of kernels: one bounded `sync::WordRing` of
//! encoded messages per ordered pair (SemperOS's DTU endpoints, with its
//! in-flight limit as the ring's size), and each kernel's [`Links`] view of
//! them. Shared memory in the kernel, a heap object on the host; nothing
//! else passes between the kernels.

use alloc::vec::Vec;

use sync::WordRing;

use super::wire::WORDS;
use super::{KernelId, Links};

/// Slots per ordered pair: SemperOS's four messages in flight.
pub const SLOTS: usize = 4;

type Ring = WordRing<WORDS, SLOTS>;

/// `rings[from][to]` for `kernels` kernels.
pub struct Channels {
    rings: Vec<Vec<Ring>>,
}

impl Channels {
    /// Empty channels between every ordered pair of `kernels` kernels.
    pub fn new(kernels: usize) -> Self {
        Self { rings: (0..kernels).map(|_| (0..kernels).map(|_| Ring::new()).collect()).collect() }
    }

    /// Kernel `me`'s ends: it sends on `rings[me][_]`, receives on `rings[_][me]`.
    pub fn links(&self, me: usize) -> ChannelLinks<'_> {
        ChannelLinks { me, channels: self }
    }
}

/// One kernel's ends of the [`Channels`].
pub struct ChannelLinks<'a> {
    me: usize,
    channels: &'a Channels,
}

impl Links for ChannelLinks<'_> {
    fn try_send(&self, to: KernelId, words: &[u64; WORDS]) -> bool {
        self.channels.rings.get(self.me).and_then(|row| row.get(to.0 as usize)).is_some_and(|ring| ring.try_send(words).is_ok())
    }

    fn try_receive(&self, from: KernelId) -> Option<[u64; WORDS]> {
        self.channels.rings.get(from.0 as usize)?.get(self.me)?.try_receive()
    }

    fn try_receive_noting_full(&self, from: KernelId) -> Option<([u64; WORDS], bool)> {
        self.channels.rings.get(from.0 as usize)?.get(self.me)?.try_receive_noting_full()
    }
}
