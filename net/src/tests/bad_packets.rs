//! Malformed, truncated, oversized and hostile packets into both kinds of
//! lane: the stack drops them or answers as TCP requires, never panics,
//! and a connection they do not name keeps working; a SYN flood that
//! never completes leaves room for a new connection. (The same through
//! the card, on both kernels: xtask's `bad_packet_checks`.)

use super::{local, network, open, settle};
use crate::{Network, SocketId, SocketKind};

/// xorshift64*: reproducible noise.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, count: usize) -> std::vec::Vec<u8> {
        (0..count).map(|_| self.next() as u8).collect()
    }
}

/// An IPv4+TCP header to 127.0.0.1:`port` with noise in every other field.
fn hostile_segment(noise: &mut Noise, port: u16) -> std::vec::Vec<u8> {
    let payload = (noise.next() % 64) as usize;
    let mut packet = std::vec![0u8; 40 + payload];
    packet[0] = 0x45;
    let total = (40 + payload) as u16;
    // Sometimes a lie about the length.
    let claimed = if noise.next() % 4 == 0 { noise.next() as u16 } else { total };
    packet[2..4].copy_from_slice(&claimed.to_be_bytes());
    packet[8] = 64;
    packet[9] = 6;
    packet[12..16].copy_from_slice(&[127, 0, 0, 1]);
    packet[16..20].copy_from_slice(&[127, 0, 0, 1]);
    packet[20..22].copy_from_slice(&(noise.next() as u16).to_be_bytes());
    packet[22..24].copy_from_slice(&port.to_be_bytes());
    let tail = noise.bytes(20 + payload - 4);
    packet[24..].copy_from_slice(&tail);
    // Data offset sometimes sane, sometimes not.
    if noise.next() % 2 == 0 {
        packet[32] = 5 << 4;
    }
    packet
}

fn echo_pair(network: &mut Network, port: u16) -> (SocketId, SocketId) {
    let listener = open(network, SocketKind::Stream);
    network.bind(listener, local(port)).unwrap();
    network.listen(listener, 4).unwrap();
    let client = open(network, SocketKind::Stream);
    network.connect(client, local(port)).unwrap();
    settle(network);
    (client, network.accept(listener).expect("accepted"))
}

fn still_talks(network: &mut Network, client: SocketId, server: SocketId) -> bool {
    if network.send(client, b"alive?", None) != Ok(6) {
        return false;
    }
    settle(network);
    let mut buffer = [0u8; 16];
    network.receive(server, &mut buffer, false).map(|got| &buffer[..got.copied] == b"alive?").unwrap_or(false)
}

#[test]
fn noise_and_hostile_segments_on_the_loopback_leave_other_connections_working() {
    let mut network = network();
    let (client, server) = echo_pair(&mut network, 7100);
    let mut noise = Noise(0x1234_5678_9abc_def1);
    for round in 0..20_000u32 {
        let packet = match round % 4 {
            0 => {
                let length = (noise.next() % 1600) as usize;
                noise.bytes(length)
            }
            1 => {
                // Truncations of a plausible header.
                let mut packet = hostile_segment(&mut noise, 7199);
                packet.truncate((noise.next() as usize) % (packet.len() + 1));
                packet
            }
            2 => hostile_segment(&mut noise, 7199),
            _ => {
                let mut packet = std::vec![0x60u8; 40 + (noise.next() % 100) as usize];
                packet[6] = 6;
                packet[4..6].copy_from_slice(&(noise.next() as u16).to_be_bytes());
                packet
            }
        };
        network.lanes[0].device.deliver(packet);
        if round % 64 == 0 {
            settle(&mut network);
        }
    }
    settle(&mut network);
    assert!(still_talks(&mut network, client, server), "the connection no packet named stopped working");
}

#[test]
fn noise_on_the_cards_lane_is_dropped() {
    let mut network = network();
    network.add_ethernet([2, 0, 0, 0, 0, 1], 1500);
    let (client, server) = echo_pair(&mut network, 7101);
    let mut noise = Noise(0x0fed_cba9_8765_4321);
    for round in 0..20_000u32 {
        let length = 14 + (noise.next() % 1600) as usize;
        let mut frame = noise.bytes(length);
        if round % 2 == 0 {
            // Ethernet type IPv4, ARP or IPv6 with noise behind it.
            let kind: [u8; 2] = [[0x08, 0x00], [0x08, 0x06], [0x86, 0xdd]][(noise.next() % 3) as usize];
            frame[12..14].copy_from_slice(&kind);
        }
        network.deliver(frame);
        if round % 64 == 0 {
            settle(&mut network);
        }
    }
    settle(&mut network);
    let mut sent = std::vec::Vec::new();
    network.take_outgoing(&mut sent);
    assert!(sent.iter().all(|frame| frame.len() <= 1514), "no frame larger than the link");
    assert!(still_talks(&mut network, client, server));
}

/// A SYN from `source`:`port` to 127.0.0.1:`to` (the loopback lane
/// checks no checksum).
fn syn_from(source: [u8; 4], port: u16, to: u16) -> std::vec::Vec<u8> {
    let mut packet = std::vec![0u8; 40];
    packet[0] = 0x45;
    packet[2..4].copy_from_slice(&40u16.to_be_bytes());
    packet[8] = 64;
    packet[9] = 6;
    packet[12..16].copy_from_slice(&source);
    packet[16..20].copy_from_slice(&[127, 0, 0, 1]);
    packet[20..22].copy_from_slice(&port.to_be_bytes());
    packet[22..24].copy_from_slice(&to.to_be_bytes());
    packet[24..28].copy_from_slice(&(u32::from(port) * 7919).to_be_bytes());
    packet[32] = 5 << 4;
    packet[33] = 0x02;
    packet[34..36].copy_from_slice(&8192u16.to_be_bytes());
    packet
}

