//! `Endpoint`: seL4-style synchronous IPC between threads that each own a
//! [`Mailbox`]. `send` hands a message to a receiver; `call` hands it over
//! and waits for the receiver's answer through the [`ReplyTo`] the
//! receiver got with it; `recv` takes the next message, first answering
//! the last call if given one (seL4's `ReplyRecv`).
//!
//! Refines [`spec::EndpointSpec`](crate::spec::EndpointSpec): senders
//! and receivers each wait in arrival order, each message reaches exactly
//! one receiver, and each call gets at most one reply, from the receiver
//! of its message.
//!
//! **The fast path.** When a receiver is already waiting, a sender puts
//! the message straight into the receiver's mailbox and, for a call, gives
//! its CPU to the receiver ([`Blocking::unpark_and_park`]: in the kernel a
//! direct switch, no scheduler queue). A `recv` that answers a call and
//! finds no sender waiting gives its CPU back to the caller the same way.
//! Nothing on that path allocates.
//!
//! **What a message is** is the caller's type `M`: the kernel's carries
//! registers, bytes and a capability to pass. Sender and receiver both
//! pass an `on_match`; the one of the side that completes the meeting (the
//! later of the two to arrive) runs, once per message, outside every lock,
//! with both mailboxes' `owner` tags ([`Meeting`]): there the kernel moves
//! the capability from the sender's space to the receiver's.
//!
//! **Interruption.** A waiting thread whose `interrupted` turns true leaves
//! the queue and fails with [`EndpointError::Interrupted`] — unless its
//! message was already taken (a send then succeeds) or a message is on its
//! way to it (a receive then takes it). A caller interrupted while its
//! message is being served gives up the reply: each operation of a
//! mailbox has a number, and a reply meant for an earlier one is dropped.
//!
//! **Lock order.** The endpoint's lock and each mailbox's are at
//! [`SYNC_LEVEL`](crate::SYNC_LEVEL) and never held together; threads are
//! woken, and old mailbox contents (which may hold a [`ReplyTo`], whose
//! drop tells its caller) dropped, with no lock held.

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use crate::blocking::{sync_lock, SyncLock};
use crate::Blocking;

/// Why an endpoint operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointError {
    /// `interrupted` said so before the operation could complete.
    Interrupted,
    /// The endpoint was closed (its last capability went).
    Closed,
    /// The receiver of a call let go of its [`ReplyTo`] without answering.
    NoReply,
}

/// Who met when a message reached its receiver: the two mailboxes'
/// `owner` tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meeting {
    /// The sending (or calling) mailbox's tag.
    pub sender: u64,
    /// The receiving mailbox's tag.
    pub receiver: u64,
}

/// A thread's place to receive messages, replies and news of its queued
/// message. One thread owns it; it does one operation at a time.
pub struct Mailbox<M, B: Blocking> {
    thread: B::Thread,
    owner: u64,
    inbox: SyncLock<Inbox<M, B>, B>,
}

struct Inbox<M, B: Blocking> {
    /// The number of the owner's current operation.
    operation: u64,
    state: Delivery<M, B>,
}

/// What a mailbox holds for its owner's current operation.
enum Delivery<M, B: Blocking> {
    /// Nothing yet.
    Empty,
    /// A message for a receive, with the way to answer it if it came by
    /// `call`.
    Message(M, Option<ReplyTo<M, B>>),
    /// A receiver took the queued message of a send.
    Taken,
    /// The answer to a call.
    Reply(M),
    /// The receiver of a call let go of it unanswered.
    NoReply,
    /// The endpoint closed while this mailbox waited on it.
    Closed,
}

impl<M, B: Blocking> Mailbox<M, B> {
    /// A mailbox for the calling thread (the one it wakes); `owner` is
    /// this mailbox's tag in the [`Meeting`]s `on_match` is given.
    pub fn new(owner: u64) -> Self {
        Self { thread: B::current(), owner, inbox: sync_lock::<_, B>(Inbox { operation: 0, state: Delivery::Empty }) }
    }

    /// The tag given to [`Mailbox::new`].
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// Starts an operation: empties the mailbox and numbers the operation.
    #[inline(always)]
    fn begin(&self) -> u64 {
        let mut inbox = B::lock(&self.inbox);
        inbox.operation += 1;
        let operation = inbox.operation;
        // Empty is the rule (each operation takes what it was given): no
        // move of a whole delivery then.
        if matches!(inbox.state, Delivery::Empty) {
            return operation;
        }
        let old = core::mem::replace(&mut inbox.state, Delivery::Empty);
        drop(inbox);
        drop(old);
        operation
    }

