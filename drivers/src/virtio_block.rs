//! A virtio block disk: bring-up over the modern PCI interface, and reads,
//! writes and flushes of whole sectors, many in flight, each completed by
//! the device's interrupt.
//!
//! A request copies its data through frames lent to the device for that
//! request (bounce frames: the page cache will lend its own frames later),
//! so a caller's buffer is never handed to the device. The requester takes
//! a ticket of `sync::Completions` (model-checked with loom) and waits on
//! it; the interrupt handler ([`VirtioBlock::complete_ready`]) finds the
//! used chains and completes each one's ticket, which wakes it. A device
//! that breaks the queue protocol fails every request in flight and every
//! later one with [`BlockIoError::Broken`].
//!
//! Must never block while holding the device lock, or give the device an
//! address outside the frames it was lent.

use alloc::string::String;
use alloc::vec::Vec;

use kernel_objects::device_memory::DmaFrame;
use machine::pci::PciFunction;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Completions, KernelBlocking, Ticket};
use virtio::block::{wanted_block_features, BlockConfig, BlockError, BlockRequests, DataBuffer, RequestFailure};
use virtio::queue::{EventIndex, RingLayout, SplitQueue};
use virtio::transport::{initialize, Features, ModernTransport, QueueNotifier, Transport};

use crate::dma::DeviceFrames;
use crate::bring_up::{modern_transport, StartError};
use crate::pci_access::StructureRegisters;

/// Bytes in a sector, the unit of every transfer.
pub const SECTOR_BYTES: usize = 512;
const FRAME_BYTES: usize = 4096;
/// Data frames per request (64 KiB): larger transfers are split.
const FRAMES_PER_REQUEST: usize = 16;
/// Requests [`VirtioBlock::write_many`] keeps at the device at once.
const WRITES_IN_FLIGHT: usize = 32;
/// The queue size asked for: a descriptor table of 256 entries fills one frame.
const QUEUE_SIZE_LIMIT: u16 = 256;
/// Below the file system's locks, above the sync layer's (5): the
/// interrupt handler completes requests (a `Completions` lock, then the
/// scheduler's to unpark) while holding it.
const DEVICE_LEVEL: Level = Level::new(6);

/// Why a transfer failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockIoError {
    /// No frame for the data (ENOMEM).
    OutOfMemory,
    /// The sectors run past the end of the disk, or are not whole (EINVAL).
    OutOfRange,
    /// A write to a read-only disk (EROFS).
    ReadOnly,
    /// The device reported an I/O error or does not support the request (EIO).
    Device,
    /// The device broke the queue protocol; the disk is unusable (EIO).
    Broken,
}

/// What the device lock guards.
struct DeviceState {
    transport: ModernTransport<StructureRegisters>,
    notifier: QueueNotifier,
    queue: SplitQueue,
    requests: BlockRequests,
    memory: DeviceFrames,
    /// The completion ticket of the request whose chain starts at each
    /// descriptor (indexed by the token's head).
    tickets: Vec<Option<usize>>,
    broken: bool,
}

/// What a waiting requester is told.
type Outcome = Result<(), BlockIoError>;

/// A started virtio block disk.
pub struct VirtioBlock {
    /// Its name under `/dev` (`vda`, `vdb`, …).
    pub name: String,
    /// Where it sits on the PCI bus.
    pub function: &'static PciFunction,
    capacity_sectors: u64,
    read_only: bool,
    flushable: bool,
    state: KernelTicketLock<DeviceState>,
    completions: Completions<Outcome, KernelBlocking>,
}

/// A transfer's direction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Read,
    Write,
}

impl VirtioBlock {
    /// Brings up the disk at `function` (its interrupt is routed later,
    /// once the disk is where the handler finds it).
    pub(crate) fn start(function: &'static PciFunction, name: String) -> Result<Self, StartError> {
        let mut transport = modern_transport(function)?;
        let frames = (0..4).map(|_| DmaFrame::allocate()).collect::<Result<Vec<_>, _>>().map_err(|_| StartError::OutOfMemory)?;
        let memory = DeviceFrames::new(frames);
        let [descriptors, driver_area, device_area, request_area] = [0, 1, 2, 3].map(|index| memory.physical(index).unwrap_or(0));
        let mut set_up = None;
        let negotiated = initialize(&mut transport, wanted_block_features(), |transport, _| {
            let size = transport.max_queue_size(0).map_err(|_| ())?.min(QUEUE_SIZE_LIMIT);
            let layout = RingLayout::modern(size, descriptors, driver_area, device_area).map_err(|_| ())?;
            let notifier = transport.setup_queue(0, &layout).map_err(|_| ())?;
            set_up = Some((layout, notifier));
            Ok::<(), ()>(())
        })
        .map_err(|_| StartError::Refused)?;
        let (layout, notifier) = set_up.ok_or(StartError::Refused)?;
        let event_index = if negotiated.contains(Features::RING_EVENT_IDX) { EventIndex::Negotiated } else { EventIndex::NotNegotiated };
        let queue = SplitQueue::new(&memory, layout, event_index);
        let block_config = BlockConfig::read(&transport, negotiated).map_err(|_| StartError::Refused)?;
        let requests = BlockRequests::new(request_area, &queue, block_config).map_err(|_| StartError::Refused)?;
        let tickets = (0..layout.size()).map(|_| None).collect();
        Ok(Self {
            name,
            function,
            capacity_sectors: block_config.capacity_sectors,
            read_only: block_config.is_read_only(),
            flushable: block_config.flush == virtio::block::Flush::Negotiated,
            state: KernelTicketLock::new(DEVICE_LEVEL, DeviceState { transport, notifier, queue, requests, memory, tickets, broken: false }),
            completions: Completions::new(usize::from(layout.size())),
        })
    }

