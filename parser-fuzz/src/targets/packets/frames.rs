//! Ethernet frames built and read by hand: the well-formed ones (ARP,
//! DHCP, IPv4 with TCP, UDP and ICMP, an IPv6 neighbour solicitation) with
//! correct checksums, the repair that makes a mutated frame's checksums
//! right again, and a coarse reading of what the stack sent.
//!
//! The one set of frame builders in the workspace: the packets target
//! uses them, and so does xtask's bad-packet check (its host peer sends
//! them to a guest in QEMU, and reads and mangles frames on its own). The
//! two peers differ in two habits, which the builders take as arguments:
//! the IPv4 Don't Fragment bit ([`DontFragment`]) and whether a DHCP
//! answer names a name server.
//!
//! Pure functions of their arguments. Must never panic on any bytes (the
//! repair and the reading take mutated frames).

/// The card under attack and the address DHCP gives it.
pub const GUEST_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
pub const GUEST_IP: [u8; 4] = [10, 0, 2, 15];
/// The peer: DHCP server, gateway and the other end of every connection.
pub const PEER_MAC: [u8; 6] = [0x52, 0x55, 0x0a, 0x00, 0x02, 0x02];
pub const PEER_IP: [u8; 4] = [10, 0, 2, 2];
pub const BROADCAST_MAC: [u8; 6] = [0xff; 6];
/// The peer's IPv6 link-local address.
pub const PEER_IP6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x55, 0x0a, 0xff, 0xfe, 0, 2, 2];

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const PROTOCOL_ICMP: u8 = 1;
pub const PROTOCOL_TCP: u8 = 6;
pub const PROTOCOL_UDP: u8 = 17;
pub const PROTOCOL_ICMPV6: u8 = 58;

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;

/// Where the IPv4 or IPv6 header starts in a frame.
pub const ETHERNET_HEADER: usize = 14;
/// The size of BOOTP's fixed part, before DHCP's magic cookie.
pub const BOOTP_FIXED: usize = 236;
pub const DHCP_MAGIC: [u8; 4] = [99, 130, 83, 99];

/// The Don't Fragment bit of the IPv4 packets a peer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DontFragment {
    /// Set, as Linux sends (the packets target's peer).
    Set,
    /// Clear (the bad-packet check's host peer).
    Clear,
}

/// The Internet checksum of `bytes` after the partial sum `initial`.
pub fn checksum(initial: u32, bytes: &[u8]) -> u16 {
    let mut sum = u64::from(initial);
    for pair in bytes.chunks(2) {
        sum += u64::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn sum_words(bytes: &[u8]) -> u32 {
    bytes.chunks(2).map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]))).sum()
}

/// The pseudo-header's partial sum for a transport checksum (either
/// version: the addresses' lengths say which).
fn pseudo_header(source: &[u8], destination: &[u8], protocol: u8, length: usize) -> u32 {
    sum_words(source) + sum_words(destination) + u32::from(protocol) + (length as u32 & 0xffff) + (length as u32 >> 16)
}

/// An Ethernet frame from `source` to `destination`.
pub fn ethernet(destination: [u8; 6], source: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    [&destination[..], &source[..], &ethertype.to_be_bytes(), payload].concat()
}

/// An IPv4 packet (no options, identification 0x1234, TTL 64) with a
/// correct header checksum.
pub fn ipv4(dont_fragment: DontFragment, source: [u8; 4], destination: [u8; 4], protocol: u8, payload: &[u8]) -> Vec<u8> {
    let flags = match dont_fragment {
        DontFragment::Set => 0x40,
        DontFragment::Clear => 0,
    };
    let mut header = vec![0x45, 0, 0, 0, 0x12, 0x34, flags, 0, 64, protocol, 0, 0];
    header[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    header.extend_from_slice(&source);
    header.extend_from_slice(&destination);
    let sum = checksum(0, &header);
    header[10..12].copy_from_slice(&sum.to_be_bytes());
    [header, payload.to_vec()].concat()
}

/// A UDP datagram with a correct checksum.
pub fn udp(source: &[u8], destination: &[u8], ports: (u16, u16), payload: &[u8]) -> Vec<u8> {
    let length = 8 + payload.len();
    let mut datagram = [&ports.0.to_be_bytes()[..], &ports.1.to_be_bytes(), &(length as u16).to_be_bytes(), &[0, 0], payload].concat();
    let sum = checksum(pseudo_header(source, destination, PROTOCOL_UDP, length), &datagram);
    datagram[6..8].copy_from_slice(&(if sum == 0 { 0xffff } else { sum }).to_be_bytes());
    datagram
}

/// One TCP segment's header fields.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    pub ports: (u16, u16),
    pub sequence: u32,
    pub acknowledgement: u32,
    pub flags: u8,
}

