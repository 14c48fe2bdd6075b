//! Block requests in flight: each gets a slot in a DMA area for its header
//! and status byte, goes to the queue as header → data → status, and is
//! matched back by token when the device has used it.
//!
//! Decode, then submit: every check (read-only, capacity, whole sectors,
//! segment limits, a free slot) happens before anything is written.
//!
//! Must never: trust the status byte of a completion whose written length
//! does not cover it, leak a slot when the queue refuses a chain, or reuse
//! a slot before its request is completed or abandoned.

use super::{
    BlockConfig, BlockError, Flush, RequestFailure, RequestHeader, RequestType, Status, HEADER_BYTES, ID_BYTES,
    SECTOR_SIZE,
};
use crate::queue::{Buffer, DeviceError, Direction, DmaMemory, SplitQueue, Token, Used};
use alloc::vec;
use alloc::vec::Vec;

/// Bytes per request slot: the 16-byte header, the status byte, padding.
pub const SLOT_BYTES: u64 = 32;
const STATUS_OFFSET: u64 = HEADER_BYTES as u64;
/// Written into the status byte before submission: a device that claims to
/// have written the status but did not leaves a value it cannot mean.
const STATUS_NOT_WRITTEN: u8 = 0xFF;

/// Part of a request's data: a physically contiguous buffer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DataBuffer {
    /// Its physical address.
    pub physical: u64,
    /// Its length in bytes.
    pub length: u32,
}

/// What a request asked for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestKind {
    /// Read `sectors` sectors from `sector`.
    Read {
        /// The first sector.
        sector: u64,
        /// How many.
        sectors: u64,
    },
    /// Write `sectors` sectors from `sector`.
    Write {
        /// The first sector.
        sector: u64,
        /// How many.
        sectors: u64,
    },
    /// Flush the write cache.
    Flush,
    /// Read the device identifier.
    GetId,
}

/// A finished request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Completion {
    /// The token [`BlockRequests`] gave at submission.
    pub token: Token,
    /// What was asked.
    pub request: RequestKind,
    /// How it went.
    pub outcome: Result<(), RequestFailure>,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    slot: u16,
    request: RequestKind,
}

/// The requests in flight on one queue. Callers serialize access together
/// with the queue.
#[derive(Debug)]
pub struct BlockRequests {
    area: u64,
    config: BlockConfig,
    free_slots: Vec<u16>,
    /// Indexed by the token's head descriptor.
    pending: Vec<Option<Pending>>,
}

impl BlockRequests {
    /// Slots for a queue of `queue_size`: every request takes at least two
    /// descriptors, so half as many slots as descriptors.
    pub fn slot_count(queue_size: u16) -> u16 {
        (queue_size / 2).max(1)
    }

    /// Bytes of DMA memory the slots of a queue of `queue_size` need.
    pub fn area_bytes(queue_size: u16) -> u64 {
        u64::from(Self::slot_count(queue_size)) * SLOT_BYTES
    }

    /// Bookkeeping for `queue`, with headers and status bytes in the DMA
    /// area at `area` ([`BlockRequests::area_bytes`] long, owned by it).
    pub fn new(area: u64, queue: &SplitQueue, config: BlockConfig) -> Result<Self, BlockError> {
        let size = queue.size();
        area.checked_add(Self::area_bytes(size)).ok_or(BlockError::BadArea)?;
        Ok(Self {
            area,
            config,
            free_slots: (0..Self::slot_count(size)).rev().collect(),
            pending: vec![None; usize::from(size)],
        })
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.iter().filter(|pending| pending.is_some()).count()
    }

    /// Reads sectors from `sector` into `data` (whole sectors).
    pub fn read(
        &mut self,
        queue: &mut SplitQueue,
        memory: &impl DmaMemory,
        sector: u64,
        data: &[DataBuffer],
    ) -> Result<Token, BlockError> {
        let sectors = self.check_transfer(sector, data)?;
        let request = RequestKind::Read { sector, sectors };
        self.submit(queue, memory, request, data, Direction::DeviceWrites)
    }

    /// Writes `data` (whole sectors) from `sector` on.
    pub fn write(
        &mut self,
        queue: &mut SplitQueue,
        memory: &impl DmaMemory,
        sector: u64,
        data: &[DataBuffer],
    ) -> Result<Token, BlockError> {
        if self.config.is_read_only() {
            return Err(BlockError::ReadOnly);
        }
        let sectors = self.check_transfer(sector, data)?;
        let request = RequestKind::Write { sector, sectors };
        self.submit(queue, memory, request, data, Direction::DeviceReads)
    }

    /// Makes every completed write durable.
    pub fn flush(&mut self, queue: &mut SplitQueue, memory: &impl DmaMemory) -> Result<Token, BlockError> {
        if self.config.flush == Flush::NotNegotiated {
            return Err(BlockError::FlushNotNegotiated);
        }
        self.submit(queue, memory, RequestKind::Flush, &[], Direction::DeviceWrites)
    }

    /// Reads the device's identifier (up to 20 bytes) into `into`.
    pub fn get_id(
        &mut self,
        queue: &mut SplitQueue,
        memory: &impl DmaMemory,
        into: DataBuffer,
    ) -> Result<Token, BlockError> {
        if into.length < ID_BYTES {
            return Err(BlockError::IdBufferTooSmall);
        }
        self.submit(queue, memory, RequestKind::GetId, &[into], Direction::DeviceWrites)
    }

