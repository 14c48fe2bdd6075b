//! Route netlink requests from a user program: `net::netlink::answer`.
//! The input's first byte picks the interfaces answered about (the usual
//! loopback and card, none, or a crowd of addresses that needs several
//! datagrams); the rest is the request datagram. Every answer must be a
//! well-formed run of messages: each length field at least a header and
//! inside its datagram, each message echoing the caller's port, each
//! attribute inside its message, and a datagram past the 4 KiB limit only
//! when it holds a single message. Anything else is a bug: a panic.
//! Hot ranges: each request message's header and its first attributes.

use std::ops::Range;

use net::netlink::{answer, InterfaceInfo};
use net::{IpAddress, Ipv4Address, Ipv6Address};

use crate::{boundary_value, Rng, Target};

/// The netlink target.
pub struct Netlink;

const HEADER: usize = 16;
const PORT: u32 = 0x1234_5678;
const DATAGRAM_LIMIT: usize = 4096;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const RTM_GETROUTE: u16 = 26;
const IFLA_IFNAME: u16 = 3;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

fn align(length: usize) -> usize {
    length.div_ceil(4) * 4
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn loopback() -> InterfaceInfo {
    InterfaceInfo {
        index: 1,
        name: "lo",
        loopback: true,
        hardware: [0; 6],
        mtu: 65_536,
        addresses: vec![(IpAddress::Ipv4(Ipv4Address::LOCALHOST), 8), (IpAddress::Ipv6(Ipv6Address::LOCALHOST), 128)],
    }
}

fn card(index: u32, name: &'static str, addresses: Vec<(IpAddress, u8)>) -> InterfaceInfo {
    InterfaceInfo { index, name, loopback: false, hardware: [0x52, 0x54, 0, 0x12, 0x34, index as u8], mtu: 1500, addresses }
}

/// The interfaces answered about, by the input's first byte.
fn interfaces(selector: u8) -> Vec<InterfaceInfo> {
    match selector % 4 {
        0 => vec![loopback(), card(2, "eth0", vec![(IpAddress::Ipv4(Ipv4Address::new(10, 0, 2, 15)), 24), (IpAddress::Ipv6(Ipv6Address::new(0xfe80, 0, 0, 0, 0x5054, 0xff, 0xfe12, 0x3456)), 64)])],
        1 => Vec::new(),
        2 => vec![loopback(), card(2, "eth0", Vec::new())],
        // Enough addresses that a dump needs several datagrams, prefixes at their edges.
        _ => {
            let addresses = (0..120u8).map(|number| (IpAddress::Ipv4(Ipv4Address::new(192, 168, number, 1)), [0, 8, 24, 30, 31, 32][usize::from(number) % 6])).collect();
            let sixes = (0..60u16).map(|number| (IpAddress::Ipv6(Ipv6Address::new(0x2001, 0xdb8, number, 0, 0, 0, 0, 1)), [0, 64, 127, 128][usize::from(number) % 4])).collect();
            vec![loopback(), card(2, "eth0", addresses), card(3, "eth1", sixes), card(4, "eth3", Vec::new())]
        }
    }
}

/// One request message: the header and `body`.
fn request(kind: u16, flags: u16, sequence: u32, body: &[u8]) -> Vec<u8> {
    let mut message = Vec::new();
    message.extend_from_slice(&((HEADER + body.len()) as u32).to_le_bytes());
    message.extend_from_slice(&kind.to_le_bytes());
    message.extend_from_slice(&flags.to_le_bytes());
    message.extend_from_slice(&sequence.to_le_bytes());
    message.extend_from_slice(&0u32.to_le_bytes());
    message.extend_from_slice(body);
    message.resize(align(message.len()), 0);
    message
}

/// A `struct ifinfomsg` for interface `index`, then an `IFLA_IFNAME` if named.
fn link_body(index: i32, name: Option<&[u8]>) -> Vec<u8> {
    let mut body = vec![0u8; 16];
    body[4..8].copy_from_slice(&index.to_le_bytes());
    if let Some(name) = name {
        body.extend_from_slice(&((4 + name.len()) as u16).to_le_bytes());
        body.extend_from_slice(&IFLA_IFNAME.to_le_bytes());
        body.extend_from_slice(name);
        body.resize(align(body.len()), 0);
    }
    body
}

/// With the interface selector in front.
fn with_selector(selector: u8, messages: &[Vec<u8>]) -> Vec<u8> {
    let mut input = vec![selector];
    for message in messages {
        input.extend_from_slice(message);
    }
    input
}

/// Panics unless `datagram` is a well-formed run of messages; (messages, errors).
fn check_datagram(datagram: &[u8]) -> (usize, usize) {
    let (mut at, mut messages, mut errors) = (0, 0, 0);
    while at < datagram.len() {
        assert!(at + HEADER <= datagram.len(), "a message header cut short at {at} of {}", datagram.len());
        let length = u32_at(datagram, at) as usize;
        assert!(length >= HEADER && at + length <= datagram.len(), "message length {length} at {at} in a datagram of {}", datagram.len());
        assert_eq!(u32_at(datagram, at + 12), PORT, "a message not to the caller's port");
        let kind = u16_at(datagram, at + 4);
        check_body(kind, &datagram[at..at + length]);
        errors += usize::from(kind == NLMSG_ERROR && i32::from_le_bytes(datagram[at + 16..at + 20].try_into().unwrap()) != 0);
        messages += 1;
        at += align(length);
    }
    assert!(datagram.len() <= DATAGRAM_LIMIT || messages == 1, "a datagram of {} bytes holds {messages} messages", datagram.len());
    (messages, errors)
}

/// Panics unless a message of `kind` has its fixed part and attributes inside it.
fn check_body(kind: u16, message: &[u8]) {
    let fixed = match kind {
        RTM_NEWLINK => 16,
        RTM_NEWADDR => 8,
        NLMSG_ERROR => 4 + HEADER,
        NLMSG_DONE => 4,
        other => panic!("an answer of unexpected type {other}"),
    };
    assert!(message.len() >= HEADER + fixed, "a message of type {kind} of {} bytes", message.len());
    if kind == NLMSG_ERROR {
        // The echoed request's own length field must fit what was echoed (or
        // only its header was echoed, for an acknowledgement).
        let echoed = &message[HEADER + 4..];
        let claimed = u32_at(echoed, 0) as usize;
        assert!(echoed.len() == HEADER || claimed == echoed.len(), "an error echoes {} bytes of a {claimed}-byte request", echoed.len());
        return;
    }
    let mut at = HEADER + fixed;
    while at < message.len() {
        assert!(at + 4 <= message.len(), "an attribute header cut short at {at}");
        let length = usize::from(u16_at(message, at));
        assert!(length >= 4 && at + length <= message.len(), "attribute length {length} at {at} in a message of {}", message.len());
        at += align(length);
    }
}

impl Target for Netlink {
    fn name(&self) -> &'static str {
        "netlink"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        let dump = NLM_F_REQUEST | NLM_F_DUMP;
        vec![
            // musl's if_nameindex and getifaddrs: a link dump, then an address dump.
            with_selector(0, &[request(RTM_GETLINK, dump, 1, &[0; 16])]),
            with_selector(0, &[request(RTM_GETADDR, dump, 2, &[0; 8])]),
            with_selector(3, &[request(RTM_GETLINK, dump, 1, &[0; 16]), request(RTM_GETADDR, dump, 2, &[AF_INET, 0, 0, 0, 0, 0, 0, 0])]),
            with_selector(3, &[request(RTM_GETADDR, dump, 9, &[AF_INET6, 0, 0, 0, 0, 0, 0, 0])]),
            // `ip link show dev eth0` by index and by name, with an acknowledgement.
            with_selector(0, &[request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 3, &link_body(2, None))]),
            with_selector(2, &[request(RTM_GETLINK, NLM_F_REQUEST, 4, &link_body(0, Some(b"eth0\0")))]),
            with_selector(0, &[request(RTM_GETLINK, NLM_F_REQUEST, 5, &link_body(9, None))]),
            // Changes and kinds not answered: refused.
            with_selector(0, &[request(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK, 6, &[AF_INET, 24, 0, 0, 2, 0, 0, 0])]),
            with_selector(1, &[request(RTM_GETROUTE, dump, 7, &[0; 12])]),
        ]
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let count = 1 + random.below(4);
        let messages: Vec<Vec<u8>> = (0..count)
            .map(|_| {
                let kind = [RTM_GETLINK, RTM_GETADDR, RTM_NEWADDR, RTM_GETROUTE, NLMSG_DONE, boundary_value(random) as u16][random.below(6)];
                let flags = [NLM_F_REQUEST | NLM_F_DUMP, NLM_F_REQUEST, NLM_F_REQUEST | NLM_F_ACK, NLM_F_DUMP, boundary_value(random) as u16][random.below(5)];
                let body = match random.below(4) {
                    0 => link_body([0, 1, 2, -1, boundary_value(random) as i32][random.below(5)], None),
                    1 => link_body(0, Some([&b"lo\0"[..], b"eth0", b"", b"eth0\0junk"][random.below(4)])),
                    2 => vec![[0, AF_INET, AF_INET6, 0xff][random.below(4)]; random.below(12)],
                    _ => (0..random.below(40)).map(|_| random.next_u64() as u8).collect(),
                };
                let mut message = request(kind, flags, random.next_u64() as u32, &body);
                if random.below(4) == 0 {
                    let length = [0u32, 15, 16, 17, message.len() as u32 + 1, boundary_value(random) as u32][random.below(6)];
                    message[..4].copy_from_slice(&length.to_le_bytes());
                }
                message
            })
            .collect();
        with_selector(random.next_u64() as u8, &messages)
    }

    fn max_len(&self) -> usize {
        1024
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        // Each message's header and what follows it, walked as `answer` walks.
        let mut ranges = std::iter::once(0..1.min(input.len())).collect::<Vec<_>>();
        let mut at = 1;
        while at + HEADER <= input.len() {
            ranges.push(at..(at + HEADER + 24).min(input.len()));
            let length = u32_at(input, at) as usize;
            if length < HEADER {
                break;
            }
            at += align(length);
        }
        ranges
    }

    fn run(&self, input: &[u8]) -> String {
        let Some((&selector, request)) = input.split_first() else { return "empty".into() };
        let datagrams = answer(request, PORT, &interfaces(selector));
        let (mut messages, mut errors) = (0, 0);
        for datagram in &datagrams {
            assert!(!datagram.is_empty(), "an empty answer datagram");
            let (count, failed) = check_datagram(datagram);
            messages += count;
            errors += failed;
        }
        format!("{} datagrams, {} messages, {} errors", datagrams.len().min(4), messages.min(8), errors.min(3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_are_answered_and_a_crowd_of_addresses_takes_several_datagrams() {
        let samples = Netlink.samples();
        assert_eq!(Netlink.run(&samples[0]), "1 datagrams, 3 messages, 0 errors");
        assert!(Netlink.run(&samples[2]).starts_with("3 datagrams") || Netlink.run(&samples[2]).starts_with("4 datagrams"), "{}", Netlink.run(&samples[2]));
        assert!(Netlink.run(&samples[7]).ends_with("1 errors"));
    }
}
