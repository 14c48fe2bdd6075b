//! Which TCP connection a received packet is for, read from its headers
//! (IPv4 or IPv6 without extension headers, over Ethernet or bare): its
//! `(local, remote)` endpoints. A packet it cannot read goes to the
//! lane's shared socket set, where smoltcp judges it.
//!
//! Must never index past the packet: every offset is checked.

use smoltcp::wire::{IpAddress, IpEndpoint, Ipv4Address, Ipv6Address};

/// A connection's endpoints: (local, remote).
pub type Tuple = (IpEndpoint, IpEndpoint);

/// A [`Tuple`] as three integers, for the connection map: ordered by
/// plain integer comparisons (the endpoints' own order compares enums and
/// byte arrays, ~20 instructions a step of a map look-up). One key per
/// tuple: each address is its 16 bytes (IPv4 in the low 4), the family of
/// each in the third with the two ports.
pub type TupleKey = (u128, u128, u64);

/// `tuple`'s key.
pub fn tuple_key(tuple: &Tuple) -> TupleKey {
    fn address(address: IpAddress) -> (u128, u64) {
        match address {
            IpAddress::Ipv4(v4) => (u128::from(u32::from_be_bytes(v4.octets())), 4),
            IpAddress::Ipv6(v6) => (u128::from_be_bytes(v6.octets()), 6),
        }
    }
    let (local, local_family) = address(tuple.0.addr);
    let (remote, remote_family) = address(tuple.1.addr);
    (local, remote, local_family << 40 | remote_family << 32 | u64::from(tuple.0.port) << 16 | u64::from(tuple.1.port))
}

const TCP: u8 = 6;
const ETHERNET_HEADER: usize = 14;

/// What the demultiplexer reads of a TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Its endpoints as the receiver sees them.
    pub tuple: Tuple,
    /// A SYN without ACK: someone opening a connection.
    pub opens: bool,
}

/// The TCP segment in `packet` (an Ethernet frame when `ethernet`, else
/// an IP packet), if it is one.
pub fn tcp_segment(packet: &[u8], ethernet: bool) -> Option<Segment> {
    let ip = if ethernet {
        let kind = u16::from_be_bytes([*packet.get(12)?, *packet.get(13)?]);
        if kind != 0x0800 && kind != 0x86dd {
            return None;
        }
        packet.get(ETHERNET_HEADER..)?
    } else {
        packet
    };
    let (source, destination, tcp) = match ip.first()? >> 4 {
        4 => {
            let header = usize::from(ip.first()? & 0x0f) * 4;
            if *ip.get(9)? != TCP || header < 20 {
                return None;
            }
            let address = |at: usize| -> Option<IpAddress> { Some(IpAddress::Ipv4(Ipv4Address::new(*ip.get(at)?, *ip.get(at + 1)?, *ip.get(at + 2)?, *ip.get(at + 3)?))) };
            (address(12)?, address(16)?, ip.get(header..)?)
        }
        6 => {
            if *ip.get(6)? != TCP {
                return None;
            }
            let address = |at: usize| -> Option<IpAddress> {
                let octets: [u8; 16] = ip.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddress::Ipv6(Ipv6Address::from(octets)))
            };
            (address(8)?, address(24)?, ip.get(40..)?)
        }
        _ => return None,
    };
    let port = |at: usize| -> Option<u16> { Some(u16::from_be_bytes([*tcp.get(at)?, *tcp.get(at + 1)?])) };
    let flags = *tcp.get(13)?;
    let tuple = (IpEndpoint::new(destination, port(2)?), IpEndpoint::new(source, port(0)?));
    Some(Segment { tuple, opens: flags & 0x12 == 0x02 })
}