    /// Matches a used chain to its request and reads its status.
    pub fn complete(&mut self, memory: &impl DmaMemory, used: Used) -> Result<Completion, BlockError> {
        let token = used.token;
        let pending = self.take_pending(token).ok_or(BlockError::UnknownToken { token })?;
        let outcome = match used.written_length {
            0 => Err(RequestFailure::StatusNotWritten),
            _ => outcome_of(self.read_status(memory, pending.slot)),
        };
        self.free_slots.push(pending.slot);
        Ok(Completion {
            token,
            request: pending.request,
            outcome,
        })
    }

    /// Takes the next used chain from `queue` and completes it. A device
    /// error comes back as [`BlockError::Device`]; if it named a request,
    /// that request is abandoned (its slot freed).
    pub fn complete_next(
        &mut self,
        queue: &mut SplitQueue,
        memory: &impl DmaMemory,
    ) -> Option<Result<Completion, BlockError>> {
        match queue.take_used(memory)? {
            Ok(used) => Some(self.complete(memory, used)),
            Err(error) => {
                if let DeviceError::LengthTooLarge { token, .. } = error {
                    self.abandon(token);
                }
                Some(Err(BlockError::Device(error)))
            }
        }
    }

    /// Forgets the request of `token` (after a device reset or error);
    /// returns what it asked, if it was pending.
    pub fn abandon(&mut self, token: Token) -> Option<RequestKind> {
        let pending = self.take_pending(token)?;
        self.free_slots.push(pending.slot);
        Some(pending.request)
    }

    /// Checks a read or write and returns its sector count.
    fn check_transfer(&self, sector: u64, data: &[DataBuffer]) -> Result<u64, BlockError> {
        if data.is_empty() {
            return Err(BlockError::NoData);
        }
        let too_many = self
            .config
            .segment_limit
            .is_some_and(|limit| data.len() as u64 > u64::from(limit));
        if too_many {
            return Err(BlockError::TooManySegments);
        }
        let mut sectors: u64 = 0;
        for buffer in data {
            if buffer.length % SECTOR_SIZE != 0 {
                return Err(BlockError::NotWholeSectors);
            }
            if self
                .config
                .segment_size_limit
                .is_some_and(|limit| buffer.length > limit)
            {
                return Err(BlockError::SegmentTooLarge);
            }
            let buffer_sectors = u64::from(buffer.length / SECTOR_SIZE);
            sectors = sectors.checked_add(buffer_sectors).ok_or(BlockError::PastCapacity)?;
        }
        match sector.checked_add(sectors) {
            Some(end) if end <= self.config.capacity_sectors => Ok(sectors),
            _ => Err(BlockError::PastCapacity),
        }
    }

    fn submit(
        &mut self,
        queue: &mut SplitQueue,
        memory: &impl DmaMemory,
        request: RequestKind,
        data: &[DataBuffer],
        data_direction: Direction,
    ) -> Result<Token, BlockError> {
        if usize::from(queue.size()) != self.pending.len() {
            return Err(BlockError::OtherQueue);
        }
        let slot = self.free_slots.pop().ok_or(BlockError::Busy)?;
        let header_address = self.slot_address(slot);
        let status_address = header_address + STATUS_OFFSET;
        memory.write_bytes(header_address, &header_of(request).to_bytes());
        memory.write_bytes(status_address, &[STATUS_NOT_WRITTEN]);
        let mut chain = Vec::with_capacity(data.len() + 2);
        chain.push(Buffer {
            physical: header_address,
            length: HEADER_BYTES,
            direction: Direction::DeviceReads,
        });
        let data_buffers = data.iter().map(|buffer| Buffer {
            physical: buffer.physical,
            length: buffer.length,
            direction: data_direction,
        });
        chain.extend(data_buffers);
        chain.push(Buffer {
            physical: status_address,
            length: 1,
            direction: Direction::DeviceWrites,
        });
        match queue.add(memory, &chain) {
            Ok(token) => match self.pending.get_mut(usize::from(token.head())) {
                Some(entry) => {
                    *entry = Some(Pending { slot, request });
                    Ok(token)
                }
                // The size check above makes every head an index.
                None => Err(BlockError::OtherQueue),
            },
            Err(error) => {
                self.free_slots.push(slot);
                Err(BlockError::Queue(error))
            }
        }
    }

    fn take_pending(&mut self, token: Token) -> Option<Pending> {
        self.pending.get_mut(usize::from(token.head()))?.take()
    }

    fn slot_address(&self, slot: u16) -> u64 {
        // Checked in new(): the whole area fits the address space.
        self.area + u64::from(slot) * SLOT_BYTES
    }

    fn read_status(&self, memory: &impl DmaMemory, slot: u16) -> Status {
        let mut byte = [0u8; 1];
        memory.read_bytes(self.slot_address(slot) + STATUS_OFFSET, &mut byte);
        Status::from_byte(byte[0])
    }
}

fn header_of(request: RequestKind) -> RequestHeader {
    let (request_type, sector) = match request {
        RequestKind::Read { sector, .. } => (RequestType::In, sector),
        RequestKind::Write { sector, .. } => (RequestType::Out, sector),
        RequestKind::Flush => (RequestType::Flush, 0),
        RequestKind::GetId => (RequestType::GetId, 0),
    };
    RequestHeader { request_type, sector }
}

fn outcome_of(status: Status) -> Result<(), RequestFailure> {
    match status {
        Status::Ok => Ok(()),
        Status::IoError => Err(RequestFailure::IoError),
        Status::Unsupported => Err(RequestFailure::Unsupported),
        Status::Unknown(status) => Err(RequestFailure::UnknownStatus { status }),
    }
}
