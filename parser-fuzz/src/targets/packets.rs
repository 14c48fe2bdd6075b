//! Frames into the `net` crate's network stack through the card's lane
//! (`Network::deliver`), after the state worth attacking is set up: an
//! address by a DHCP offer and acknowledgement, a listening TCP socket on
//! port 80, a UDP socket bound to port 7 and a connection the peer made to
//! the listener. The input is up to eight frames, each a 2-byte big-endian
//! length and that many bytes. Each frame is delivered and polled, then time
//! runs on (retransmissions, timers); every frame the stack sends must fit
//! the link (1514 bytes), come from the card and, for IPv4, carry a sound
//! header, and TCP only between unicast addresses: anything else is a bug,
//! a panic. What came in is then taken
//! (connections accepted, datagrams and bytes received) and the label is
//! what went out and how the sockets poll.
//!
//! The set-up is deterministic (smoltcp's randomness is seeded), so the
//! samples built from one run of it (the DHCP transaction, the connection's
//! sequence numbers) match every other run's.
//! Hot ranges: the headers of each frame. Repair: every frame's checksums.

/// The frame builders, shared with xtask's bad-packet check.
pub mod frames;

use std::ops::Range;
use std::sync::OnceLock;

use net::{Family, IpAddress, IpEndpoint, Ipv4Address, Network, Readiness, SocketId, SocketKind};

use crate::{boundary_value, Rng, Target};
use frames::{DontFragment, Segment, GUEST_IP, GUEST_MAC, TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN};

/// The packets target.
pub struct Packets;

const MTU: usize = 1500;
/// The largest frame the card carries: the MTU and the Ethernet header.
const LARGEST_FRAME: usize = MTU + frames::ETHERNET_HEADER;
const FRAMES: usize = 8;
const LISTEN_PORT: u16 = 80;
const DATAGRAM_PORT: u16 = 7;
/// The peer's port of the connection made in the set-up.
const PEER_PORT: u16 = 40_000;
const PEER_SEQUENCE: u32 = 0x1000_0000;
const MILLISECOND: u64 = 1_000_000;
/// The broadcast address of the /24 DHCP gives.
const SUBNET_BROADCAST: [u8; 4] = [10, 0, 2, 255];
/// The bytes of a frame worth aiming at: Ethernet, IP and transport headers.
const HEADERS: usize = 80;

/// What the set-up made.
struct Session {
    network: Network,
    listener: SocketId,
    datagram: SocketId,
    /// The accepted connection (from the peer's `PEER_PORT`).
    connection: SocketId,
    /// The uptime reached (ns).
    now: u64,
}

/// What every set-up agrees on, for the samples.
struct Facts {
    /// The DHCP client's transaction (its request's, which it renews with).
    transaction: [u8; 4],
    /// The guest's next sequence number on the connection.
    guest_sequence: u32,
}

/// Polls at uptime `now` (ns) and takes what went out.
fn poll_and_take(network: &mut Network, now: u64) -> Vec<Vec<u8>> {
    network.poll(now);
    let mut sent = Vec::new();
    network.take_outgoing(&mut sent);
    sent
}

