//! A kernel's end of the channels: its [`Kernel`] with, per peer, the
//! encoded messages waiting for room in that peer's channel (kept in
//! order, so a full channel never reorders). [`Node::poll`] is one round
//! of a kernel thread's loop: take what arrived, hand it to the kernel,
//! send what waits. The channels themselves are the caller's ([`Links`]:
//! `sync::WordRing`s in memory the kernels share, or anything else with
//! the same contract).
//!
//! Must never block, drop a message it accepted from its kernel, or panic
//! on a malformed one (counted and refused).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::wire::{decode, encode, WORDS};
use super::{Kernel, KernelId};

/// The channels between this kernel and its peers: FIFO per ordered pair.
pub trait Links {
    /// Puts `words` in the channel to `to`; `false` when it is full.
    fn try_send(&self, to: KernelId, words: &[u64; WORDS]) -> bool;
    /// The oldest message from `from`, if any.
    fn try_receive(&self, from: KernelId) -> Option<[u64; WORDS]>;

    /// [`Links::try_receive`], also saying whether the channel from `from`
    /// was full before (its sender may be waiting for room: wake it).
    /// Channels that cannot tell say no.
    fn try_receive_noting_full(&self, from: KernelId) -> Option<([u64; WORDS], bool)> {
        self.try_receive(from).map(|words| (words, false))
    }
}

/// What one [`Node::poll`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Messages taken from the channels and handled.
    pub handled: usize,
    /// Messages sent (moved from the waiting queues into channels).
    pub sent: usize,
    /// Messages the kernel produced in this round (now waiting or sent).
    pub produced: usize,
    /// Slots that did not decode to a message (refused, counted).
    pub malformed: usize,
}

/// A kernel and its outgoing queues (see the module comment).
pub struct Node {
    kernel: Kernel,
    peers: usize,
    waiting: Vec<VecDeque<[u64; WORDS]>>,
    malformed: usize,
    sent_to: u64,
    freed_for: u64,
}

impl Node {
    /// `kernel` in a system of `peers` kernels (numbered from 0).
    pub fn new(kernel: Kernel, peers: usize) -> Self {
        Self { kernel, peers, waiting: (0..peers).map(|_| VecDeque::new()).collect(), malformed: 0, sent_to: 0, freed_for: 0 }
    }

    /// The kernel, to start system calls on (then [`Node::collect`]).
    pub fn kernel_mut(&mut self) -> &mut Kernel {
        &mut self.kernel
    }

    /// The kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Gives the kernel back.
    pub fn into_kernel(self) -> Kernel {
        self.kernel
    }

    /// Moves what the kernel wants to send into the waiting queues, in
    /// order; how many messages.
    pub fn collect(&mut self) -> usize {
        let mut produced = 0;
        for envelope in self.kernel.drain_outbox() {
            produced += 1;
            if let Some(queue) = self.waiting.get_mut(envelope.to.0 as usize) {
                queue.push_back(encode(&envelope.message));
            }
        }
        produced
    }

    /// One round: [`Node::receive`], then [`Node::send`].
    pub fn poll(&mut self, links: &impl Links) -> Round {
        let mut round = self.receive(links);
        round.sent = self.send(links);
        round
    }

    /// At most one message from each peer handled (what they make waits
    /// in the queues until [`Node::send`]).
    pub fn receive(&mut self, links: &impl Links) -> Round {
        let me = self.kernel.id();
        let mut round = Round::default();
        self.freed_for = 0;
        for peer in (0..self.peers).map(|peer| KernelId(peer as u8)).filter(|peer| *peer != me) {
            let Some((words, was_full)) = links.try_receive_noting_full(peer) else { continue };
            if was_full {
                self.freed_for |= peer_bit(peer.0 as usize);
            }
            match decode(&words) {
                Ok(message) => {
                    self.kernel.receive(peer, message);
                    round.handled += 1;
                    round.produced += self.collect();
                }
                Err(_) => {
                    self.malformed += 1;
                    round.malformed += 1;
                }
            }
        }
        round
    }

    /// Every waiting message the channels take, oldest first per peer;
    /// how many.
    pub fn send(&mut self, links: &impl Links) -> usize {
        let mut sent = 0;
        self.sent_to = 0;
        for (peer, queue) in self.waiting.iter_mut().enumerate() {
            while let Some(words) = queue.front() {
                if !links.try_send(KernelId(peer as u8), words) {
                    break;
                }
                queue.pop_front();
                sent += 1;
                self.sent_to |= peer_bit(peer);
            }
        }
        sent
    }

    /// The peers the last [`Node::send`] gave a message, one bit each
    /// ([`peer_bit`]): the ones to wake, and only them.
    pub fn sent_to(&self) -> u64 {
        self.sent_to
    }

    /// The peers whose full channel to this kernel the last
    /// [`Node::receive`] freed a slot of, one bit each ([`peer_bit`]): they
    /// may be waiting for room, so wake them.
    pub fn freed_for(&self) -> u64 {
        self.freed_for
    }

    /// Whether nothing waits to be sent.
    pub fn idle(&self) -> bool {
        self.waiting.iter().all(VecDeque::is_empty)
    }

    /// Malformed slots refused so far.
    pub fn malformed(&self) -> usize {
        self.malformed
    }
}

/// Kernel `peer`'s bit in [`Node::sent_to`]: bit `peer`, kernels from 63 up
/// sharing bit 63 (waking one of them wakes them all).
pub fn peer_bit(peer: usize) -> u64 {
    1 << peer.min(63)
}
