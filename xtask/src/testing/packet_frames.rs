//! Ethernet frames for the bad-packet check: reading what the guest sends,
//! the peer's answers (ARP replies, DHCP offers and acknowledgements) and
//! the malformed frames it throws at the guest's card, family by family.
//! The well-formed frames themselves are built by parser-fuzz's
//! [`frames`], which this check shares with the packets fuzz target; the
//! host peer sends IPv4 with the Don't Fragment bit clear and offers no
//! name server over DHCP.
//!
//! Pure functions of their arguments (the noise from a seeded generator):
//! no sockets here.

use crash_check::states::Random;
use parser_fuzz::targets::packets::frames::{self, checksum, ethernet, icmp_echo, to_guest, udp, udp_to_guest, DontFragment, Segment, BOOTP_FIXED, BROADCAST_MAC, DHCP_MAGIC, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, GUEST_IP, GUEST_MAC, PEER_IP, PEER_MAC, PROTOCOL_ICMP, PROTOCOL_TCP, PROTOCOL_UDP, TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN};

/// What the peer makes of a frame from the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromGuest {
    /// "Who has `target`?"
    ArpRequest { target: [u8; 4], sender_mac: [u8; 6], sender_ip: [u8; 4] },
    /// A DHCP message of `kind` (1 discover, 3 request) with its transaction id.
    Dhcp { kind: u8, transaction: [u8; 4] },
    /// A UDP datagram to the peer.
    Udp { ports: (u16, u16), payload: Vec<u8> },
    /// A TCP segment to the peer.
    Tcp { ports: (u16, u16), sequence: u32, acknowledgement: u32, flags: u8, payload: Vec<u8> },
    /// An ICMP echo reply.
    EchoReply { identifier: u16, sequence: u16 },
    /// Anything else (IPv6 solicitations, ARP replies, …).
    Other,
}

/// Reads a frame the guest sent.
pub fn parse(frame: &[u8]) -> FromGuest {
    if frame.len() < 14 {
        return FromGuest::Other;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let body = &frame[14..];
    match ethertype {
        ETHERTYPE_ARP if body.len() >= 28 && body[6..8] == [0, 1] => FromGuest::ArpRequest {
            sender_mac: body[8..14].try_into().unwrap_or_default(),
            sender_ip: body[14..18].try_into().unwrap_or_default(),
            target: body[24..28].try_into().unwrap_or_default(),
        },
        ETHERTYPE_IPV4 if body.len() >= 20 && body[0] >> 4 == 4 => parse_ipv4(body),
        _ => FromGuest::Other,
    }
}

fn parse_ipv4(packet: &[u8]) -> FromGuest {
    let header = usize::from(packet[0] & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]])).min(packet.len());
    if header < 20 || total < header {
        return FromGuest::Other;
    }
    let body = &packet[header..total];
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let word = |at: usize| u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
    match packet[9] {
        PROTOCOL_UDP if body.len() >= 8 => {
            let ports = (port(0), port(2));
            let payload = &body[8..];
            if ports == (68, 67) {
                return parse_dhcp(payload);
            }
            FromGuest::Udp { ports, payload: payload.to_vec() }
        }
        PROTOCOL_TCP if body.len() >= 20 => {
            let offset = usize::from(body[12] >> 4) * 4;
            FromGuest::Tcp { ports: (port(0), port(2)), sequence: word(4), acknowledgement: word(8), flags: body[13], payload: body[offset.min(body.len())..].to_vec() }
        }
        PROTOCOL_ICMP if body.len() >= 8 && body[0] == 0 => FromGuest::EchoReply { identifier: port(4), sequence: port(6) },
        _ => FromGuest::Other,
    }
}

fn parse_dhcp(message: &[u8]) -> FromGuest {
    if message.len() < BOOTP_FIXED + 4 || message[0] != 1 || message[BOOTP_FIXED..BOOTP_FIXED + 4] != DHCP_MAGIC {
        return FromGuest::Other;
    }
    let transaction = message[4..8].try_into().unwrap_or_default();
    let mut at = BOOTP_FIXED + 4;
    while at + 1 < message.len() {
        let (code, length) = (message[at], usize::from(message[at + 1]));
        if code == 255 {
            break;
        }
        if code == 53 && length == 1 && at + 2 < message.len() {
            return FromGuest::Dhcp { kind: message[at + 2], transaction };
        }
        at += 2 + length;
    }
    FromGuest::Other
}

/// The peer's answer to "who has `target`?" when it is the peer's address.
pub fn arp_reply(sender_mac: [u8; 6], sender_ip: [u8; 4]) -> Vec<u8> {
    frames::arp(2, sender_mac, sender_mac, sender_ip)
}