#[test]
fn after_a_syn_flood_that_never_completes_a_new_connection_is_still_taken() {
    let mut network = network();
    let listener = open(&mut network, SocketKind::Stream);
    network.bind(listener, local(7102)).unwrap();
    network.listen(listener, 4).unwrap();
    // Half-open connections from a peer that never answers our SYN-ACKs.
    for port in 0..500u16 {
        network.lanes[0].device.deliver(syn_from([10, 9, 9, 9], 20_000 + port, 7102));
        settle(&mut network);
    }
    let held = network.lanes[0].sockets.iter().count() + network.lanes[0].connection_count();
    assert!(held <= 4 + 2 * crate::stream::LISTEN_SLOTS, "{held} smoltcp sockets after the flood");
    let client = open(&mut network, SocketKind::Stream);
    network.connect(client, local(7102)).unwrap();
    settle(&mut network);
    settle(&mut network);
    assert_eq!(network.connect_outcome(client), Ok(true), "a new connection after the flood");
    assert!(network.accept(listener).is_ok());
}

/// The Internet checksum of `bytes` after the partial sum `initial`.
fn checksum(initial: u32, bytes: &[u8]) -> u16 {
    let mut sum = initial + bytes.chunks(2).map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]))).sum::<u32>();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A network whose card (lane 2) has 10.0.2.15/24, as DHCP would give it.
fn network_with_card() -> Network {
    let mut network = network();
    network.add_ethernet([2, 0, 0, 0, 0, 1], 1500);
    let address = smoltcp::wire::IpCidr::new(crate::IpAddress::Ipv4(crate::Ipv4Address::new(10, 0, 2, 15)), 24);
    network.lanes[2].iface.update_ip_addrs(|addresses| addresses.push(address).unwrap());
    // The DHCP client's discover goes out on the first poll.
    settle(&mut network);
    network.take_outgoing(&mut std::vec::Vec::new());
    network
}

/// [`syn_from`] from `source` to `destination`:`to` in a broadcast frame
/// for the card, with its checksums (the card checks them).
fn card_syn(source: [u8; 4], destination: [u8; 4], to: u16) -> std::vec::Vec<u8> {
    let mut packet = syn_from(source, 20_000, to);
    packet[16..20].copy_from_slice(&destination);
    let header_sum = checksum(0, &packet[..20]);
    packet[10..12].copy_from_slice(&header_sum.to_be_bytes());
    let pseudo: u32 = packet[12..20].chunks(2).map(|pair| u32::from(u16::from_be_bytes([pair[0], pair[1]]))).sum::<u32>() + 6 + 20;
    let segment_sum = checksum(pseudo, &packet[20..]);
    packet[36..38].copy_from_slice(&segment_sum.to_be_bytes());
    [&[0xff; 6][..], &[2, 0, 0, 0, 0, 9], &[8, 0], &packet].concat()
}

/// TCP segments from the unspecified address or to a broadcast or
/// multicast one are nobody's and get no answer (RFC 1122 4.2.3.10).
/// smoltcp lets such packets in (for DHCP and UDP): a listener answered a
/// SYN from 0.0.0.0 and smoltcp panicked sending the SYN-ACK there; a SYN
/// to 255.255.255.255 was answered from that address. Found by
/// parser-fuzz's packets target.
#[test]
fn segments_from_nowhere_or_to_everyone_get_no_answer_and_the_listener_still_works() {
    let mut network = network_with_card();
    let listener = open(&mut network, SocketKind::Stream);
    network.bind(listener, crate::IpEndpoint::new(crate::IpAddress::Ipv4(crate::Ipv4Address::UNSPECIFIED), 7103)).unwrap();
    network.listen(listener, 4).unwrap();
    let guest = [10, 0, 2, 15];
    for (source, destination) in [([0, 0, 0, 0], guest), ([10, 0, 2, 9], [255, 255, 255, 255]), ([10, 0, 2, 9], [10, 0, 2, 255]), ([10, 0, 2, 9], [224, 0, 0, 1])] {
        // To the listener, and to a port nobody listens on (a reset, before).
        for port in [7103, 7104] {
            network.deliver(card_syn(source, destination, port));
            settle(&mut network);
            let mut sent = std::vec::Vec::new();
            network.take_outgoing(&mut sent);
            assert!(sent.is_empty(), "{} frames answered {source:?} -> {destination:?}:{port}", sent.len());
        }
    }
    assert_eq!(network.accept(listener), Err(crate::Errno::EAGAIN), "no connection from nowhere or to everyone");
    // The same SYN from and to unicast addresses is answered (ARP first).
    network.deliver(card_syn([10, 0, 2, 9], guest, 7103));
    settle(&mut network);
    let mut sent = std::vec::Vec::new();
    network.take_outgoing(&mut sent);
    assert_eq!(sent.len(), 1, "an ARP request for the peer");
    let client = open(&mut network, SocketKind::Stream);
    network.connect(client, local(7103)).unwrap();
    settle(&mut network);
    settle(&mut network);
    assert_eq!(network.connect_outcome(client), Ok(true), "the loopback's connection to the listener");
}
