//! A virtio network card: bring-up over the modern PCI interface, a
//! receive queue kept full of lent slots and a transmit queue of slots,
//! 2 KiB each (one Ethernet frame behind its header).
//!
//! The interrupt handler only acknowledges the device and calls the waker
//! the network registered ([`set_waker`]); the network's thread then takes
//! the received frames ([`VirtioNet::take_received`], copies: the slots
//! are lent again at once) and sends its own ([`VirtioNet::transmit`]).
//! Frames that find every transmit slot in flight wait in a bounded queue
//! (`virtio::net::TransmitQueue`, as Linux's transmit queue) and go out as
//! slots come back — the device interrupts when it has sent — so a burst
//! of replies is not lost. A
//! device that breaks the queue protocol stops the card: every later call
//! does nothing.
//!
//! Must never block, or give the device an address outside its own frames.

use alloc::vec::Vec;

use kernel_objects::device_memory::DmaFrame;
use machine::pci::PciFunction;
use machine::set_once::SetOnce;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use virtio::net::{wanted_net_features, NetConfig, PacketSlots, Received, TransmitQueue, Transmitted, SLOT_BYTES};
use virtio::queue::{Direction, EventIndex, RingLayout, SplitQueue};
use virtio::transport::{initialize, Features, ModernTransport, QueueNotifier, Transport};

use crate::bring_up::{modern_transport, StartError};
use crate::dma::DeviceFrames;
use crate::pci_access::StructureRegisters;

/// Below the network's lock (8): taken inside it never, alone always.
const CARD_LEVEL: Level = Level::new(6);
/// Ring size asked for (a descriptor table of 256 fills one frame).
const QUEUE_SIZE_LIMIT: u16 = 256;
/// Slots lent for receiving and kept for sending.
const RECEIVE_SLOTS: usize = 128;
const TRANSMIT_SLOTS: usize = 64;
const RECEIVE_QUEUE: u16 = 0;
const TRANSMIT_QUEUE: u16 = 1;
const FRAME_BYTES: usize = 4096;
/// Frames that wait for a transmit slot before the card drops more.
const WAITING_FRAMES: usize = 512;

static WAKER: SetOnce<fn()> = SetOnce::new();

/// Registers what the interrupt handler calls when frames arrive (once).
pub fn set_waker(waker: fn()) {
    let _ = WAKER.set(alloc::boxed::Box::leak(alloc::boxed::Box::new(waker)));
}

struct Queue<S> {
    queue: SplitQueue,
    notifier: QueueNotifier,
    slots: S,
}

struct CardState {
    transport: ModernTransport<StructureRegisters>,
    receive: Queue<PacketSlots>,
    transmit: Queue<TransmitQueue>,
    memory: DeviceFrames,
    broken: bool,
}

/// A started virtio network card.
pub struct VirtioNet {
    /// Where it sits on the PCI bus.
    pub function: &'static PciFunction,
    /// Its hardware address.
    pub mac: [u8; 6],
    /// The largest IP packet it carries.
    pub mtu: u16,
    state: KernelTicketLock<CardState>,
}

impl VirtioNet {
    /// Brings up the card at `function` and lends the receive slots.
    pub(crate) fn start(function: &'static PciFunction) -> Result<Self, StartError> {
        let mut transport = modern_transport(function)?;
        // Three frames per queue's rings, then the slots, two to a frame.
        let slot_frames = (RECEIVE_SLOTS + TRANSMIT_SLOTS) * SLOT_BYTES as usize / FRAME_BYTES;
        let frames = (0..6 + slot_frames).map(|_| DmaFrame::allocate()).collect::<Result<Vec<_>, _>>().map_err(|_| StartError::OutOfMemory)?;
        let memory = DeviceFrames::new(frames);
        let frame = |index: usize| memory.physical(index).unwrap_or(0);
        let slot_address = |slot: usize| frame(6 + slot * SLOT_BYTES as usize / FRAME_BYTES) + (slot * SLOT_BYTES as usize % FRAME_BYTES) as u64;
        let mut layouts = Vec::new();
        let negotiated = initialize(&mut transport, wanted_net_features(), |transport, _| {
            for queue in [RECEIVE_QUEUE, TRANSMIT_QUEUE] {
                let size = transport.max_queue_size(queue).map_err(|_| ())?.min(QUEUE_SIZE_LIMIT);
                let base = 3 * usize::from(queue);
                let layout = RingLayout::modern(size, frame(base), frame(base + 1), frame(base + 2)).map_err(|_| ())?;
                let notifier = transport.setup_queue(queue, &layout).map_err(|_| ())?;
                layouts.push((layout, notifier));
            }
            Ok::<(), ()>(())
        })
        .map_err(|_| StartError::Refused)?;
        let config = NetConfig::read(&transport, negotiated).map_err(|_| StartError::Refused)?;
        let event_index = if negotiated.contains(Features::RING_EVENT_IDX) { EventIndex::Negotiated } else { EventIndex::NotNegotiated };
        let [(receive_layout, receive_notifier), (transmit_layout, transmit_notifier)] = <[_; 2]>::try_from(layouts).map_err(|_| StartError::Refused)?;
        let receive_queue = SplitQueue::new(&memory, receive_layout, event_index);
        let transmit_queue = SplitQueue::new(&memory, transmit_layout, event_index);
        let receive_slots = PacketSlots::new((0..RECEIVE_SLOTS).map(slot_address).collect(), &receive_queue, Direction::DeviceWrites);
        let transmit_slots = PacketSlots::new((RECEIVE_SLOTS..RECEIVE_SLOTS + TRANSMIT_SLOTS).map(slot_address).collect(), &transmit_queue, Direction::DeviceReads);
        let mut state = CardState {
            transport,
            receive: Queue { queue: receive_queue, notifier: receive_notifier, slots: receive_slots },
            transmit: Queue { queue: transmit_queue, notifier: transmit_notifier, slots: TransmitQueue::new(transmit_slots, WAITING_FRAMES) },
            memory,
            broken: false,
        };
        state.lend_receive_slots();
        Ok(Self { function, mac: config.mac, mtu: config.mtu, state: KernelTicketLock::new(CARD_LEVEL, state) })
    }

