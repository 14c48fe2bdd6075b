//! The driver's side of a split virtqueue: free descriptors, publishing
//! chains in the available ring, deciding whether to notify, and taking
//! used chains back (virtio 1.2 §2.7.13 and §2.7.14).
//!
//! The free list and each chain's shape live in driver memory (`links`,
//! `in_flight`), never read back from the descriptor table, so a device
//! scribbling on descriptors cannot corrupt them. Indices into the rings
//! are free-running 16-bit counters; a slot is the counter modulo the size
//! (a power of two, so the wrap at 65536 keeps slots in step).
//!
//! Must never: trust a used element before checking its id names a chain
//! in flight and its length fits that chain; publish an available index
//! before the entry it covers is visible ([`Barrier::StoresBeforeStores`]);
//! read the device's notification wish before the index it concerns is
//! visible ([`Barrier::StoresBeforeLoads`]); read a used element before the
//! used index that covers it ([`Barrier::LoadsBeforeLoads`]).

use super::{AddError, Barrier, Buffer, DeviceError, Direction, DmaMemory, RingLayout, Token, Used};
use alloc::vec;
use alloc::vec::Vec;

const DESCRIPTOR_NEXT: u16 = 1;
const DESCRIPTOR_WRITE: u16 = 2;
const USED_NO_NOTIFY: u16 = 1;
const AVAILABLE_NO_INTERRUPT: u16 = 1;
/// Zeroing the rings goes this many bytes at a time.
const ZERO_CHUNK: usize = 64;

/// Whether `VIRTIO_F_EVENT_IDX` was negotiated (§2.7.10): notifications
/// and interrupts are then asked for by index instead of by flag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EventIndex {
    /// `used_event` / `avail_event` are used.
    Negotiated,
    /// `VIRTQ_USED_F_NO_NOTIFY` / `VIRTQ_AVAIL_F_NO_INTERRUPT` are used.
    NotNegotiated,
}

/// Whether the driver wants interrupts for used chains.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Interrupts {
    /// Interrupt when chains are used.
    Wanted,
    /// Please do not (a hint: the device may still interrupt).
    Suppressed,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Health {
    Working,
    /// The device broke the protocol; only a reset helps.
    Broken,
}

/// A chain in flight: how many descriptors, how many bytes the device may
/// write.
#[derive(Clone, Copy, Debug)]
struct Chain {
    descriptors: u16,
    writable: u32,
}

/// A split virtqueue's driver state. Callers serialize access (one lock
/// around the queue and its memory).
#[derive(Debug)]
pub struct SplitQueue {
    layout: RingLayout,
    event_index: EventIndex,
    interrupts: Interrupts,
    health: Health,
    /// Each descriptor's successor: in a chain, its next descriptor; on the
    /// free list, the next free one.
    links: Vec<u16>,
    free_head: u16,
    free_count: u16,
    /// Indexed by head descriptor.
    in_flight: Vec<Option<Chain>>,
    in_flight_count: u16,
    /// The available index the driver has published.
    next_available: u16,
    /// The available index at the last [`SplitQueue::should_notify`].
    notified_available: u16,
    /// The used index up to which chains have been taken back.
    next_used: u16,
}

impl SplitQueue {
    /// A queue over `layout`, whose areas it zeroes.
    pub fn new(memory: &impl DmaMemory, layout: RingLayout, event_index: EventIndex) -> Self {
        for (start, length) in layout.areas() {
            zero(memory, start, length);
        }
        let size = layout.size();
        Self {
            layout,
            event_index,
            interrupts: Interrupts::Wanted,
            health: Health::Working,
            links: (0..size).map(|index| index.wrapping_add(1)).collect(),
            free_head: 0,
            free_count: size,
            in_flight: vec![None; usize::from(size)],
            in_flight_count: 0,
            next_available: 0,
            notified_available: 0,
            next_used: 0,
        }
    }

    /// Where the queue lives (for the transport's queue setup).
    pub fn layout(&self) -> &RingLayout {
        &self.layout
    }

    /// The number of descriptors.
    pub fn size(&self) -> u16 {
        self.layout.size()
    }

    /// Descriptors free now.
    pub fn free_descriptors(&self) -> u16 {
        self.free_count
    }

    /// Chains in flight now.
    pub fn in_flight(&self) -> u16 {
        self.in_flight_count
    }