/// A TCP segment with `options` (whole words) and a correct checksum.
pub fn tcp(source: &[u8], destination: &[u8], segment: Segment, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let offset = ((20 + options.len()) / 4) as u8;
    let mut bytes = [
        &segment.ports.0.to_be_bytes()[..],
        &segment.ports.1.to_be_bytes(),
        &segment.sequence.to_be_bytes(),
        &segment.acknowledgement.to_be_bytes(),
        &[offset << 4, segment.flags],
        &64_240u16.to_be_bytes(),
        &[0, 0, 0, 0],
        options,
        payload,
    ]
    .concat();
    let sum = checksum(pseudo_header(source, destination, PROTOCOL_TCP, bytes.len()), &bytes);
    bytes[16..18].copy_from_slice(&sum.to_be_bytes());
    bytes
}

/// An ICMP echo request.
pub fn icmp_echo(identifier: u16, sequence: u16, payload: &[u8]) -> Vec<u8> {
    let mut message = [&[8, 0, 0, 0][..], &identifier.to_be_bytes(), &sequence.to_be_bytes(), payload].concat();
    let sum = checksum(0, &message);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    message
}

/// A frame from the peer to the guest carrying an IPv4 packet.
pub fn to_guest(dont_fragment: DontFragment, protocol: u8, payload: &[u8]) -> Vec<u8> {
    ethernet(GUEST_MAC, PEER_MAC, ETHERTYPE_IPV4, &ipv4(dont_fragment, PEER_IP, GUEST_IP, protocol, payload))
}

/// A TCP segment between any two IPv4 addresses, in a frame to every card
/// (a segment from nowhere, to a broadcast or multicast address).
pub fn tcp_between(source: [u8; 4], destination: [u8; 4], segment: Segment) -> Vec<u8> {
    let bytes = tcp(&source, &destination, segment, &[], b"");
    ethernet(BROADCAST_MAC, PEER_MAC, ETHERTYPE_IPV4, &ipv4(DontFragment::Set, source, destination, PROTOCOL_TCP, &bytes))
}

/// A TCP segment from the peer to the guest.
pub fn tcp_to_guest(dont_fragment: DontFragment, segment: Segment, options: &[u8], payload: &[u8]) -> Vec<u8> {
    to_guest(dont_fragment, PROTOCOL_TCP, &tcp(&PEER_IP, &GUEST_IP, segment, options, payload))
}

/// A UDP datagram from the peer's port `ports.0` to the guest's `ports.1`.
pub fn udp_to_guest(dont_fragment: DontFragment, ports: (u16, u16), payload: &[u8]) -> Vec<u8> {
    to_guest(dont_fragment, PROTOCOL_UDP, &udp(&PEER_IP, &GUEST_IP, ports, payload))
}

/// An ARP message (1: request, 2: reply) from the peer.
pub fn arp(operation: u16, destination: [u8; 6], target_mac: [u8; 6], target_ip: [u8; 4]) -> Vec<u8> {
    let body = [&[0, 1, 8, 0, 6, 4][..], &operation.to_be_bytes(), &PEER_MAC, &PEER_IP, &target_mac, &target_ip].concat();
    ethernet(destination, PEER_MAC, ETHERTYPE_ARP, &body)
}

