//! The device a smoltcp interface talks to: frames (or, on the loopback
//! lane, IP packets) queued in memory. The loopback lane's transmissions
//! come back as its receptions; a NIC's lane is filled by the driver
//! ([`FrameQueue::deliver`]) and emptied by it ([`FrameQueue::take_sent`]),
//! outside the network's lock.
//!
//! Each packet's hop limit and traffic class pass smoltcp in its metadata
//! ([`crate::ip_marks`]): a reception says what its header held, a
//! transmission writes what its socket asked for.
//!
//! Must never grow without bound: a full queue drops (a network may).

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use smoltcp::phy::{self, ChecksumCapabilities, DeviceCapabilities, Medium, PacketMeta};
use smoltcp::time::Instant;

use crate::ip_marks::{HeaderMarks, IpMarks, PendingMarks};

/// Frames a queue holds in each direction before it drops.
const QUEUE_FRAMES: usize = 512;

/// Whether what is sent comes back (the loopback lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wiring {
    Loopback,
    Nic,
}

/// A smoltcp device over two in-memory queues.
pub struct FrameQueue {
    medium: Medium,
    wiring: Wiring,
    mtu: usize,
    checksums: ChecksumCapabilities,
    received: VecDeque<Vec<u8>>,
    sent: VecDeque<Vec<u8>>,
    dropped: u64,
    /// IPv6 datagrams' marks (smoltcp does not pass them on).
    pub(crate) pending_marks: PendingMarks,
    /// One frame's room, made with the queue: where smoltcp writes a frame
    /// when the heap has no room for it, which is then dropped (a loss TCP
    /// recovers from, as on a wire) instead of stopping the kernel.
    spare: Vec<u8>,
}

impl FrameQueue {
    /// The loopback lane's device: IP packets up to 64 KiB, no checksums
    /// (nothing on the way can damage them — Linux's loopback does the same).
    pub fn loopback() -> FrameQueue {
        FrameQueue::new(Medium::Ip, Wiring::Loopback, 65535, ChecksumCapabilities::ignored())
    }

    /// A NIC's device: Ethernet frames of `mtu` bytes of payload, every
    /// checksum computed and checked here (no offload yet).
    pub fn ethernet(mtu: usize) -> FrameQueue {
        FrameQueue::new(Medium::Ethernet, Wiring::Nic, mtu + 14, ChecksumCapabilities::default())
    }

    fn new(medium: Medium, wiring: Wiring, mtu: usize, checksums: ChecksumCapabilities) -> FrameQueue {
        FrameQueue {
            medium,
            wiring,
            mtu,
            checksums,
            received: VecDeque::new(),
            sent: VecDeque::new(),
            dropped: 0,
            pending_marks: PendingMarks::default(),
            spare: vec![0; mtu],
        }
    }

    /// A frame from the wire (dropped, and counted, when the queue is full
    /// or the frame is larger than the link carries).
    pub fn deliver(&mut self, frame: Vec<u8>) {
        if self.received.len() >= QUEUE_FRAMES || frame.len() > self.mtu {
            self.dropped += 1;
            return;
        }
        self.received.push_back(frame);
    }

    /// The next frame to put on the wire.
    pub fn take_sent(&mut self) -> Option<Vec<u8>> {
        self.sent.pop_front()
    }

    /// Drops the next frame to be received unread; whether there was one.
    pub fn discard_front(&mut self) -> bool {
        self.received.pop_front().is_some()
    }

    /// The next frame to be received, to look at.
    pub fn front(&self) -> Option<&[u8]> {
        self.received.front().map(Vec::as_slice)
    }

    /// The largest packet it carries, without the Ethernet header.
    pub fn ip_mtu(&self) -> usize {
        match self.medium {
            Medium::Ethernet => self.mtu.saturating_sub(14),
            _ => self.mtu,
        }
    }


    /// Where the IP packet starts in a frame (after the Ethernet header).
    fn ip_offset(&self) -> usize {
        match self.medium {
            Medium::Ethernet => 14,
            _ => 0,
        }
    }

    /// The medium (Ethernet frames, or bare IP packets on the loopback).
    pub fn medium(&self) -> Medium {
        self.medium
    }

    /// Whether frames wait to be received.
    pub fn has_received(&self) -> bool {
        !self.received.is_empty()
    }

    /// Frames dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl phy::Device for FrameQueue {
    type RxToken<'a> = Reception;
    type TxToken<'a> = Transmission<'a>;

    fn capabilities(&self) -> DeviceCapabilities {
        let mut capabilities = DeviceCapabilities::default();
        capabilities.medium = self.medium;
        capabilities.max_transmission_unit = self.mtu;
        capabilities.checksum = self.checksums.clone();
        capabilities
    }

    fn receive(&mut self, _timestamp: Instant) -> Option<(Reception, Transmission<'_>)> {
        let ip_offset = self.ip_offset();
        let frame = self.received.pop_front()?;
        Some((Reception { frame, ip_offset }, Transmission { queue: self, marks: IpMarks::default() }))
    }

    fn transmit(&mut self, _timestamp: Instant) -> Option<Transmission<'_>> {
        Some(Transmission { queue: self, marks: IpMarks::default() })
    }
}

/// A received frame, handed to smoltcp.
pub struct Reception {
    frame: Vec<u8>,
    ip_offset: usize,
}

impl phy::RxToken for Reception {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.frame)
    }

    /// What the packet's header holds, for a socket that asks.
    fn meta(&self) -> PacketMeta {
        let packet = self.frame.get(self.ip_offset..).unwrap_or_default();
        HeaderMarks::read(packet).map(HeaderMarks::to_meta).unwrap_or_default()
    }
}

/// Room for one frame smoltcp sends.
pub struct Transmission<'a> {
    queue: &'a mut FrameQueue,
    /// What the sending socket asked of the IP header.
    marks: IpMarks,
}

impl phy::TxToken for Transmission<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, length: usize, f: F) -> R {
        let queue = self.queue;
        let mut frame = Vec::new();
        if frame.try_reserve_exact(length).is_err() {
            // No heap for the frame (the fuzzer found this a kernel panic):
            // written into the spare and dropped. smoltcp never asks for
            // more than the MTU, which the spare holds.
            queue.dropped += 1;
            if queue.spare.len() < length {
                queue.spare.resize(length, 0);
            }
            return f(&mut queue.spare[..length]);
        }
        frame.resize(length, 0);
        let result = f(&mut frame);
        let (ip_offset, checksum) = (queue.ip_offset(), queue.checksums.ipv4.tx());
        if let Some(packet) = frame.get_mut(ip_offset..) {
            let waiting = queue.pending_marks.take_for(packet);
            let marks = if self.marks == IpMarks::default() { waiting.unwrap_or_default() } else { self.marks };
            marks.write(packet, checksum);
        }
        let full = match queue.wiring {
            Wiring::Loopback => &mut queue.received,
            Wiring::Nic => &mut queue.sent,
        };
        if full.len() >= QUEUE_FRAMES || full.try_reserve(1).is_err() {
            queue.dropped += 1;
        } else {
            full.push_back(frame);
        }
        result
    }

    fn set_meta(&mut self, meta: PacketMeta) {
        self.marks = IpMarks::of_send(meta);
    }
}