    /// Moves every frame the card received into `into`, lending the slots
    /// again; frees the transmit slots it has sent from.
    pub fn take_received(&self, into: &mut Vec<Vec<u8>>) {
        let mut state = self.state.lock();
        if state.broken {
            return;
        }
        let state = &mut *state;
        loop {
            match state.receive.slots.take_used(&mut state.receive.queue, &state.memory) {
                None => break,
                Some(Ok(Received::Frame(frame))) => into.push(frame),
                Some(Ok(_)) => {}
                Some(Err(_)) => {
                    state.broken = true;
                    return;
                }
            }
        }
        state.reclaim_transmit_slots();
        state.lend_receive_slots();
    }

    /// Queues `frame` to be sent, after those waiting for a slot; false
    /// when it was dropped (too large, too many waiting, the card broken)
    /// — a network may drop.
    pub fn transmit(&self, frame: &[u8]) -> bool {
        let mut state = self.state.lock();
        if state.broken {
            return false;
        }
        let state = &mut *state;
        state.reclaim_transmit_slots();
        let kept = match state.transmit.slots.send(&mut state.transmit.queue, &state.memory, frame) {
            Ok(Transmitted::Sent | Transmitted::Waiting) => true,
            Ok(Transmitted::Dropped) => false,
            Err(_) => {
                state.broken = true;
                false
            }
        };
        state.notify_transmit();
        kept
    }

    /// Waits, spinning, until the device has sent every frame given to
    /// it, or `give_up()`; whether all went. For power-off: a reply sent
    /// just before process 1 ends would otherwise still be in the ring when
    /// the machine stops (a UDP "bye" was lost so once).
    pub fn flush_transmit(&self, give_up: impl Fn() -> bool) -> bool {
        loop {
            {
                let mut state = self.state.lock();
                if state.broken {
                    return false;
                }
                state.reclaim_transmit_slots();
                if state.transmit.slots.unsent() == 0 {
                    return true;
                }
            }
            if give_up() {
                return false;
            }
            core::hint::spin_loop();
        }
    }

    /// The interrupt: acknowledged, and the network told.
    pub fn serve_interrupt(&self) {
        let _ = self.state.lock().transport.take_interrupt_status();
        if let Some(waker) = WAKER.get() {
            waker();
        }
    }
}

impl CardState {
    fn lend_receive_slots(&mut self) {
        match self.receive.slots.lend_free(&mut self.receive.queue, &self.memory) {
            Ok(_) => {
                if self.receive.queue.should_notify(&self.memory) {
                    self.transport.notify(self.receive.notifier);
                }
            }
            Err(_) => self.broken = true,
        }
    }

    fn notify_transmit(&mut self) {
        if self.transmit.queue.should_notify(&self.memory) {
            self.transport.notify(self.transmit.notifier);
        }
    }

    /// Frees the slots the device has sent from and fills them with the
    /// frames waiting.
    fn reclaim_transmit_slots(&mut self) {
        if self.transmit.slots.reclaim(&mut self.transmit.queue, &self.memory).is_err() {
            self.broken = true;
            return;
        }
        self.notify_transmit();
    }
}