/// An IPv6 neighbour solicitation from the peer for `target`, with its
/// source link-layer address option.
pub fn neighbour_solicitation(target: [u8; 16]) -> Vec<u8> {
    let mut destination = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0];
    destination[13..].copy_from_slice(&target[13..]);
    let mut message = [&[135, 0, 0, 0, 0, 0, 0, 0][..], &target, &[1, 1], &PEER_MAC].concat();
    let sum = checksum(pseudo_header(&PEER_IP6, &destination, PROTOCOL_ICMPV6, message.len()), &message);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    let mut packet = vec![0x60, 0, 0, 0, 0, 0, PROTOCOL_ICMPV6, 255];
    packet[4..6].copy_from_slice(&(message.len() as u16).to_be_bytes());
    packet.extend_from_slice(&PEER_IP6);
    packet.extend_from_slice(&destination);
    packet.extend_from_slice(&message);
    let multicast_mac = [0x33, 0x33, destination[12], destination[13], destination[14], destination[15]];
    ethernet(multicast_mac, PEER_MAC, ETHERTYPE_IPV6, &packet)
}

/// A DHCP message of `kind` (2 offer, 5 acknowledgement, 6 refusal) for
/// transaction `transaction`, giving the guest its address with the peer
/// as server and router, and `name_server` if there is one.
pub fn dhcp(dont_fragment: DontFragment, kind: u8, transaction: [u8; 4], name_server: Option<[u8; 4]>) -> Vec<u8> {
    let mut message = vec![0u8; BOOTP_FIXED];
    message[..4].copy_from_slice(&[2, 1, 6, 0]);
    message[4..8].copy_from_slice(&transaction);
    message[16..20].copy_from_slice(&GUEST_IP);
    message[20..24].copy_from_slice(&PEER_IP);
    message[28..34].copy_from_slice(&GUEST_MAC);
    message.extend_from_slice(&DHCP_MAGIC);
    message.extend_from_slice(&[53, 1, kind, 54, 4]);
    message.extend_from_slice(&PEER_IP);
    // Lease of a day, a /24, the router and the name server.
    message.extend_from_slice(&[51, 4, 0, 1, 0x51, 0x80, 1, 4, 255, 255, 255, 0, 3, 4]);
    message.extend_from_slice(&PEER_IP);
    if let Some(name_server) = name_server {
        message.extend_from_slice(&[6, 4]);
        message.extend_from_slice(&name_server);
    }
    message.push(255);
    let datagram = udp(&PEER_IP, &[255; 4], (67, 68), &message);
    ethernet(BROADCAST_MAC, PEER_MAC, ETHERTYPE_IPV4, &ipv4(dont_fragment, PEER_IP, [255; 4], PROTOCOL_UDP, &datagram))
}

/// The transaction of a DHCP message the guest sent, with its kind.
pub fn dhcp_sent(frame: &[u8]) -> Option<(u8, [u8; 4])> {
    let udp = ipv4_payload(frame).filter(|(protocol, _)| *protocol == PROTOCOL_UDP)?.1;
    let message = udp.get(8..)?;
    if udp.get(0..4)? != [0, 68, 0, 67] || message.get(BOOTP_FIXED..BOOTP_FIXED + 4)? != DHCP_MAGIC {
        return None;
    }
    let transaction = message[4..8].try_into().ok()?;
    let mut at = BOOTP_FIXED + 4;
    while let (Some(&code), Some(&length)) = (message.get(at), message.get(at + 1)) {
        if code == 53 && length == 1 {
            return Some((*message.get(at + 2)?, transaction));
        }
        at += 2 + usize::from(length);
    }
    None
}

/// An IPv4 frame's protocol and payload (bounded by its total length).
pub fn ipv4_payload(frame: &[u8]) -> Option<(u8, &[u8])> {
    let packet = frame.get(ETHERNET_HEADER..).filter(|_| frame.get(12..14) == Some(&ETHERTYPE_IPV4.to_be_bytes()))?;
    let header = usize::from(packet.first()? & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([*packet.get(2)?, *packet.get(3)?])).min(packet.len());
    (header >= 20 && total >= header).then(|| (packet[9], &packet[header..total]))
}

/// A TCP segment the guest sent: its sequence number, acknowledgement and flags.
pub fn tcp_sent(frame: &[u8]) -> Option<(u32, u32, u8)> {
    let segment = ipv4_payload(frame).filter(|(protocol, _)| *protocol == PROTOCOL_TCP)?.1;
    let word = |at: usize| Some(u32::from_be_bytes(segment.get(at..at + 4)?.try_into().ok()?));
    Some((word(4)?, word(8)?, *segment.get(13)?))
}