    /// The disk's size in sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    /// Whether the device refuses writes.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the device has a write cache that [`VirtioBlock::flush`] empties.
    pub fn has_write_cache(&self) -> bool {
        self.flushable
    }

    /// Reads `buffer.len()` bytes (whole sectors) from sector `sector` on.
    pub fn read(&self, sector: u64, buffer: &mut [u8]) -> Result<(), BlockIoError> {
        self.check(sector, buffer.len())?;
        let mut done = 0;
        while done < buffer.len() {
            let chunk = (buffer.len() - done).min(FRAMES_PER_REQUEST * FRAME_BYTES);
            let frames = bounce_frames(chunk)?;
            self.transfer(Direction::Read, sector + (done / SECTOR_BYTES) as u64, &frames, chunk)?;
            for (index, frame) in frames.iter().enumerate() {
                let start = done + index * FRAME_BYTES;
                let end = (start + FRAME_BYTES).min(done + chunk);
                frame.read_bytes(0, &mut buffer[start..end]);
            }
            done += chunk;
        }
        Ok(())
    }

    /// Writes `data` (whole sectors) from sector `sector` on. Durable only
    /// after [`VirtioBlock::flush`] when the disk has a write cache.
    pub fn write(&self, sector: u64, data: &[u8]) -> Result<(), BlockIoError> {
        if self.read_only {
            return Err(BlockIoError::ReadOnly);
        }
        self.check(sector, data.len())?;
        let mut done = 0;
        while done < data.len() {
            let chunk = (data.len() - done).min(FRAMES_PER_REQUEST * FRAME_BYTES);
            let frames = frames_holding(&data[done..done + chunk])?;
            self.transfer(Direction::Write, sector + (done / SECTOR_BYTES) as u64, &frames, chunk)?;
            done += chunk;
        }
        Ok(())
    }

    /// Writes each `(sector, data)` piece (whole sectors), with up to
    /// [`WRITES_IN_FLIGHT`] requests at the device at once instead of one
    /// after another (a cache writing back scattered blocks). Every piece
    /// is tried; the first failure is reported after all have ended.
    pub fn write_many(&self, pieces: &[(u64, &[u8])]) -> Result<(), BlockIoError> {
        if self.read_only {
            return Err(BlockIoError::ReadOnly);
        }
        let mut outcome = Ok(());
        for group in pieces.chunks(WRITES_IN_FLIGHT) {
            let mut pending = Vec::new();
            for &(sector, data) in group {
                if data.len() > FRAMES_PER_REQUEST * FRAME_BYTES {
                    outcome = outcome.and(self.write(sector, data));
                    continue;
                }
                let submitted = self.check(sector, data.len()).and_then(|()| {
                    let frames = frames_holding(data)?;
                    let ticket = self.submit(Direction::Write, sector, &frames, data.len())?;
                    Ok((ticket, frames))
                });
                match submitted {
                    Ok(request) => pending.push(request),
                    Err(error) => outcome = outcome.and(Err(error)),
                }
            }
            // The bounce frames live until their request has ended.
            for (ticket, _frames) in pending {
                outcome = outcome.and(self.finish(ticket));
            }
        }
        outcome
    }

    /// Makes every completed write durable (a no-op without a write cache).
    pub fn flush(&self) -> Result<(), BlockIoError> {
        if !self.flushable {
            return Ok(());
        }
        self.submit_and_wait(|state| {
            let state = &mut *state;
            state.requests.flush(&mut state.queue, &state.memory)
        })
    }

    fn check(&self, sector: u64, bytes: usize) -> Result<(), BlockIoError> {
        let sectors = (bytes / SECTOR_BYTES) as u64;
        let end = sector.checked_add(sectors).ok_or(BlockIoError::OutOfRange)?;
        if bytes % SECTOR_BYTES != 0 || end > self.capacity_sectors {
            return Err(BlockIoError::OutOfRange);
        }
        Ok(())
    }

    fn transfer(&self, direction: Direction, sector: u64, frames: &[DmaFrame], bytes: usize) -> Result<(), BlockIoError> {
        let ticket = self.submit(direction, sector, frames, bytes)?;
        self.finish(ticket)
    }