    /// Whether the device broke the protocol (see [`DeviceError`]).
    pub fn is_broken(&self) -> bool {
        self.health == Health::Broken
    }

    /// The chains in flight (to fail their requests after a reset).
    pub fn in_flight_tokens(&self) -> impl Iterator<Item = Token> + '_ {
        let heads = 0..self.size();
        heads
            .filter(|head| self.in_flight[usize::from(*head)].is_some())
            .map(Token::new)
    }

    /// Writes `chain` into free descriptors and publishes it in the
    /// available ring. The device learns of it at the next notification
    /// (see [`SplitQueue::should_notify`]).
    pub fn add(&mut self, memory: &impl DmaMemory, chain: &[Buffer]) -> Result<Token, AddError> {
        let writable = self.check_chain(chain)?;
        let head = self.free_head;
        let mut current = head;
        for (position, buffer) in chain.iter().enumerate() {
            let next = self.links[usize::from(current)];
            match position + 1 == chain.len() {
                true => self.write_descriptor(memory, current, buffer, None),
                false => {
                    self.write_descriptor(memory, current, buffer, Some(next));
                    current = next;
                }
            }
        }
        let count = chain.len() as u16; // At most the size: check_chain.
        self.free_head = self.links[usize::from(current)];
        self.free_count -= count;
        self.in_flight[usize::from(head)] = Some(Chain {
            descriptors: count,
            writable,
        });
        self.in_flight_count += 1;
        self.publish(memory, head);
        Ok(Token::new(head))
    }

    /// Whether the device must be notified of the chains added since the
    /// last call (§2.7.13.4): call once after a batch of adds, then write
    /// the queue's doorbell if it says so.
    pub fn should_notify(&mut self, memory: &impl DmaMemory) -> bool {
        memory.barrier(Barrier::StoresBeforeLoads);
        let old = self.notified_available;
        let new = self.next_available;
        self.notified_available = new;
        if old == new {
            return false;
        }
        match self.event_index {
            EventIndex::Negotiated => {
                let event = memory.read_u16(self.layout.available_event());
                new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
            }
            EventIndex::NotNegotiated => memory.read_u16(self.layout.used_flags()) & USED_NO_NOTIFY == 0,
        }
    }

    /// Takes the next chain the device has used, checked and freed; `None`
    /// when there is none (or the queue is broken). A [`DeviceError`]
    /// breaks the queue.
    pub fn take_used(&mut self, memory: &impl DmaMemory) -> Option<Result<Used, DeviceError>> {
        if self.health == Health::Broken {
            return None;
        }
        let device_index = memory.read_u16(self.layout.used_index());
        if device_index == self.next_used {
            return None;
        }
        let taken = self.take_next(memory, device_index);
        if taken.is_err() {
            self.health = Health::Broken;
        }
        Some(taken)
    }

    /// Asks the device for interrupts or to hold them back. After asking
    /// for them, call [`SplitQueue::take_used`] again: a chain used just
    /// before may have raised no interrupt.
    pub fn set_interrupts(&mut self, memory: &impl DmaMemory, interrupts: Interrupts) {
        self.interrupts = interrupts;
        match (self.event_index, interrupts) {
            (EventIndex::NotNegotiated, Interrupts::Wanted) => memory.write_u16(self.layout.available_flags(), 0),
            (EventIndex::NotNegotiated, Interrupts::Suppressed) => {
                memory.write_u16(self.layout.available_flags(), AVAILABLE_NO_INTERRUPT)
            }
            (EventIndex::Negotiated, Interrupts::Wanted) => self.ask_interrupt_at_next_used(memory),
            // used_event stays where it was: at most one more interrupt.
            (EventIndex::Negotiated, Interrupts::Suppressed) => {}
        }
        memory.barrier(Barrier::StoresBeforeLoads);
    }

    fn check_chain(&self, chain: &[Buffer]) -> Result<u32, AddError> {
        if self.health == Health::Broken {
            return Err(AddError::Broken);
        }
        if chain.is_empty() {
            return Err(AddError::EmptyChain);
        }
        if chain.len() > usize::from(self.size()) {
            return Err(AddError::ChainLongerThanQueue);
        }
        if chain.len() > usize::from(self.free_count) {
            return Err(AddError::QueueFull);
        }
        writable_total(chain)
    }

    fn write_descriptor(&self, memory: &impl DmaMemory, index: u16, buffer: &Buffer, next: Option<u16>) {
        let address = self.layout.descriptor(index);
        let mut flags = match buffer.direction {
            Direction::DeviceReads => 0,
            Direction::DeviceWrites => DESCRIPTOR_WRITE,
        };
        if next.is_some() {
            flags |= DESCRIPTOR_NEXT;
        }
        memory.write_u64(address, buffer.physical);
        memory.write_u32(address + 8, buffer.length);
        memory.write_u16(address + 12, flags);
        memory.write_u16(address + 14, next.unwrap_or(0));
    }

    fn publish(&mut self, memory: &impl DmaMemory, head: u16) {
        let slot = self.slot(self.next_available);
        memory.write_u16(self.layout.available_entry(slot), head);
        // The device may read the entry (and the descriptors) as soon as it
        // sees the new index.
        memory.barrier(Barrier::StoresBeforeStores);
        self.next_available = self.next_available.wrapping_add(1);
        memory.write_u16(self.layout.available_index(), self.next_available);
    }

    fn take_next(&mut self, memory: &impl DmaMemory, device_index: u16) -> Result<Used, DeviceError> {
        if device_index.wrapping_sub(self.next_used) > self.in_flight_count {
            return Err(DeviceError::UsedIndexTooFar {
                device_index,
                expected_from: self.next_used,
            });
        }
        // The element must not be read before the index that covers it.
        memory.barrier(Barrier::LoadsBeforeLoads);
        let element = self.layout.used_element(self.slot(self.next_used));
        let id = memory.read_u32(element);
        let written = memory.read_u32(element + 4);
        self.next_used = self.next_used.wrapping_add(1);
        if self.event_index == EventIndex::Negotiated && self.interrupts == Interrupts::Wanted {
            self.ask_interrupt_at_next_used(memory);
        }
        self.retire(id, written)
    }

    /// Sets `used_event` so the device interrupts once it uses one more
    /// chain; the barrier makes the device see it before the driver next
    /// reads the used index (else both could wait for each other).
    fn ask_interrupt_at_next_used(&self, memory: &impl DmaMemory) {
        memory.write_u16(self.layout.used_event(), self.next_used);
        memory.barrier(Barrier::StoresBeforeLoads);
    }

    fn retire(&mut self, id: u32, written: u32) -> Result<Used, DeviceError> {
        let head = match u16::try_from(id) {
            Ok(head) if head < self.size() => head,
            _ => return Err(DeviceError::IdOutOfRange { id }),
        };
        let chain = self.in_flight[usize::from(head)]
            .take()
            .ok_or(DeviceError::IdNotInFlight { id })?;
        self.in_flight_count -= 1;
        self.free_chain(head, chain.descriptors);
        let token = Token::new(head);
        if written > chain.writable {
            return Err(DeviceError::LengthTooLarge {
                token,
                written,
                writable: chain.writable,
            });
        }
        Ok(Used {
            token,
            written_length: written,
        })
    }

    /// Puts the chain at `head` back on the free list, following the
    /// driver's own links.
    fn free_chain(&mut self, head: u16, descriptors: u16) {
        let mut last = head;
        for _ in 1..descriptors {
            last = self.links[usize::from(last)];
        }
        self.links[usize::from(last)] = self.free_head;
        self.free_head = head;
        self.free_count += descriptors;
    }

    fn slot(&self, index: u16) -> u16 {
        index & (self.size() - 1)
    }
}

/// The bytes the device may write into the chain; device-readable buffers
/// must all come first (§2.7.4.2).
fn writable_total(chain: &[Buffer]) -> Result<u32, AddError> {
    let mut writable: Option<u32> = None;
    for buffer in chain {
        writable = match (buffer.direction, writable) {
            (Direction::DeviceReads, None) => None,
            (Direction::DeviceReads, Some(_)) => return Err(AddError::ReadableAfterWritable),
            (Direction::DeviceWrites, total) => {
                let total = total.unwrap_or(0).checked_add(buffer.length);
                Some(total.ok_or(AddError::WritableTooLarge)?)
            }
        };
    }
    Ok(writable.unwrap_or(0))
}

fn zero(memory: &impl DmaMemory, start: u64, length: u64) {
    let zeros = [0u8; ZERO_CHUNK];
    let mut done = 0;
    while done < length {
        let chunk = (length - done).min(ZERO_CHUNK as u64);
        memory.write_bytes(start + done, &zeros[..chunk as usize]);
        done += chunk;
    }
}