/// Makes every checksum of `frame` right again: the IPv4 header's, and a
/// TCP, UDP or ICMP (IPv4) or TCP, UDP or ICMPv6 (IPv6, no extension
/// headers) checksum. Leaves what it cannot read as it is.
pub fn repair(frame: &mut [u8]) {
    match frame.get(12..14).map(|kind| u16::from_be_bytes([kind[0], kind[1]])) {
        Some(ETHERTYPE_IPV4) => repair_ipv4(&mut frame[ETHERNET_HEADER..]),
        Some(ETHERTYPE_IPV6) => repair_ipv6(&mut frame[ETHERNET_HEADER..]),
        _ => {}
    }
}

fn repair_ipv4(packet: &mut [u8]) {
    let Some(&first) = packet.first() else { return };
    let header = usize::from(first & 0xf) * 4;
    if header < 20 || header > packet.len() {
        return;
    }
    packet[10..12].copy_from_slice(&[0, 0]);
    let sum = checksum(0, &packet[..header]);
    packet[10..12].copy_from_slice(&sum.to_be_bytes());
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]])).min(packet.len());
    // A fragment's transport checksum covers the reassembled datagram.
    let fragmented = u16::from_be_bytes([packet[6], packet[7]]) & 0x3fff != 0;
    if total < header || fragmented {
        return;
    }
    let (source, destination) = (packet[12..16].to_vec(), packet[16..20].to_vec());
    let protocol = packet[9];
    repair_transport(protocol, &source, &destination, &mut packet[header..total]);
}

fn repair_ipv6(packet: &mut [u8]) {
    if packet.len() < 40 {
        return;
    }
    let length = usize::from(u16::from_be_bytes([packet[4], packet[5]])).min(packet.len() - 40);
    let (source, destination) = (packet[8..24].to_vec(), packet[24..40].to_vec());
    let protocol = packet[6];
    repair_transport(protocol, &source, &destination, &mut packet[40..40 + length]);
}

/// Sets the checksum of a transport message whose bytes are `message`.
fn repair_transport(protocol: u8, source: &[u8], destination: &[u8], message: &mut [u8]) {
    let (at, covered, pseudo) = match protocol {
        PROTOCOL_TCP => (16, message.len(), true),
        PROTOCOL_UDP => {
            let claimed = message.get(4..6).map_or(0, |length| usize::from(u16::from_be_bytes([length[0], length[1]])));
            (6, if (8..=message.len()).contains(&claimed) { claimed } else { message.len() }, true)
        }
        PROTOCOL_ICMP => (2, message.len(), false),
        PROTOCOL_ICMPV6 => (2, message.len(), true),
        _ => return,
    };
    if message.len() < at + 2 {
        return;
    }
    message[at..at + 2].copy_from_slice(&[0, 0]);
    let initial = if pseudo { pseudo_header(source, destination, protocol, covered) } else { 0 };
    let mut sum = checksum(initial, &message[..covered]);
    if protocol == PROTOCOL_UDP && sum == 0 {
        sum = 0xffff;
    }
    message[at..at + 2].copy_from_slice(&sum.to_be_bytes());
}

/// Whether an IPv4 frame's header checksum is right (`None`: not IPv4).
pub fn ipv4_header_sound(frame: &[u8]) -> Option<bool> {
    let packet = frame.get(ETHERNET_HEADER..).filter(|_| frame.get(12..14) == Some(&ETHERTYPE_IPV4.to_be_bytes()))?;
    let header = usize::from(packet.first()? & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([*packet.get(2)?, *packet.get(3)?]));
    Some(header >= 20 && header <= total && total <= packet.len() && checksum(0, &packet[..header]) == 0)
}

/// An IPv4 frame's source and destination addresses.
pub fn ipv4_addresses(frame: &[u8]) -> Option<([u8; 4], [u8; 4])> {
    ipv4_payload(frame)?;
    Some((frame[26..30].try_into().ok()?, frame[30..34].try_into().ok()?))
}

