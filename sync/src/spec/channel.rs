//! The atomic spec of [`Channel`](crate::Channel).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::ThreadNumber;
use crate::ipc_error::check_length;
use crate::IpcError;

/// A rendezvous channel: waiting senders with their messages, and waiting
/// receivers, each oldest first. At most one of the two queues is
/// non-empty: a sender meeting a waiting receiver (or the reverse) hands
/// over at once, to the oldest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelSpec {
    senders: VecDeque<(ThreadNumber, Vec<u8>)>,
    receivers: VecDeque<ThreadNumber>,
}

/// A message handed from a sender to a receiver: both operations complete.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delivery {
    /// Whose `send` returned.
    pub sender: ThreadNumber,
    /// Whose `recv` returned.
    pub receiver: ThreadNumber,
    /// What the receiver got.
    pub message: Vec<u8>,
}

impl ChannelSpec {
    /// Nobody waits.
    pub const fn new() -> Self {
        Self {
            senders: VecDeque::new(),
            receivers: VecDeque::new(),
        }
    }

    /// `sender` sends `message`: the delivery if a receiver was waiting,
    /// else the sender waits; `TooLong` (and no change) beyond a page.
    pub fn send(&mut self, sender: ThreadNumber, message: &[u8]) -> Result<Option<Delivery>, IpcError> {
        check_length(message.len())?;
        let Some(receiver) = self.receivers.pop_front() else {
            self.senders.push_back((sender, message.to_vec()));
            return Ok(None);
        };
        Ok(Some(Delivery {
            sender,
            receiver,
            message: message.to_vec(),
        }))
    }

    /// `receiver` receives: the delivery if a sender was waiting, else the
    /// receiver waits.
    pub fn recv(&mut self, receiver: ThreadNumber) -> Option<Delivery> {
        let Some((sender, message)) = self.senders.pop_front() else {
            self.receivers.push_back(receiver);
            return None;
        };
        Some(Delivery {
            sender,
            receiver,
            message,
        })
    }

    /// Threads waiting to send, oldest first.
    pub fn waiting_senders(&self) -> impl Iterator<Item = ThreadNumber> + '_ {
        self.senders.iter().map(|(thread, _)| *thread)
    }

    /// Threads waiting to receive, oldest first.
    pub fn waiting_receivers(&self) -> impl Iterator<Item = ThreadNumber> + '_ {
        self.receivers.iter().copied()
    }
}