    /// Puts `delivery` in the mailbox if it still serves `operation` and
    /// holds nothing; gives it back otherwise. Does not wake the owner.
    #[inline(always)]
    fn put(&self, operation: u64, delivery: Delivery<M, B>) -> Result<(), Delivery<M, B>> {
        let mut inbox = B::lock(&self.inbox);
        if inbox.operation != operation || !matches!(inbox.state, Delivery::Empty) {
            return Err(delivery);
        }
        inbox.state = delivery;
        Ok(())
    }

    /// Takes what the mailbox holds for `operation` if it is not empty.
    #[inline(always)]
    fn take(&self, operation: u64) -> Option<Delivery<M, B>> {
        let mut inbox = B::lock(&self.inbox);
        if inbox.operation != operation || matches!(inbox.state, Delivery::Empty) {
            return None;
        }
        Some(core::mem::replace(&mut inbox.state, Delivery::Empty))
    }

    /// Ends `operation` early: later deliveries for it are refused. Gives
    /// back one that came in the meantime.
    fn abandon(&self, operation: u64) -> Option<Delivery<M, B>> {
        let mut inbox = B::lock(&self.inbox);
        if inbox.operation != operation {
            return None;
        }
        inbox.operation += 1;
        match core::mem::replace(&mut inbox.state, Delivery::Empty) {
            Delivery::Empty => None,
            delivery => Some(delivery),
        }
    }

    /// Waits for a delivery for `operation`. The first park gives the CPU
    /// to `hand_to`, if any. With `interrupted` true, `give_up` decides:
    /// true ends the operation, and the wait with `None` unless a delivery
    /// slipped in just before.
    #[inline(always)]
    fn wait(
        &self,
        operation: u64,
        mut hand_to: Option<&B::Thread>,
        interrupted: &impl Fn() -> bool,
        mut give_up: impl FnMut() -> bool,
    ) -> Option<Delivery<M, B>> {
        loop {
            // Before a hand-over, no look (one lock round trip less): a
            // delivery that came already left its wake-up's permit, so
            // the park returns at once and the next look finds it.
            if hand_to.is_none() {
                if let Some(delivery) = self.take(operation) {
                    return Some(delivery);
                }
            }
            if interrupted() && give_up() {
                if let Some(thread) = hand_to {
                    B::unpark(thread);
                }
                return self.abandon(operation);
            }
            match hand_to.take() {
                Some(thread) => B::unpark_and_park(thread, &self.thread),
                None => B::park(),
            }
        }
    }
}

/// The way to answer one call: held by the receiver of the call's
/// message. Dropping it unanswered tells the caller ([`EndpointError::NoReply`]).
pub struct ReplyTo<M, B: Blocking> {
    caller: Option<(Arc<Mailbox<M, B>>, u64)>,
}

impl<M, B: Blocking> ReplyTo<M, B> {
    /// Puts `message` in the caller's mailbox, if the caller still waits
    /// for it; returns the thread to wake (not woken yet).
    #[inline(always)]
    fn answer(mut self, message: M) -> Option<B::Thread> {
        let (caller, operation) = self.caller.take()?;
        let put = caller.put(operation, Delivery::Reply(message));
        put.is_ok().then(|| caller.thread.clone())
    }

    /// Answers the call with `message` and wakes the caller. False: the
    /// caller no longer waits (it was interrupted).
    pub fn reply(self, message: M) -> bool {
        let woken = self.answer(message);
        if let Some(thread) = &woken {
            B::unpark(thread);
        }
        woken.is_some()
    }
}

impl<M, B: Blocking> Drop for ReplyTo<M, B> {
    fn drop(&mut self) {
        if let Some((caller, operation)) = self.caller.take() {
            if caller.put(operation, Delivery::NoReply).is_ok() {
                B::unpark(&caller.thread);
            }
        }
    }
}

/// A message received, and the way to answer it if it came by `call`.
pub struct Received<M, B: Blocking> {
    /// The message.
    pub message: M,
    /// Present for a call's message.
    pub reply: Option<ReplyTo<M, B>>,
}

/// A sender waiting for a receiver.
struct QueuedSend<M, B: Blocking> {
    message: M,
    from: Arc<Mailbox<M, B>>,
    operation: u64,
    /// It waits for an answer (`call`).
    call: bool,
}

