//! A bounded FIFO of fixed-size messages (arrays of words) from one
//! sender to one receiver, without locks or waiting: the channel one
//! kernel of a multikernel uses to send to another (SemperOS's DTU
//! endpoint, Barrelfish's URPC). `SLOTS` bounds the messages in flight;
//! a full ring refuses ([`RingFull`]) and the sender keeps the message,
//! in order, for later. Notifying the receiver (an IPI) is the caller's.
//!
//! The sender writes a slot's words, then publishes it by advancing
//! `tail` (Release); the receiver sees the tail (Acquire), reads the
//! words, then frees the slot by advancing `head` (Release), which the
//! sender reads (Acquire) before reusing it. loom: `tests/loom_word_ring.rs`.
//!
//! **Must never** hand the receiver a slot the sender is still writing, let
//! the sender overwrite a slot not yet read, or reorder messages. One
//! sender and one receiver at a time: callers serialize each side.

use crate::atomics::{fence, AtomicU64, AtomicUsize, Ordering};

/// The ring had no free slot: the message was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingFull;

/// `SLOTS` messages of `WORDS` words each, in flight from one sender to
/// one receiver.
pub struct WordRing<const WORDS: usize, const SLOTS: usize> {
    slots: [[AtomicU64; WORDS]; SLOTS],
    /// Messages taken so far (the receiver's count).
    head: AtomicUsize,
    /// Messages published so far (the sender's count).
    tail: AtomicUsize,
}

impl<const WORDS: usize, const SLOTS: usize> Default for WordRing<WORDS, SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const WORDS: usize, const SLOTS: usize> WordRing<WORDS, SLOTS> {
    /// An empty ring.
    pub fn new() -> Self {
        Self { slots: core::array::from_fn(|_| core::array::from_fn(|_| AtomicU64::new(0))), head: AtomicUsize::new(0), tail: AtomicUsize::new(0) }
    }

    /// Sends `message` (the sender's side).
    pub fn try_send(&self, message: &[u64; WORDS]) -> Result<(), RingFull> {
        // Relaxed: only this side writes `tail`.
        let tail = self.tail.load(Ordering::Relaxed);
        // Acquire: the receiver finished reading the slot it freed.
        if tail.wrapping_sub(self.head.load(Ordering::Acquire)) >= SLOTS {
            // Before saying full (and its caller waits for a wake-up): a
            // SeqCst fence, then the head again. With the receiver's fence
            // between its head store and its tail load, either this sees
            // the slot it freed or it sees this side's last tail and
            // reports the ring full (`try_receive_noting_full`): no wake-up
            // is lost (store buffering).
            fence(Ordering::SeqCst);
            if tail.wrapping_sub(self.head.load(Ordering::Acquire)) >= SLOTS {
                return Err(RingFull);
            }
        }
        for (slot, word) in self.slots[tail % SLOTS].iter().zip(message) {
            slot.store(*word, Ordering::Relaxed);
        }
        // Release: the words are written before the slot is published.
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Takes the oldest message (the receiver's side), if any.
    pub fn try_receive(&self) -> Option<[u64; WORDS]> {
        self.try_receive_noting_full().map(|(message, _)| message)
    }

    /// [`WordRing::try_receive`], also saying whether the ring may have
    /// been full for the sender: a sender that found it full and waits for
    /// room must then be woken. After freeing the slot, a SeqCst fence and
    /// a fresh look at `tail`: if every slot was taken up to the one just
    /// freed, say so (the sender's side fences too, see `try_send`), so
    /// that a sender told `RingFull` always meets a receive that says
    /// full — `tests/loom_word_ring.rs` checks that no wake-up is missed.
    /// It may say full when the sender never saw it so: one spare wake-up.
    pub fn try_receive_noting_full(&self) -> Option<([u64; WORDS], bool)> {
        let head = self.head.load(Ordering::Relaxed);
        // Acquire: the sender's words are visible once its tail is.
        if self.tail.load(Ordering::Acquire) == head {
            return None;
        }
        let slot = &self.slots[head % SLOTS];
        let message = core::array::from_fn(|index| slot[index].load(Ordering::Relaxed));
        // Release: the words are read before the slot is handed back.
        self.head.store(head.wrapping_add(1), Ordering::Release);
        fence(Ordering::SeqCst);
        let tail_now = self.tail.load(Ordering::Acquire);
        Some((message, tail_now.wrapping_sub(head) >= SLOTS))
    }

    /// Messages in flight now (a snapshot).
    pub fn len(&self) -> usize {
        self.tail.load(Ordering::Acquire).wrapping_sub(self.head.load(Ordering::Acquire))
    }

    /// Whether no message is in flight now (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
