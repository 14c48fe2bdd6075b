//! The two IP header fields a datagram's sender may choose and its
//! receiver may ask to see — the hop limit (IPv4's TTL) and the traffic
//! class (IPv4's TOS byte) — carried past smoltcp in its per-packet
//! metadata id. A send's id names the values the device writes into the
//! header smoltcp made (`IP_TTL`/`IPV6_UNICAST_HOPS`, `IP_TOS`/
//! `IPV6_TCLASS` and their control messages; smoltcp itself sets neither
//! a traffic class nor a per-packet hop limit); a reception's id says
//! what its header held (`IP_RECVTTL`, `IPV6_RECVHOPLIMIT`, …).
//!
//! smoltcp 0.12 hands a send's metadata to the device for IPv4 packets
//! only (its IPv6 branch never calls `set_meta`), so an IPv6 datagram's
//! marks also wait in [`PendingMarks`], by flow, in the order the
//! datagrams were queued — a UDP socket's datagrams leave in that order —
//! and the device takes them by the packet's ports and destination. Only
//! a socket that has asked for marks queues them (every datagram of it
//! from then on, to stay in step); one smoltcp drops unsent (a route that
//! went away) leaves its marks to the next datagram of the flow, a wrong
//! hop limit at worst, never wrong data.
//!
//! Must never change anything in a packet but those two fields and
//! IPv4's header checksum, which covers them (UDP's checksum does not).

use alloc::collections::{BTreeMap, VecDeque};

use smoltcp::phy::PacketMeta;
use smoltcp::wire::{IpProtocol, Ipv4Packet, Ipv6Packet, UdpPacket};

/// A send's id: the hop limit in bits 0–7 is given.
const HOP_LIMIT_GIVEN: u32 = 1 << 31;
/// A send's id: the traffic class in bits 8–15 is given.
const TRAFFIC_CLASS_GIVEN: u32 = 1 << 30;
/// A reception's id: bits 0–15 are what its header held. Distinct from
/// the send bits, so a reply smoltcp makes with a reception's id (none
/// does today) changes nothing.
const READ_FROM_HEADER: u32 = 1 << 29;

/// Hop limit and traffic class, each given or left as smoltcp made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpMarks {
    /// The hop limit (IPv4: TTL).
    pub hop_limit: Option<u8>,
    /// The traffic class (IPv4: the TOS byte, DSCP and ECN).
    pub traffic_class: Option<u8>,
}

/// What a received packet's header held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderMarks {
    /// The hop limit (IPv4: TTL) as it arrived.
    pub hop_limit: u8,
    /// The traffic class (IPv4: the TOS byte).
    pub traffic_class: u8,
}

impl IpMarks {
    /// The metadata a send carries to the device.
    pub fn to_meta(self) -> PacketMeta {
        let mut id = 0;
        if let Some(hop_limit) = self.hop_limit {
            id |= HOP_LIMIT_GIVEN | u32::from(hop_limit);
        }
        if let Some(traffic_class) = self.traffic_class {
            id |= TRAFFIC_CLASS_GIVEN | u32::from(traffic_class) << 8;
        }
        meta(id)
    }

    /// What a send's metadata asks the device to write.
    pub fn of_send(meta: PacketMeta) -> IpMarks {
        let id = meta.id;
        IpMarks {
            hop_limit: (id & HOP_LIMIT_GIVEN != 0).then_some(id as u8),
            traffic_class: (id & TRAFFIC_CLASS_GIVEN != 0).then_some((id >> 8) as u8),
        }
    }