/// The set-up: a card with an address from DHCP, the sockets, and a
/// connection the peer made to the listener. Panics if any step fails (the
/// stack no longer does what a plain exchange asks: a bug too).
fn prepare() -> (Session, Facts) {
    let mut network = Network::new(0);
    network.add_ethernet(GUEST_MAC, MTU);
    let mut now = MILLISECOND;
    let discover = poll_and_take(&mut network, now);
    let (_, offered) = discover.iter().find_map(|frame| frames::dhcp_sent(frame)).expect("a DHCP discover");
    network.deliver(frames::dhcp(DontFragment::Set, 2, offered, Some(frames::PEER_IP)));
    now += MILLISECOND;
    // The request is a transaction of its own.
    let request = poll_and_take(&mut network, now);
    let (_, transaction) = request.iter().find_map(|frame| frames::dhcp_sent(frame)).expect("a DHCP request");
    network.deliver(frames::dhcp(DontFragment::Set, 5, transaction, Some(frames::PEER_IP)));
    now += MILLISECOND;
    poll_and_take(&mut network, now);
    assert!(matches!(network.ethernet_configuration(), Some(net::DhcpNews::Configured { .. })), "DHCP gave no address");
    let any = IpAddress::Ipv4(Ipv4Address::UNSPECIFIED);
    let listener = network.open(Family::V4, SocketKind::Stream).expect("a socket");
    network.bind(listener, IpEndpoint::new(any, LISTEN_PORT)).expect("bind");
    network.listen(listener, 4).expect("listen");
    let datagram = network.open(Family::V4, SocketKind::Datagram).expect("a socket");
    network.bind(datagram, IpEndpoint::new(any, DATAGRAM_PORT)).expect("bind");
    network.bound(datagram).expect("bound");
    let (connection, guest_sequence) = connect_peer(&mut network, listener, &mut now);
    (Session { network, listener, datagram, connection, now }, Facts { transaction, guest_sequence })
}

/// The peer's handshake with the listener (answering the guest's ARP
/// request if it asks who the peer is); the accepted connection and the
/// guest's next sequence number.
fn connect_peer(network: &mut Network, listener: SocketId, now: &mut u64) -> (SocketId, u32) {
    let syn = Segment { ports: (PEER_PORT, LISTEN_PORT), sequence: PEER_SEQUENCE, acknowledgement: 0, flags: TCP_SYN };
    network.deliver(frames::tcp_to_guest(DontFragment::Set, syn, &[2, 4, 0x05, 0xb4], b""));
    let mut synack = None;
    for _ in 0..3 {
        *now += MILLISECOND;
        for frame in poll_and_take(network, *now) {
            if frames::kind_of_sent(&frame) == "arp?" {
                network.deliver(frames::arp(2, GUEST_MAC, GUEST_MAC, GUEST_IP));
            }
            synack = synack.or(frames::tcp_sent(&frame).filter(|(_, _, flags)| *flags == TCP_SYN | TCP_ACK));
        }
    }
    let (sequence, _, _) = synack.expect("a SYN-ACK to the peer's SYN");
    let ack = Segment { ports: (PEER_PORT, LISTEN_PORT), sequence: PEER_SEQUENCE + 1, acknowledgement: sequence.wrapping_add(1), flags: TCP_ACK };
    network.deliver(frames::tcp_to_guest(DontFragment::Set, ack, &[], b""));
    *now += MILLISECOND;
    poll_and_take(network, *now);
    let connection = network.accept(listener).expect("the peer's connection accepted");
    (connection, sequence.wrapping_add(1))
}

/// Keeps the heap from shrinking under the next input: a network's socket
/// buffers (about a megabyte, zeroed) freed at the top of the heap were
/// given back to the system and faulted in again by the next set-up, which
/// cost four times what the rest of the input did. glibc raises its trim
/// threshold to twice the size of the largest mapped block freed, so one
/// 16 MiB block, mapped and freed once, keeps freed memory for reuse.
/// (Elsewhere it costs one allocation.)
fn keep_heap() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(16 << 20))));
}

fn facts() -> &'static Facts {
    static FACTS: OnceLock<Facts> = OnceLock::new();
    FACTS.get_or_init(|| prepare().1)
}

/// The frames of `input`: each a 2-byte big-endian length and its bytes
/// (the last one cut short by the input's end), at most [`FRAMES`].
fn frames_of(input: &[u8]) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut at = 0;
    while at + 2 <= input.len() && found.len() < FRAMES {
        let length = usize::from(u16::from_be_bytes([input[at], input[at + 1]]));
        let end = (at + 2 + length).min(input.len());
        found.push(at + 2..end);
        at = end;
    }
    found
}