/// What a frame the guest sent is, coarsely.
pub fn kind_of_sent(frame: &[u8]) -> &'static str {
    match frame.get(12..14).map(|kind| u16::from_be_bytes([kind[0], kind[1]])) {
        Some(ETHERTYPE_ARP) if frame.get(20..22) == Some(&[0, 1]) => "arp?",
        Some(ETHERTYPE_ARP) => "arp!",
        Some(ETHERTYPE_IPV6) => "ipv6",
        Some(ETHERTYPE_IPV4) => kind_of_ipv4(frame),
        _ => "other",
    }
}

fn kind_of_ipv4(frame: &[u8]) -> &'static str {
    if dhcp_sent(frame).is_some() {
        return "dhcp";
    }
    match (ipv4_payload(frame), tcp_sent(frame)) {
        (_, Some((_, _, flags))) if flags & TCP_RST != 0 => "rst",
        (_, Some((_, _, flags))) if flags & TCP_SYN != 0 => "syn",
        (_, Some((_, _, flags))) if flags & TCP_FIN != 0 => "fin",
        (_, Some(_)) => "tcp",
        (Some((PROTOCOL_UDP, _)), _) => "udp",
        (Some((PROTOCOL_ICMP, message)), _) if message.first() == Some(&0) => "pong",
        (Some((PROTOCOL_ICMP, _)), _) => "icmp",
        _ => "ip",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_frames_have_checksums_that_sum_to_zero_and_repair_keeps_them() {
        let segment = Segment { ports: (1, 2), sequence: 3, acknowledgement: 4, flags: TCP_SYN };
        let frame = tcp_to_guest(DontFragment::Set, segment, &[2, 4, 5, 0xb4], b"hello");
        assert_eq!(ipv4_header_sound(&frame), Some(true));
        let payload = ipv4_payload(&frame).unwrap().1;
        assert_eq!(checksum(pseudo_header(&PEER_IP, &GUEST_IP, PROTOCOL_TCP, payload.len()), payload), 0);
        let others = [udp_to_guest(DontFragment::Clear, (9, 7), b"odd"), to_guest(DontFragment::Set, PROTOCOL_ICMP, &icmp_echo(1, 2, b"ping")), neighbour_solicitation([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56]), dhcp(DontFragment::Set, 2, [1, 2, 3, 4], Some(PEER_IP)), dhcp(DontFragment::Clear, 5, [1, 2, 3, 4], None)];
        for frame in [frame.clone()].into_iter().chain(others) {
            let mut repaired = frame.clone();
            repair(&mut repaired);
            assert_eq!(repaired, frame);
        }
        let mut broken = frame;
        broken[40] ^= 0xff;
        broken[22] ^= 0x1;
        repair(&mut broken);
        assert_eq!(ipv4_header_sound(&broken), Some(true));
    }

    #[test]
    fn the_peers_habits_show_in_the_bytes() {
        let set = udp_to_guest(DontFragment::Set, (9, 7), b"x");
        let clear = udp_to_guest(DontFragment::Clear, (9, 7), b"x");
        assert_eq!((set[ETHERNET_HEADER + 6], clear[ETHERNET_HEADER + 6]), (0x40, 0), "the Don't Fragment bit");
        assert_eq!((ipv4_header_sound(&set), ipv4_header_sound(&clear)), (Some(true), Some(true)));
        let named = dhcp(DontFragment::Set, 2, [1, 2, 3, 4], Some(PEER_IP));
        let unnamed = dhcp(DontFragment::Set, 2, [1, 2, 3, 4], None);
        assert_eq!(named.len(), unnamed.len() + 6, "a name server option is 6 bytes");
    }

    #[test]
    fn repair_and_reading_never_panic_on_cut_frames() {
        let frames = [dhcp(DontFragment::Set, 5, [9; 4], Some(PEER_IP)), neighbour_solicitation([0; 16]), udp_to_guest(DontFragment::Set, (1, 2), b"x")];
        for frame in frames {
            for length in 0..frame.len() {
                let mut cut = frame[..length].to_vec();
                repair(&mut cut);
                let _ = (kind_of_sent(&cut), dhcp_sent(&cut), tcp_sent(&cut), ipv4_header_sound(&cut));
            }
        }
    }
}