    /// Puts a read or write of `frames` (`bytes` long) at `sector` on the
    /// queue; [`finish`](Self::finish) waits for it.
    fn submit(&self, direction: Direction, sector: u64, frames: &[DmaFrame], bytes: usize) -> Result<Ticket, BlockIoError> {
        let buffers: Vec<DataBuffer> = frames
            .iter()
            .enumerate()
            .map(|(index, frame)| DataBuffer { physical: frame.physical(), length: (bytes - index * FRAME_BYTES).min(FRAME_BYTES) as u32 })
            .collect();
        self.submit_request(|state| {
            let state = &mut *state;
            match direction {
                Direction::Read => state.requests.read(&mut state.queue, &state.memory, sector, &buffers),
                Direction::Write => state.requests.write(&mut state.queue, &state.memory, sector, &buffers),
            }
        })
    }

    /// Submits with `submit` (retrying while every slot or descriptor is
    /// taken), then waits for its completion.
    fn submit_and_wait(&self, submit: impl FnMut(&mut DeviceState) -> Result<virtio::queue::Token, BlockError>) -> Outcome {
        let ticket = self.submit_request(submit)?;
        self.finish(ticket)
    }

    /// Submits with `submit`, retrying while every slot or descriptor is
    /// taken (requests of this CPU's or others' still in flight).
    fn submit_request(&self, mut submit: impl FnMut(&mut DeviceState) -> Result<virtio::queue::Token, BlockError>) -> Result<Ticket, BlockIoError> {
        let ticket = loop {
            let Ok(ticket) = self.completions.begin() else {
                sched::yield_now();
                continue;
            };
            let mut state = self.state.lock();
            if state.broken {
                drop(state);
                self.completions.cancel(ticket);
                return Err(BlockIoError::Broken);
            }
            match submit(&mut state) {
                Ok(token) => {
                    // Before the device can see the chain's notification
                    // (and the handler, which needs this lock, complete it).
                    if let Some(slot) = state.tickets.get_mut(usize::from(token.head())) {
                        *slot = Some(ticket.number());
                    }
                    let state = &mut *state;
                    if state.queue.should_notify(&state.memory) {
                        state.transport.notify(state.notifier);
                    }
                    break ticket;
                }
                Err(BlockError::Busy | BlockError::Queue(virtio::queue::AddError::QueueFull)) => {
                    drop(state);
                    self.completions.cancel(ticket);
                    sched::yield_now();
                }
                Err(error) => {
                    drop(state);
                    self.completions.cancel(ticket);
                    return Err(failure_of(error));
                }
            }
        };
        Ok(ticket)
    }

    /// Waits for the request of `ticket` to end; its outcome.
    fn finish(&self, ticket: Ticket) -> Outcome {
        if self.function.interrupt_line != 0 {
            return self.completions.wait(ticket);
        }
        loop {
            if let Some(outcome) = self.completions.try_take(&ticket) {
                return outcome;
            }
            self.complete_ready();
            sched::yield_now();
        }
    }

    /// Takes the device's completions: records each outcome and unparks its
    /// requester (the interrupt handler; also a poll).
    pub fn complete_ready(&self) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let _ = state.transport.take_interrupt_status();
        while let Some(result) = state.requests.complete_next(&mut state.queue, &state.memory) {
            match result {
                Ok(completion) => {
                    let outcome = completion.outcome.map_err(|failure| match failure {
                        RequestFailure::IoError | RequestFailure::Unsupported | RequestFailure::UnknownStatus { .. } | RequestFailure::StatusNotWritten => BlockIoError::Device,
                    });
                    if let Some(number) = state.tickets.get_mut(usize::from(completion.token.head())).and_then(Option::take) {
                        self.completions.complete(number, outcome);
                    }
                }
                Err(BlockError::Device(_)) => {
                    state.broken = true;
                    for number in state.tickets.iter_mut().filter_map(Option::take) {
                        self.completions.complete(number, Err(BlockIoError::Broken));
                    }
                    break;
                }
                Err(_) => {}
            }
        }
    }
}

fn failure_of(error: BlockError) -> BlockIoError {
    match error {
        BlockError::ReadOnly => BlockIoError::ReadOnly,
        BlockError::PastCapacity | BlockError::NotWholeSectors | BlockError::NoData => BlockIoError::OutOfRange,
        BlockError::Device(_) => BlockIoError::Broken,
        _ => BlockIoError::Device,
    }
}

/// Bounce frames holding `data` (at most one request's worth), for a write.
fn frames_holding(data: &[u8]) -> Result<Vec<DmaFrame>, BlockIoError> {
    let frames = bounce_frames(data.len())?;
    for (frame, bytes) in frames.iter().zip(data.chunks(FRAME_BYTES)) {
        frame.write_bytes(0, bytes);
    }
    Ok(frames)
}

/// Frames for `bytes` of data (not zeroed: the driver fills a write's, the
/// device a read's, and only the bytes a request names are ever copied out).
fn bounce_frames(bytes: usize) -> Result<Vec<DmaFrame>, BlockIoError> {
    let count = bytes.div_ceil(FRAME_BYTES);
    let mut frames = Vec::new();
    frames.try_reserve_exact(count).map_err(|_| BlockIoError::OutOfMemory)?;
    for _ in 0..count {
        frames.push(DmaFrame::allocate_for_transfer().map_err(|_| BlockIoError::OutOfMemory)?);
    }
    Ok(frames)
}
