//! `Channel`: synchronous IPC between threads (mC2's single-copy send and
//! receive).
//!
//! Refines [`spec::ChannelSpec`](crate::spec::ChannelSpec): a rendezvous —
//! `send` returns only once a receiver holds the message — in which waiting
//! senders are served in arrival order, and so are waiting receivers; each
//! message is delivered exactly once.
//!
//! **The one copy.** A receiver lends its page-sized [`MessageBuffer`] to
//! the channel (moving a `Box`, not bytes); the sender that claims it copies
//! its `&[u8]` straight into that page, outside the channel lock, then hands
//! the page back to the receiver. That `copy_from_slice` in
//! [`Channel::send`] is the only time the payload moves. (For user
//! processes the same place becomes the copy from the sender's address
//! space.)
//!
//! **Lock order.** The channel's lock is at
//! [`SYNC_LEVEL`](crate::SYNC_LEVEL); nothing else of this layer is taken
//! while it is held, and threads are woken after it is released. Send and
//! receive block, so they must be called with no spinlock held.

use alloc::boxed::Box;

use crate::blocking::{park_until, sync_lock, Queued, SyncLock};
use crate::channel_state::{ChannelState, ReceiveId};
use crate::ipc_error::check_length;
use crate::message_buffer::Page;
use crate::wakeups::Wakeups;
use crate::{Blocking, IpcError, MessageBuffer};

/// A synchronous channel for messages of up to
/// [`MAX_MESSAGE_LENGTH`](crate::MAX_MESSAGE_LENGTH) bytes between threads
/// blocking through `B`.
pub struct Channel<B: Blocking> {
    state: SyncLock<ChannelState<B>, B>,
}

impl<B: Blocking> Channel<B> {
    loom_const_fn! {
        /// A channel with nobody waiting on it.
        pub fn new() -> Self {
            Self { state: sync_lock::<_, B>(ChannelState::new()) }
        }
    }

    /// Sends `message`, waiting (in arrival order among senders) until a
    /// receiver takes it; returns once the message is in the receiver's
    /// buffer. [`IpcError::TooLong`] beyond one page, and nothing is sent.
    pub fn send(&self, message: &[u8]) -> Result<(), IpcError> {
        check_length(message.len())?;
        let (id, mut page) = self.claim_receive();
        // The one copy of the payload: straight into the receiver's page.
        page[..message.len()].copy_from_slice(message);
        let receiver = B::lock(&self.state).deliver(id, page, message.len());
        B::unpark(&receiver);
        Ok(())
    }

    /// Receives the next message into `buffer`, waiting (in arrival order
    /// among receivers) until a sender delivers it; returns its length.
    /// Never fails today; the `Result` leaves room for closed channels.
    pub fn recv(&self, buffer: &mut MessageBuffer) -> Result<usize, IpcError> {
        let receiver = B::current();
        let page = buffer.lend_page();
        let mut state = B::lock(&self.state);
        let id = state.post(page, receiver);
        let mut wakeups = Wakeups::<B>::new();
        // A receive is posted now, for the head sender.
        wakeups.add(state.senders.front());
        state.check_invariants();
        drop(state);
        wakeups.wake();
        let (page, length) = self.collect(id);
        buffer.return_page(page, length);
        Ok(length)
    }

    /// A round trip: sends `request` on this channel, then receives the
    /// reply from `reply_channel` into `reply`; returns the reply's length.
    pub fn call(
        &self,
        request: &[u8],
        reply_channel: &Channel<B>,
        reply: &mut MessageBuffer,
    ) -> Result<usize, IpcError> {
        self.send(request)?;
        reply_channel.recv(reply)
    }

    /// How many senders wait now: a snapshot, for tests.
    pub fn waiting_senders(&self) -> usize {
        B::lock(&self.state).senders.len()
    }

    /// Waits for this sender's turn and a posted receive, then claims the
    /// receive's page.
    fn claim_receive(&self) -> (ReceiveId, Box<Page>) {
        let mut state = B::lock(&self.state);
        let ticket = state.take_send_ticket();
        let mut queued = Queued::No;
        if !state.may_send(ticket) {
            state.senders.push_back(B::current());
            queued = Queued::Yes;
            state = park_until::<_, B>(&self.state, state, |state| state.may_send(ticket));
        }
        let claimed = state.claim();
        if queued == Queued::Yes {
            // Done waiting: leave the queue (as the bounded queue's fix),
            // of which this sender is the head.
            state.senders.pop_front();
        }
        let mut wakeups = Wakeups::<B>::new();
        if state.has_posted() {
            wakeups.add(state.senders.front());
        }
        state.check_invariants();
        drop(state);
        wakeups.wake();
        claimed
    }

    /// Waits until receive `id` is delivered; returns its page and length.
    fn collect(&self, id: ReceiveId) -> (Box<Page>, usize) {
        loop {
            let delivered = B::lock(&self.state).collect(id);
            if let Some(delivered) = delivered {
                return delivered;
            }
            B::park();
        }
    }
}

impl<B: Blocking> Default for Channel<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Blocking> core::fmt::Debug for Channel<B> {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        formatter
            .debug_struct("Channel")
            .field("waiting_senders", &self.waiting_senders())
            .finish_non_exhaustive()
    }
}