    /// Writes the given fields into the IP packet `packet` (which starts
    /// with its IP header), refilling IPv4's header checksum when
    /// `checksum`. A packet too short to be IP is left alone.
    pub fn write(self, packet: &mut [u8], checksum: bool) {
        if self == IpMarks::default() {
            return;
        }
        match packet.first().map(|byte| byte >> 4) {
            Some(4) => {
                let Ok(mut header) = Ipv4Packet::new_checked(packet) else { return };
                if let Some(hop_limit) = self.hop_limit {
                    header.set_hop_limit(hop_limit);
                }
                if let Some(traffic_class) = self.traffic_class {
                    header.set_dscp(traffic_class >> 2);
                    header.set_ecn(traffic_class & 3);
                }
                if checksum {
                    header.fill_checksum();
                }
            }
            Some(6) => {
                let Ok(mut header) = Ipv6Packet::new_checked(packet) else { return };
                if let Some(hop_limit) = self.hop_limit {
                    header.set_hop_limit(hop_limit);
                }
                if let Some(traffic_class) = self.traffic_class {
                    header.set_traffic_class(traffic_class);
                }
            }
            _ => {}
        }
    }
}

impl HeaderMarks {
    /// What the header of IP packet `packet` holds (`None`: not IP).
    pub fn read(packet: &[u8]) -> Option<HeaderMarks> {
        match packet.first().map(|byte| byte >> 4) {
            Some(4) => {
                let header = Ipv4Packet::new_checked(packet).ok()?;
                Some(HeaderMarks { hop_limit: header.hop_limit(), traffic_class: header.dscp() << 2 | header.ecn() })
            }
            Some(6) => {
                let header = Ipv6Packet::new_checked(packet).ok()?;
                Some(HeaderMarks { hop_limit: header.hop_limit(), traffic_class: header.traffic_class() })
            }
            _ => None,
        }
    }

    /// The metadata a reception carries to its socket.
    pub fn to_meta(self) -> PacketMeta {
        meta(READ_FROM_HEADER | u32::from(self.traffic_class) << 8 | u32::from(self.hop_limit))
    }

    /// What a reception's metadata says its header held (`None`: it was
    /// not read, as for a datagram a test put in a queue by hand).
    pub fn of_reception(meta: PacketMeta) -> Option<HeaderMarks> {
        let id = meta.id;
        (id & READ_FROM_HEADER != 0).then_some(HeaderMarks { hop_limit: id as u8, traffic_class: (id >> 8) as u8 })
    }
}

fn meta(id: u32) -> PacketMeta {
    let mut meta = PacketMeta::default();
    meta.id = id;
    meta
}

/// A UDP flow as its packets show it: source port, destination address
/// and port.
type Flow = (u16, [u8; 16], u16);

/// Marks of a flow's datagrams a device holds at most (a smoltcp UDP
/// socket queues no more; older ones are dropped first).
const PENDING_PER_FLOW: usize = 64;

/// IPv6 datagrams' marks, waiting for their packets (see the module's
/// comment).
#[derive(Default)]
pub struct PendingMarks {
    by_flow: BTreeMap<Flow, VecDeque<IpMarks>>,
}

impl PendingMarks {
    /// The next IPv6 datagram from port `from` to `to` (address, port)
    /// goes out with `marks`.
    pub fn expect(&mut self, from: u16, to: [u8; 16], to_port: u16, marks: IpMarks) {
        let waiting = self.by_flow.entry((from, to, to_port)).or_default();
        if waiting.len() >= PENDING_PER_FLOW {
            waiting.pop_front();
        }
        waiting.push_back(marks);
    }

    /// The marks waiting for IPv6 packet `packet`, taken (`None`: not a
    /// UDP packet of a flow that has any).
    pub fn take_for(&mut self, packet: &[u8]) -> Option<IpMarks> {
        if self.by_flow.is_empty() {
            return None;
        }
        let header = Ipv6Packet::new_checked(packet).ok()?;
        if header.next_header() != IpProtocol::Udp {
            return None;
        }
        let udp = UdpPacket::new_checked(header.payload()).ok()?;
        let flow = (udp.src_port(), header.dst_addr().octets(), udp.dst_port());
        let waiting = self.by_flow.get_mut(&flow)?;
        let marks = waiting.pop_front();
        if waiting.is_empty() {
            self.by_flow.remove(&flow);
        }
        marks
    }

    /// Forgets the marks of every flow from port `from` (its socket closed).
    pub fn forget(&mut self, from: u16) {
        self.by_flow.retain(|flow, _| flow.0 != from);
    }
}
