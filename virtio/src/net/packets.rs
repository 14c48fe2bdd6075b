//! Packet slots: the buffers of one network queue, each [`SLOT_BYTES`] of
//! DMA memory at an address the driver gives, holding the 12-byte
//! `virtio_net_hdr` and then one Ethernet frame. Receive slots are lent
//! to the device writable and taken back with the frame it wrote;
//! transmit slots are filled by the driver and freed once used.
//!
//! Must never: believe a used length (a frame shorter than the header is
//! dropped, a longer one than the slot cannot come: the queue checks it),
//! or lend a slot twice.

use alloc::vec;
use alloc::vec::Vec;

use crate::queue::{AddError, Buffer, DeviceError, Direction, DmaMemory, SplitQueue, Token};

/// Bytes of one slot: a header and the largest frame, rounded up.
pub const SLOT_BYTES: u32 = 2048;
/// `sizeof(struct virtio_net_hdr)` with `VIRTIO_F_VERSION_1` (`num_buffers` included).
pub const HEADER_BYTES: usize = 12;
/// The largest frame a slot holds: 1500 bytes of payload, 14 of Ethernet header.
pub const LARGEST_FRAME: usize = 1514;

/// Why a packet could not be queued or taken.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PacketError {
    /// Every transmit slot is in flight; try after completions.
    Busy,
    /// The frame is larger than a slot holds.
    TooLarge,
    /// The queue refused the chain.
    Queue(AddError),
    /// The device broke the queue protocol (it must be reset).
    Device(DeviceError),
}

/// A frame the device delivered, or a used chain that held none.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Received {
    /// A frame (without the header).
    Frame(Vec<u8>),
    /// The device used a slot without a whole header: dropped.
    Runt,
    /// A transmit slot the device has sent from, free again.
    Sent,
}

/// The slots of one queue.
pub struct PacketSlots {
    addresses: Vec<u64>,
    direction: Direction,
    free: Vec<u16>,
    /// The slot whose chain starts at each descriptor.
    by_head: Vec<Option<u16>>,
}

impl PacketSlots {
    /// Slots at `addresses` (each [`SLOT_BYTES`] long, owned by these
    /// slots) for `queue`: receive slots (`Direction::DeviceWrites`) or
    /// transmit slots.
    pub fn new(addresses: Vec<u64>, queue: &SplitQueue, direction: Direction) -> Self {
        let count = addresses.len().min(usize::from(queue.size())) as u16;
        Self { addresses, direction, free: (0..count).rev().collect(), by_head: vec![None; usize::from(queue.size())] }
    }

    /// Slots neither lent nor in flight.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Lends every free receive slot to the device; how many.
    pub fn lend_free(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory) -> Result<usize, PacketError> {
        let mut lent = 0;
        while let Some(&slot) = self.free.last() {
            let buffer = Buffer { physical: self.addresses[usize::from(slot)], length: SLOT_BYTES, direction: Direction::DeviceWrites };
            match queue.add(memory, &[buffer]) {
                Ok(token) => self.in_flight(token, slot),
                Err(AddError::QueueFull) => break,
                Err(error) => return Err(PacketError::Queue(error)),
            }
            lent += 1;
        }
        Ok(lent)
    }

    /// Queues `frame` for the device to send (a zeroed header: no offload).
    pub fn send(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory, frame: &[u8]) -> Result<Token, PacketError> {
        if frame.len() > LARGEST_FRAME {
            return Err(PacketError::TooLarge);
        }
        let slot = *self.free.last().ok_or(PacketError::Busy)?;
        let physical = self.addresses[usize::from(slot)];
        memory.write_bytes(physical, &[0; HEADER_BYTES]);
        memory.write_bytes(physical + HEADER_BYTES as u64, frame);
        let buffer = Buffer { physical, length: (HEADER_BYTES + frame.len()) as u32, direction: Direction::DeviceReads };
        let token = queue.add(memory, &[buffer]).map_err(|error| match error {
            AddError::QueueFull => PacketError::Busy,
            other => PacketError::Queue(other),
        })?;
        self.in_flight(token, slot);
        Ok(token)
    }

    fn in_flight(&mut self, token: Token, slot: u16) {
        self.free.pop();
        self.by_head[usize::from(token.head())] = Some(slot);
    }

    /// The next used chain: a receive slot's frame (copied out; the slot
    /// is free to lend again), or a transmit slot freed.
    pub fn take_used(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory) -> Option<Result<Received, PacketError>> {
        let used = match queue.take_used(memory)? {
            Ok(used) => used,
            Err(error) => return Some(Err(PacketError::Device(error))),
        };
        let Some(slot) = self.by_head.get_mut(usize::from(used.token.head())).and_then(Option::take) else {
            // The queue knew the chain in flight, so this cannot be; a
            // chain this table lost is dropped rather than trusted.
            return Some(Ok(Received::Runt));
        };
        self.free.push(slot);
        if self.direction == Direction::DeviceReads {
            return Some(Ok(Received::Sent));
        }
        let written = used.written_length as usize;
        if written < HEADER_BYTES {
            return Some(Ok(Received::Runt));
        }
        let mut frame = vec![0; written - HEADER_BYTES];
        memory.read_bytes(self.addresses[usize::from(slot)] + HEADER_BYTES as u64, &mut frame);
        Some(Ok(Received::Frame(frame)))
    }
}
