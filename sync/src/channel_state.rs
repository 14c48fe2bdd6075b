//! The data of a [`Channel`](crate::Channel), under its lock: posted
//! receives and the queue of waiting senders.

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use crate::message_buffer::Page;
use crate::Blocking;

/// Names one posted receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReceiveId(u64);

/// How far a posted receive has come.
enum Stage {
    /// Waiting for a sender; the channel holds the receiver's page.
    Posted(Box<Page>),
    /// A sender took the page and is copying into it.
    Claimed,
    /// The message is in the page, for the receiver to collect.
    Delivered { page: Box<Page>, length: usize },
}

/// A receive from posting until its receiver collects the message.
struct Receive<B: Blocking> {
    id: ReceiveId,
    receiver: B::Thread,
    stage: Stage,
}

/// Receives in the order they were posted, and the senders' tickets.
///
/// Invariants between critical sections:
/// - the `Posted` receives come after every `Claimed` or `Delivered` one,
///   and there are `posted` of them: senders claim the oldest first;
/// - the senders with tickets `sends_started..send_tickets` all wait, in
///   ticket order, on `senders` (the one with ticket `sends_started` at its
///   head); tickets below `sends_started` have claimed their receive.
pub(crate) struct ChannelState<B: Blocking> {
    receives: VecDeque<Receive<B>>,
    /// Receives in the `Posted` stage.
    posted: usize,
    next_receive: u64,
    /// Tickets handed to senders.
    send_tickets: u64,
    /// Senders that have claimed a receive.
    sends_started: u64,
    /// Waiting senders, oldest first.
    pub(crate) senders: VecDeque<B::Thread>,
}

impl<B: Blocking> ChannelState<B> {
    pub(crate) const fn new() -> Self {
        Self {
            receives: VecDeque::new(),
            posted: 0,
            next_receive: 0,
            send_tickets: 0,
            sends_started: 0,
            senders: VecDeque::new(),
        }
    }

    /// Lends `page` to the channel for `receiver`'s next message.
    pub(crate) fn post(&mut self, page: Box<Page>, receiver: B::Thread) -> ReceiveId {
        let id = ReceiveId(self.next_receive);
        self.next_receive += 1;
        self.posted += 1;
        self.receives.push_back(Receive {
            id,
            receiver,
            stage: Stage::Posted(page),
        });
        id
    }

    pub(crate) fn take_send_ticket(&mut self) -> u64 {
        let ticket = self.send_tickets;
        self.send_tickets += 1;
        ticket
    }

    /// The sender holding `ticket` may go: it is first in line and a
    /// receive is posted.
    pub(crate) fn may_send(&self, ticket: u64) -> bool {
        self.sends_started == ticket && self.has_posted()
    }

    pub(crate) fn has_posted(&self) -> bool {
        self.posted > 0
    }

    /// Takes the page of the oldest posted receive, for the first sender in
    /// line (the caller may send).
    pub(crate) fn claim(&mut self) -> (ReceiveId, Box<Page>) {
        let receive = self
            .receives
            .iter_mut()
            .find(|receive| matches!(receive.stage, Stage::Posted(_)))
            .expect("a sender claims only when a receive is posted");
        let Stage::Posted(page) = core::mem::replace(&mut receive.stage, Stage::Claimed) else {
            unreachable!("found in the Posted stage")
        };
        self.posted -= 1;
        self.sends_started += 1;
        (receive.id, page)
    }

    /// Hands receive `id` its page with a message of `length` bytes;
    /// returns the receiver, to wake.
    pub(crate) fn deliver(&mut self, id: ReceiveId, page: Box<Page>, length: usize) -> B::Thread {
        let receive = self.find(id);
        debug_assert!(matches!(receive.stage, Stage::Claimed));
        receive.stage = Stage::Delivered { page, length };
        receive.receiver.clone()
    }

    /// The page and message length of receive `id` if it has been
    /// delivered; the receive is then over.
    pub(crate) fn collect(&mut self, id: ReceiveId) -> Option<(Box<Page>, usize)> {
        let position = self.position(id);
        if !matches!(self.receives[position].stage, Stage::Delivered { .. }) {
            return None;
        }
        match self.receives.remove(position).map(|receive| receive.stage) {
            Some(Stage::Delivered { page, length }) => Some((page, length)),
            _ => unreachable!("checked Delivered above"),
        }
    }

    /// Checks the invariants of the type comment (debug builds).
    pub(crate) fn check_invariants(&self) {
        debug_assert_eq!(self.senders.len() as u64, self.send_tickets - self.sends_started);
        debug_assert_eq!(
            self.receives
                .iter()
                .filter(|receive| matches!(receive.stage, Stage::Posted(_)))
                .count(),
            self.posted
        );
    }

    fn find(&mut self, id: ReceiveId) -> &mut Receive<B> {
        let position = self.position(id);
        &mut self.receives[position]
    }

    fn position(&self, id: ReceiveId) -> usize {
        self.receives
            .iter()
            .position(|receive| receive.id == id)
            .expect("a receive stays in the channel until its receiver collects it")
    }
}