fn sequence_of(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut input = Vec::new();
    for frame in frames {
        input.extend_from_slice(&(frame.len() as u16).to_be_bytes());
        input.extend_from_slice(frame);
    }
    input
}

/// A segment from the peer on the set-up's connection.
fn on_connection(facts: &Facts, flags: u8, payload: &[u8]) -> Vec<u8> {
    let segment = Segment { ports: (PEER_PORT, LISTEN_PORT), sequence: PEER_SEQUENCE + 1, acknowledgement: facts.guest_sequence, flags };
    frames::tcp_to_guest(DontFragment::Set, segment, &[], payload)
}

/// The guest's IPv6 link-local address (from its MAC).
fn guest_link_local() -> [u8; 16] {
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, GUEST_MAC[0] ^ 2, GUEST_MAC[1], GUEST_MAC[2], 0xff, 0xfe, GUEST_MAC[3], GUEST_MAC[4], GUEST_MAC[5]]
}

/// One frame drawn by what it is, its fields near what the stack expects.
fn random_frame(random: &mut Rng, facts: &Facts) -> Vec<u8> {
    let port = |random: &mut Rng| [LISTEN_PORT, DATAGRAM_PORT, PEER_PORT, 68, 0, boundary_value(random) as u16][random.below(6)];
    match random.below(8) {
        0 | 1 => {
            let flags = [TCP_SYN, TCP_ACK, TCP_PSH | TCP_ACK, TCP_FIN | TCP_ACK, TCP_RST, TCP_SYN | TCP_FIN, random.next_u64() as u8][random.below(7)];
            let near = |random: &mut Rng, base: u32| base.wrapping_add(random.below(3000) as u32).wrapping_sub(1000);
            let segment = Segment { ports: (port(random), port(random)), sequence: near(random, PEER_SEQUENCE + 1), acknowledgement: near(random, facts.guest_sequence), flags };
            let options: &[u8] = [&[][..], &[2, 4, 0x05, 0xb4], &[1, 3, 3, 14], &[4, 2, 1, 1], &[8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1]][random.below(5)];
            let payload = vec![b'x'; [0, 1, 100, 1400][random.below(4)]];
            frames::tcp_to_guest(DontFragment::Set, segment, options, &payload)
        }
        2 => frames::udp_to_guest(DontFragment::Set, (port(random), port(random)), &vec![b'u'; random.below(64)]),
        3 => frames::to_guest(DontFragment::Set, frames::PROTOCOL_ICMP, &frames::icmp_echo(random.next_u64() as u16, 1, &vec![0; random.below(64)])),
        4 => frames::arp([1, 2][random.below(2)], [frames::BROADCAST_MAC, GUEST_MAC][random.below(2)], [[0; 6], GUEST_MAC][random.below(2)], [GUEST_IP, frames::PEER_IP, [10, 0, 2, 99]][random.below(3)]),
        5 if random.coin() => frames::neighbour_solicitation(guest_link_local()),
        5 => {
            // TCP from nowhere or to everyone: never for a socket.
            let flags = [TCP_SYN, TCP_ACK, TCP_RST, TCP_FIN][random.below(4)];
            let segment = Segment { ports: (port(random), port(random)), sequence: PEER_SEQUENCE + 1, acknowledgement: facts.guest_sequence, flags };
            let addresses = [[0; 4], [255; 4], SUBNET_BROADCAST, [224, 0, 0, 1], frames::PEER_IP, GUEST_IP];
            frames::tcp_between(addresses[random.below(6)], addresses[random.below(6)], segment)
        }
        6 => {
            let kind = [2, 5, 6, random.next_u64() as u8][random.below(4)];
            let transaction = if random.coin() { facts.transaction } else { (random.next_u64() as u32).to_be_bytes() };
            frames::dhcp(DontFragment::Set, kind, transaction, Some(frames::PEER_IP))
        }
        _ => {
            let length = random.below(LARGEST_FRAME + 16);
            (0..length).map(|_| random.next_u64() as u8).collect()
        }
    }
}