/// A DHCP offer (answering a discover) or acknowledgement (a request) of
/// the guest's address, from the peer as server and gateway.
pub fn dhcp_answer(kind: u8, transaction: [u8; 4]) -> Vec<u8> {
    let answer_kind = if kind == 1 { 2 } else { 5 };
    frames::dhcp(DontFragment::Clear, answer_kind, transaction, None)
}

/// The noise: crash-check's xorshift generator (the same sequence for a
/// seed), with bytes.
pub struct Noise(Random);

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(Random(seed | 1))
    }

    pub fn next(&mut self) -> u64 {
        self.0.next()
    }

    pub fn below(&mut self, bound: usize) -> usize {
        self.0.below(bound)
    }

    pub fn bytes(&mut self, count: usize) -> Vec<u8> {
        (0..count).map(|_| self.next() as u8).collect()
    }

    /// Fewer than `bound` bytes.
    pub fn up_to(&mut self, bound: usize) -> Vec<u8> {
        let count = self.below(bound);
        self.bytes(count)
    }
}

/// One family of malformed frames.
pub struct Family {
    pub name: &'static str,
    pub make: fn(&mut Noise) -> Vec<u8>,
}

/// The families the check sends, each many times.
pub const FAMILIES: &[Family] = &[
    // Never empty: QEMU's datagram backend takes a zero-length datagram as
    // "the card cannot take more" and stops delivering (seen on both guests).
    Family { name: "random bytes of any length", make: |noise| { let length = 1 + noise.below(1599); noise.bytes(length) } },
    Family { name: "Ethernet headers cut short", make: |noise| { let frame = udp_to_guest(DontFragment::Clear, (9, 7), b"x"); let length = 1 + noise.below(13); frame[..length].to_vec() } },
    Family { name: "IPv4 headers cut short", make: |noise| { let frame = udp_to_guest(DontFragment::Clear, (9, 7), b"cut"); let length = 14 + noise.below(20); frame[..length].to_vec() } },
    Family { name: "IPv4 with a wrong version or header length", make: |noise| {
        let mut frame = udp_to_guest(DontFragment::Clear, (9, 7), b"bad header");
        frame[14] = [0x35, 0x65, 0x41, 0x44, 0x4f, 0xf5][noise.below(6)];
        frame
    } },
    Family { name: "IPv4 with a total length past or short of the frame", make: |noise| {
        let mut frame = udp_to_guest(DontFragment::Clear, (9, 7), b"length");
        let length = [0u16, 8, 19, 29, 60_000, 65_535][noise.below(6)];
        frame[16..18].copy_from_slice(&length.to_be_bytes());
        frame
    } },
    Family { name: "IPv4 with a bad header checksum", make: |noise| { let mut frame = udp_to_guest(DontFragment::Clear, (9, 7), b"checksum"); frame[24] ^= 1 + noise.below(254) as u8; frame } },
    Family { name: "IPv4 with junk options", make: |noise| {
        let datagram = udp(&PEER_IP, &GUEST_IP, (9, 7), b"options");
        let mut header = vec![0x4f, 0, 0, 0, 0, 0, 0, 0, 64, PROTOCOL_UDP, 0, 0];
        header[2..4].copy_from_slice(&((60 + datagram.len()) as u16).to_be_bytes());
        header.extend_from_slice(&PEER_IP);
        header.extend_from_slice(&GUEST_IP);
        header.extend(noise.bytes(40));
        let sum = checksum(0, &header);
        header[10..12].copy_from_slice(&sum.to_be_bytes());
        ethernet(GUEST_MAC, PEER_MAC, ETHERTYPE_IPV4, &[header, datagram].concat())
    } },
    Family { name: "IPv4 fragments", make: |noise| {
        let mut frame = udp_to_guest(DontFragment::Clear, (9, 7), &noise.bytes(200));
        let flags_offset = 0x2000 | (noise.below(0x1fff) as u16);
        frame[20..22].copy_from_slice(&flags_offset.to_be_bytes());
        frame[24..26].copy_from_slice(&[0, 0]);
        let sum = checksum(0, &frame[14..34]);
        frame[24..26].copy_from_slice(&sum.to_be_bytes());
        frame
    } },
    Family { name: "UDP with a bad checksum or length", make: |noise| {
        let mut frame = udp_to_guest(DontFragment::Clear, (9, 7), b"udp");
        match noise.below(3) {
            0 => frame[40] ^= 0x5a,
            1 => frame[38..40].copy_from_slice(&(noise.below(7) as u16).to_be_bytes()),
            _ => frame[38..40].copy_from_slice(&60_000u16.to_be_bytes()),
        }
        frame
    } },
    Family { name: "TCP with bad checksums, offsets and flag mixes", make: |noise| {
        let flags = [TCP_SYN | TCP_FIN, 0xff, 0, TCP_RST, TCP_ACK, TCP_SYN | TCP_RST, TCP_PSH | TCP_ACK][noise.below(7)];
        let segment = Segment { ports: (20_000 + noise.below(1000) as u16, 80), sequence: noise.next() as u32, acknowledgement: noise.next() as u32, flags };
        let mut frame = frames::tcp_to_guest(DontFragment::Clear, segment, &[], &noise.up_to(40));
        match noise.below(3) {
            0 => frame[50] ^= 0x33,
            1 => { frame[46] = (noise.below(16) as u8) << 4; }
            _ => {}
        }
        frame
    } },
    Family { name: "ICMP of every type, cut short or with bad checksums", make: |noise| {
        let mut message = icmp_echo(noise.next() as u16, 1, &noise.up_to(64));
        message[0] = noise.next() as u8;
        if noise.below(2) == 0 {
            message[2] ^= 0xff;
        }
        let length = noise.below(message.len() + 1);
        to_guest(DontFragment::Clear, PROTOCOL_ICMP, &message[..length])
    } },
    Family { name: "ARP cut short, with wrong sizes, for other addresses", make: |noise| {
        let mut body = [&[0, 1, 8, 0, 6, 4, 0, 1][..], &[0x02, 0, 0, 0, 0, 9], &[10, 0, 2, 9], &[0; 6], &[10, 0, 2, 200 + noise.below(50) as u8]].concat();
        match noise.below(3) {
            0 => body.truncate(noise.below(28)),
            1 => { body[4] = noise.next() as u8; body[5] = noise.next() as u8; }
            _ => {}
        }
        ethernet(BROADCAST_MAC, [0x02, 0, 0, 0, 0, 9], ETHERTYPE_ARP, &body)
    } },
    Family { name: "IPv6 cut short or with junk headers", make: |noise| {
        let mut packet = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
        packet[4..6].copy_from_slice(&(noise.below(2000) as u16).to_be_bytes());
        packet[6] = [0u8, 6, 17, 43, 44, 58, 59, 60][noise.below(8)];
        let extra = 32 + noise.below(80);
        packet.extend(noise.bytes(extra));
        let length = noise.below(packet.len() + 1);
        ethernet(GUEST_MAC, PEER_MAC, ETHERTYPE_IPV6, &packet[..length])
    } },
    Family { name: "DHCP answers with junk options", make: |noise| {
        let mut frame = dhcp_answer(1 + 2 * noise.below(2) as u8, noise.next().to_be_bytes()[..4].try_into().unwrap_or_default());
        let options = 14 + 20 + 8 + BOOTP_FIXED + 4;
        let junk = noise.bytes(frame.len() - options);
        frame[options..].copy_from_slice(&junk);
        frame
    } },
    Family { name: "frames longer than the link's MTU", make: |noise| { let length = 1500 + noise.below(7000); udp_to_guest(DontFragment::Clear, (9, 7), &noise.bytes(length)) } },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_built_here_read_back() {
        let frame = ethernet(PEER_MAC, GUEST_MAC, ETHERTYPE_IPV4, &frames::ipv4(DontFragment::Set, GUEST_IP, PEER_IP, PROTOCOL_UDP, &udp(&GUEST_IP, &PEER_IP, (7, 9), b"echo")));
        assert_eq!(parse(&frame), FromGuest::Udp { ports: (7, 9), payload: b"echo".to_vec() });
        let header = Segment { ports: (80, 5000), sequence: 10, acknowledgement: 20, flags: TCP_SYN | TCP_ACK };
        let segment = ethernet(PEER_MAC, GUEST_MAC, ETHERTYPE_IPV4, &frames::ipv4(DontFragment::Set, GUEST_IP, PEER_IP, PROTOCOL_TCP, &frames::tcp(&GUEST_IP, &PEER_IP, header, &[], b"")));
        assert_eq!(parse(&segment), FromGuest::Tcp { ports: (80, 5000), sequence: 10, acknowledgement: 20, flags: TCP_SYN | TCP_ACK, payload: Vec::new() });
        let arp = ethernet(BROADCAST_MAC, GUEST_MAC, ETHERTYPE_ARP, &[&[0, 1, 8, 0, 6, 4, 0, 1][..], &GUEST_MAC, &GUEST_IP, &[0; 6], &PEER_IP].concat());
        assert_eq!(parse(&arp), FromGuest::ArpRequest { target: PEER_IP, sender_mac: GUEST_MAC, sender_ip: GUEST_IP });
        assert_eq!(parse(&arp[..20]), FromGuest::Other);
    }

    #[test]
    fn every_family_makes_frames_never_empty() {
        let mut noise = Noise::new(7);
        for family in FAMILIES {
            for _ in 0..500 {
                let frame = (family.make)(&mut noise);
                assert!(!frame.is_empty(), "{} made an empty frame", family.name);
                let _ = parse(&frame);
            }
        }
    }
}
