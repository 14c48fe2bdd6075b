//! The transmit side of a network device: frames go into free transmit
//! slots, and those that find every slot in flight wait, in order, in a
//! bounded queue (as Linux's transmit queue) until the device's completions
//! free slots — a burst of replies larger than the ring is sent, not lost.
//! Past the bound a frame is dropped, as a network may.
//!
//! Host-tested logic; the driver calls [`TransmitQueue::send`] for each
//! frame and [`TransmitQueue::reclaim`] when the device says it has used
//! chains (and before each send).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::packets::{PacketError, PacketSlots, LARGEST_FRAME};
use crate::queue::{DmaMemory, SplitQueue};

/// What became of a frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transmitted {
    /// In a slot, for the device.
    Sent,
    /// Queued behind others, until slots come back.
    Waiting,
    /// Dropped: too large, or the waiting queue full.
    Dropped,
}

/// Transmit slots and the frames waiting for them.
pub struct TransmitQueue {
    slots: PacketSlots,
    /// How many slots there are (all free at the start).
    slot_count: usize,
    waiting: VecDeque<Vec<u8>>,
    limit: usize,
}

impl TransmitQueue {
    /// `slots` (transmit slots), with up to `limit` frames waiting.
    pub fn new(slots: PacketSlots, limit: usize) -> Self {
        let slot_count = slots.free_count();
        Self { slots, slot_count, waiting: VecDeque::new(), limit }
    }

    /// Frames the device has not yet said it sent: in slots it holds, or
    /// waiting for one (0: everything given to `send` has gone out).
    pub fn unsent(&self) -> usize {
        self.slot_count - self.slots.free_count() + self.waiting.len()
    }

    /// Frames waiting for a slot.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Sends `frame` after those waiting; an error only when the device
    /// broke the queue protocol.
    pub fn send(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory, frame: &[u8]) -> Result<Transmitted, PacketError> {
        if frame.len() > LARGEST_FRAME {
            return Ok(Transmitted::Dropped);
        }
        self.send_waiting(queue, memory)?;
        if self.waiting.is_empty() {
            match self.slots.send(queue, memory, frame) {
                Ok(_) => return Ok(Transmitted::Sent),
                Err(PacketError::Busy) => {}
                Err(error) => return Err(error),
            }
        }
        if self.waiting.len() >= self.limit || self.waiting.try_reserve(1).is_err() {
            return Ok(Transmitted::Dropped);
        }
        let mut copy = Vec::new();
        if copy.try_reserve_exact(frame.len()).is_err() {
            return Ok(Transmitted::Dropped);
        }
        copy.extend_from_slice(frame);
        self.waiting.push_back(copy);
        Ok(Transmitted::Waiting)
    }

    /// Frees the slots the device has sent from and fills them with
    /// waiting frames, oldest first.
    pub fn reclaim(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory) -> Result<(), PacketError> {
        while let Some(used) = self.slots.take_used(queue, memory) {
            used?;
        }
        self.send_waiting(queue, memory)
    }

    fn send_waiting(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory) -> Result<(), PacketError> {
        while let Some(frame) = self.waiting.front() {
            match self.slots.send(queue, memory, frame) {
                Ok(_) => {
                    self.waiting.pop_front();
                }
                Err(PacketError::Busy) => break,
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}