/// Panics unless a frame the stack sent fits the link and is sound.
fn check_sent(frame: &[u8]) {
    assert!(frame.len() <= LARGEST_FRAME, "a frame of {} bytes on a {MTU}-byte link", frame.len());
    assert!(frame.len() >= frames::ETHERNET_HEADER, "a frame of {} bytes", frame.len());
    assert_eq!(frame[6..12], GUEST_MAC, "a frame sent from another MAC");
    assert_ne!(frames::ipv4_header_sound(frame), Some(false), "an IPv4 frame with a broken header: {frame:02x?}");
    if let (Some((source, destination)), Some(_)) = (frames::ipv4_addresses(frame), frames::tcp_sent(frame)) {
        // TCP is unicast only (RFC 1122 4.2.3.10), in both directions.
        let unicast = |address: [u8; 4]| ![[0; 4], [255; 4], SUBNET_BROADCAST].contains(&address) && !(224..240).contains(&address[0]);
        assert!(unicast(source) && unicast(destination), "a TCP segment from {source:?} to {destination:?}");
    }
}

fn readiness_letters(readiness: Result<Readiness, net::Errno>) -> String {
    match readiness {
        Ok(ready) => [(ready.readable, 'r'), (ready.writable, 'w'), (ready.hangup, 'h'), (ready.error, 'e')].iter().map(|&(on, letter)| if on { letter } else { '-' }).collect(),
        Err(errno) => format!("errno {}", errno.0),
    }
}

/// Takes what arrived for the sockets: connections, datagrams, bytes.
fn drain(session: &mut Session) -> String {
    let network = &mut session.network;
    let mut accepted = 0;
    while let Ok(connection) = network.accept(session.listener) {
        accepted += 1;
        let _ = network.peer_name(connection);
        network.close(connection);
    }
    let mut buffer = vec![0u8; 2048];
    let mut datagrams = 0;
    while let Ok(received) = network.receive(session.datagram, &mut buffer, false) {
        assert!(received.copied <= received.length.min(buffer.len()), "{received:?}");
        datagrams += 1;
    }
    let mut bytes = 0;
    while let Ok(received) = network.receive(session.connection, &mut buffer, false) {
        if received.copied == 0 {
            break;
        }
        bytes += received.copied;
    }
    let error = network.take_error(session.connection).ok().flatten().map_or(0, |errno| errno.0);
    format!("accepted {} datagrams {} bytes {} error {error}", accepted.min(2), datagrams.min(2), bytes.min(1))
}