/// The waiting sides of an endpoint. At most one of the two queues is
/// non-empty between critical sections.
struct EndpointState<M, B: Blocking> {
    senders: VecDeque<QueuedSend<M, B>>,
    receivers: VecDeque<(Arc<Mailbox<M, B>>, u64)>,
    closed: bool,
}

/// A synchronous IPC endpoint for messages of type `M` between threads
/// blocking through `B`.
pub struct Endpoint<M, B: Blocking> {
    state: SyncLock<EndpointState<M, B>, B>,
}

impl<M, B: Blocking> Default for Endpoint<M, B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M, B: Blocking> Endpoint<M, B> {
    /// An endpoint nobody waits on.
    pub fn new() -> Self {
        Self { state: sync_lock::<_, B>(EndpointState { senders: VecDeque::new(), receivers: VecDeque::new(), closed: false }) }
    }

    /// Sends `message` and returns once a receiver has it.
    pub fn send(
        &self,
        me: &Arc<Mailbox<M, B>>,
        message: M,
        on_match: impl FnOnce(&mut M, Meeting),
        interrupted: impl Fn() -> bool,
    ) -> Result<(), EndpointError> {
        let operation = me.begin();
        match self.hand_over(me, operation, message, false, on_match)? {
            // Straight into a waiting receiver: it runs when it gets a CPU.
            Handed::ToReceiver(receiver) => {
                B::unpark(&receiver);
                Ok(())
            }
            Handed::Queued => match me.wait(operation, None, &interrupted, || self.withdraw_send(me, operation)) {
                Some(Delivery::Taken) => Ok(()),
                Some(Delivery::Closed) => Err(EndpointError::Closed),
                _ => Err(EndpointError::Interrupted),
            },
        }
    }

    /// Sends `message` and waits for the receiver's answer.
    #[inline(always)]
    pub fn call(
        &self,
        me: &Arc<Mailbox<M, B>>,
        message: M,
        on_match: impl FnOnce(&mut M, Meeting),
        interrupted: impl Fn() -> bool,
    ) -> Result<M, EndpointError> {
        let operation = me.begin();
        let receiver = match self.hand_over(me, operation, message, true, on_match)? {
            Handed::ToReceiver(receiver) => Some(receiver),
            Handed::Queued => None,
        };
        // Interrupted, the caller leaves the queue if it is still there and
        // gives up the answer if its message was taken.
        let give_up = || {
            if receiver.is_none() {
                self.withdraw_send(me, operation);
            }
            true
        };
        match me.wait(operation, receiver.as_ref(), &interrupted, give_up) {
            Some(Delivery::Reply(answer)) => Ok(answer),
            Some(Delivery::NoReply) => Err(EndpointError::NoReply),
            Some(Delivery::Closed) => Err(EndpointError::Closed),
            _ => Err(EndpointError::Interrupted),
        }
    }

    /// Receives the next message, first answering `answer`'s call (if
    /// any) with its message. The answer is given even if the receive then
    /// fails.
    #[inline(always)]
    pub fn recv(
        &self,
        me: &Arc<Mailbox<M, B>>,
        answer: Option<(ReplyTo<M, B>, M)>,
        on_match: impl FnOnce(&mut M, Meeting),
        interrupted: impl Fn() -> bool,
    ) -> Result<Received<M, B>, EndpointError> {
        let caller = answer.and_then(|(reply_to, message)| reply_to.answer(message));
        let operation = me.begin();
        let queued = {
            let mut state = B::lock(&self.state);
            if state.closed {
                None
            } else if let Some(sender) = state.senders.pop_front() {
                Some(Ok(sender))
            } else {
                state.receivers.push_back((me.clone(), operation));
                Some(Err(()))
            }
        };
        match queued {
            None => {
                if let Some(thread) = &caller {
                    B::unpark(thread);
                }
                Err(EndpointError::Closed)
            }
            Some(Ok(sender)) => {
                if let Some(thread) = &caller {
                    B::unpark(thread);
                }
                Ok(Self::take_queued(sender, me.owner, on_match))
            }
            // Nobody sends yet: the CPU goes back to the caller answered.
            Some(Err(())) => match me.wait(operation, caller.as_ref(), &interrupted, || self.withdraw_receive(me, operation)) {
                Some(Delivery::Message(message, reply)) => Ok(Received { message, reply }),
                Some(Delivery::Closed) => Err(EndpointError::Closed),
                _ => Err(EndpointError::Interrupted),
            },
        }
    }

