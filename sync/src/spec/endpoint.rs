//! The atomic spec of [`Endpoint`](crate::Endpoint).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use super::ThreadNumber;

/// An endpoint: waiting senders (with their message, and whether they
/// call) and waiting receivers, each oldest first, and which receiver
/// holds which caller's unanswered message. At most one of the two queues
/// is non-empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointSpec {
    senders: VecDeque<(ThreadNumber, u32, bool)>,
    receivers: VecDeque<ThreadNumber>,
    serving: BTreeMap<ThreadNumber, ThreadNumber>,
}

/// An operation completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EndpointEvent {
    /// A plain send returned: its message reached a receiver.
    Sent(ThreadNumber),
    /// A receive returned this message; `call` if its sender waits for an
    /// answer.
    Received {
        /// Whose receive.
        receiver: ThreadNumber,
        /// What it got.
        message: u32,
        /// It came by `call`.
        call: bool,
    },
    /// A call returned this answer.
    Answered {
        /// Whose call.
        caller: ThreadNumber,
        /// The answer.
        message: u32,
    },
    /// A call failed: its receiver let go of it unanswered.
    NoReply {
        /// Whose call.
        caller: ThreadNumber,
    },
}

impl EndpointSpec {
    /// Nobody waits.
    pub const fn new() -> Self {
        Self { senders: VecDeque::new(), receivers: VecDeque::new(), serving: BTreeMap::new() }
    }

    /// `sender` sends `message` (waiting for an answer if `call`).
    pub fn send(&mut self, sender: ThreadNumber, message: u32, call: bool) -> Vec<EndpointEvent> {
        match self.receivers.pop_front() {
            Some(receiver) => self.meet(sender, receiver, message, call),
            None => {
                self.senders.push_back((sender, message, call));
                Vec::new()
            }
        }
    }

    /// `receiver` answers the call it holds with `answer` (or lets go of
    /// it with `None`), then receives.
    pub fn recv(&mut self, receiver: ThreadNumber, answer: Option<u32>) -> Vec<EndpointEvent> {
        let mut events = Vec::new();
        if let Some(caller) = self.serving.remove(&receiver) {
            events.push(match answer {
                Some(message) => EndpointEvent::Answered { caller, message },
                None => EndpointEvent::NoReply { caller },
            });
        }
        match self.senders.pop_front() {
            Some((sender, message, call)) => events.extend(self.meet(sender, receiver, message, call)),
            None => self.receivers.push_back(receiver),
        }
        events
    }

    fn meet(&mut self, sender: ThreadNumber, receiver: ThreadNumber, message: u32, call: bool) -> Vec<EndpointEvent> {
        let mut events = alloc::vec![EndpointEvent::Received { receiver, message, call }];
        if call {
            self.serving.insert(receiver, sender);
        } else {
            events.push(EndpointEvent::Sent(sender));
        }
        events
    }

    /// Threads waiting to send or call, until a receiver takes theirs.
    pub fn waiting_senders(&self) -> usize {
        self.senders.len()
    }

    /// Whether `thread` holds a call's message unanswered.
    pub fn is_serving(&self, thread: ThreadNumber) -> bool {
        self.serving.contains_key(&thread)
    }
}