impl Target for Packets {
    fn name(&self) -> &'static str {
        "packets"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        let facts = facts();
        let syn_segment = |port: u16| Segment { ports: (port, LISTEN_PORT), sequence: 7, acknowledgement: 0, flags: TCP_SYN };
        let syn = |port: u16| frames::tcp_to_guest(DontFragment::Set, syn_segment(port), &[2, 4, 0x05, 0xb4], b"");
        let dhcp = |kind: u8| frames::dhcp(DontFragment::Set, kind, facts.transaction, Some(frames::PEER_IP));
        let samples = vec![
            vec![frames::arp(1, frames::BROADCAST_MAC, [0; 6], GUEST_IP)],
            vec![frames::arp(2, GUEST_MAC, GUEST_MAC, GUEST_IP)],
            vec![syn(40_001)],
            vec![frames::udp_to_guest(DontFragment::Set, (5000, DATAGRAM_PORT), b"hello, port 7")],
            vec![frames::to_guest(DontFragment::Set, frames::PROTOCOL_ICMP, &frames::icmp_echo(0x4242, 1, b"ping payload"))],
            vec![frames::neighbour_solicitation(guest_link_local())],
            vec![dhcp(2), dhcp(5)],
            vec![dhcp(6)],
            vec![on_connection(facts, TCP_PSH | TCP_ACK, b"GET / HTTP/1.0\r\n\r\n")],
            vec![on_connection(facts, TCP_PSH | TCP_ACK, b"bye"), on_connection(facts, TCP_FIN | TCP_ACK, b"")],
            vec![on_connection(facts, TCP_RST, b"")],
            // TCP from nowhere and to everyone: never answered.
            vec![frames::tcp_between([0; 4], GUEST_IP, syn_segment(40_004)), frames::tcp_between(frames::PEER_IP, SUBNET_BROADCAST, syn_segment(40_005))],
            vec![syn(40_002), syn(40_003), frames::udp_to_guest(DontFragment::Set, (53, DATAGRAM_PORT), b"x"), frames::to_guest(DontFragment::Set, frames::PROTOCOL_ICMP, &frames::icmp_echo(1, 2, b""))],
        ];
        samples.iter().map(|frames| sequence_of(frames)).collect()
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let facts = facts();
        let frames: Vec<Vec<u8>> = (0..1 + random.below(FRAMES)).map(|_| random_frame(random, facts)).collect();
        let mut input = sequence_of(&frames);
        input.truncate(self.max_len());
        input
    }

    fn max_len(&self) -> usize {
        4096
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        let ranges: Vec<Range<usize>> = frames_of(input).into_iter().map(|frame| frame.start - 2..frame.end.min(frame.start + HEADERS)).collect();
        if ranges.is_empty() {
            return std::iter::once(0..input.len()).collect();
        }
        ranges
    }

    fn repair(&self, input: &mut Vec<u8>) {
        for frame in frames_of(input) {
            frames::repair(&mut input[frame]);
        }
    }

    fn run(&self, input: &[u8]) -> String {
        keep_heap();
        let (mut session, _) = prepare();
        let mut sent = Vec::new();
        for frame in frames_of(input) {
            session.network.deliver(input[frame].to_vec());
            session.now += MILLISECOND;
            sent.extend(poll_and_take(&mut session.network, session.now));
        }
        // Time runs on: delayed ACKs, retransmissions, ARP and DHCP retries.
        for delay in [250, 1_500, 10_000] {
            sent.extend(poll_and_take(&mut session.network, session.now + delay * MILLISECOND));
        }
        sent.iter().for_each(|frame| check_sent(frame));
        let mut kinds: Vec<&str> = sent.iter().map(|frame| frames::kind_of_sent(frame)).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let count = match sent.len() {
            0..=2 => sent.len().to_string(),
            3..=5 => "3-5".into(),
            _ => "6+".into(),
        };
        let listening = session.network.is_listening(session.listener);
        let ready = [session.listener, session.datagram, session.connection].map(|socket| readiness_letters(session.network.readiness(socket)));
        let drained = drain(&mut session);
        format!("sent {count} [{}] listening {listening} ready {} {} {} {drained}", kinds.join(" "), ready[0], ready[1], ready[2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_reach_the_sockets_they_are_for() {
        let labels: Vec<String> = Packets.samples().iter().map(|sample| Packets.run(sample)).collect();
        assert!(labels[0].contains("arp!"), "an ARP request for the guest is answered: {}", labels[0]);
        assert!(labels[2].contains("syn"), "a SYN is answered: {}", labels[2]);
        assert!(labels[3].contains("datagrams 1"), "{}", labels[3]);
        assert!(labels[4].contains("pong"), "{}", labels[4]);
        assert!(labels[8].contains("bytes 1"), "{}", labels[8]);
        assert!(labels[11].starts_with("sent 0 []"), "TCP from nowhere or to everyone is never answered: {}", labels[11]);
    }

    #[test]
    fn frames_are_read_as_lengths_and_bytes_and_a_cut_frame_ends_the_input() {
        assert_eq!(frames_of(&[0, 2, 9, 9, 0, 5, 1]), [2..4, 6..7]);
        assert!(frames_of(&[0]).is_empty());
    }
}