    /// A receiver takes a queued sender's message: moves what it carries,
    /// tells a plain sender it is done, keeps a caller's way back.
    #[inline(always)]
    fn take_queued(sender: QueuedSend<M, B>, owner: u64, on_match: impl FnOnce(&mut M, Meeting)) -> Received<M, B> {
        let QueuedSend { mut message, from, operation, call } = sender;
        on_match(&mut message, Meeting { sender: from.owner, receiver: owner });
        // A caller learns nothing until its answer (its mailbox must stay
        // empty for it); a plain sender is done.
        if !call && from.put(operation, Delivery::Taken).is_ok() {
            B::unpark(&from.thread);
        }
        let reply = call.then_some(ReplyTo { caller: Some((from, operation)) });
        Received { message, reply }
    }

    /// Hands `message` to the oldest waiting receiver, or queues it.
    #[inline(always)]
    fn hand_over(
        &self,
        me: &Arc<Mailbox<M, B>>,
        operation: u64,
        mut message: M,
        call: bool,
        on_match: impl FnOnce(&mut M, Meeting),
    ) -> Result<Handed<B>, EndpointError> {
        let mut on_match = Some(on_match);
        loop {
            let receiver = {
                let mut state = B::lock(&self.state);
                if state.closed {
                    return Err(EndpointError::Closed);
                }
                match state.receivers.pop_front() {
                    Some(receiver) => receiver,
                    None => {
                        state.senders.push_back(QueuedSend { message, from: me.clone(), operation, call });
                        return Ok(Handed::Queued);
                    }
                }
            };
            let (mailbox, its_operation) = receiver;
            if let Some(on_match) = on_match.take() {
                on_match(&mut message, Meeting { sender: me.owner, receiver: mailbox.owner });
            }
            let reply = call.then(|| ReplyTo { caller: Some((me.clone(), operation)) });
            match mailbox.put(its_operation, Delivery::Message(message, reply)) {
                Ok(()) => return Ok(Handed::ToReceiver(mailbox.thread.clone())),
                // That receive is over (cannot happen while receivers wait
                // for what they were promised): the next receiver.
                Err(Delivery::Message(back, reply)) => {
                    if let Some(mut reply) = reply {
                        reply.caller = None;
                    }
                    message = back;
                }
                Err(_) => unreachable!("put gives back what it was given"),
            }
        }
    }

    /// Takes the queued send of `me`'s `operation` off the queue; false if a
    /// receiver took it already.
    fn withdraw_send(&self, me: &Arc<Mailbox<M, B>>, operation: u64) -> bool {
        let removed = {
            let mut state = B::lock(&self.state);
            let at = state.senders.iter().position(|queued| Arc::ptr_eq(&queued.from, me) && queued.operation == operation);
            at.and_then(|at| state.senders.remove(at))
        };
        removed.is_some()
    }

    /// Takes `me`'s receive off the queue; false if a sender took it.
    fn withdraw_receive(&self, me: &Arc<Mailbox<M, B>>, operation: u64) -> bool {
        let mut state = B::lock(&self.state);
        let at = state.receivers.iter().position(|(mailbox, its)| Arc::ptr_eq(mailbox, me) && *its == operation);
        at.and_then(|at| state.receivers.remove(at)).is_some()
    }

    /// Closes the endpoint: every waiting sender and receiver fails with
    /// [`EndpointError::Closed`], and so does every later operation.
    pub fn close(&self) {
        let (senders, receivers) = {
            let mut state = B::lock(&self.state);
            state.closed = true;
            (core::mem::take(&mut state.senders), core::mem::take(&mut state.receivers))
        };
        let waiting = senders.into_iter().map(|queued| (queued.from, queued.operation)).chain(receivers);
        for (mailbox, operation) in waiting {
            if mailbox.put(operation, Delivery::Closed).is_ok() {
                B::unpark(&mailbox.thread);
            }
        }
    }

    /// Threads waiting to send and to receive.
    pub fn waiting(&self) -> (usize, usize) {
        let state = B::lock(&self.state);
        (state.senders.len(), state.receivers.len())
    }
}

/// Where `hand_over` left a message.
enum Handed<B: Blocking> {
    /// In this receiver's mailbox.
    ToReceiver(B::Thread),
    /// On the senders' queue.
    Queued,
}
