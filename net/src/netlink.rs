//! Route netlink (`NETLINK_ROUTE`) as Linux answers the requests programs
//! make to learn the machine's interfaces and addresses: `RTM_GETLINK` and
//! `RTM_GETADDR`, as dumps (musl's `if_nameindex` and `getifaddrs`,
//! BusyBox `ip link` / `ip addr`) or for one interface. Pure: a request
//! datagram in, reply datagrams out, with Linux's layouts
//! (`linux/netlink.h`, `linux/rtnetlink.h`, `linux/if_link.h`,
//! `linux/if_addr.h`).
//!
//! Every request that changes something (a new address, a route) is
//! refused with `EOPNOTSUPP` in an `NLMSG_ERROR`; so are the kinds not
//! answered here (routes, neighbours). A malformed message ends the
//! datagram's processing, as on Linux: nothing after it is read. Must
//! never panic on any input.

use alloc::vec::Vec;

use smoltcp::wire::IpAddress;

/// `NLMSG_ERROR`, `NLMSG_DONE`.
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// Types below this are netlink's own control messages.
const NLMSG_MIN_TYPE: u16 = 0x10;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_MULTI: u16 = 0x2;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const IFLA_ADDRESS: u16 = 1;
const IFLA_BROADCAST: u16 = 2;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_TXQLEN: u16 = 13;
const IFLA_OPERSTATE: u16 = 16;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_LABEL: u16 = 3;
const IFA_BROADCAST: u16 = 4;
const ARPHRD_ETHER: u16 = 1;
const ARPHRD_LOOPBACK: u16 = 772;
const IFF_UP: u32 = 0x1;
const IFF_BROADCAST: u32 = 0x2;
const IFF_LOOPBACK: u32 = 0x8;
const IFF_RUNNING: u32 = 0x40;
const IFF_MULTICAST: u32 = 0x1000;
const IFF_LOWER_UP: u32 = 0x1_0000;
/// `IF_OPER_UNKNOWN` (loopback), `IF_OPER_UP`.
const OPER_UNKNOWN: u8 = 0;
const OPER_UP: u8 = 6;
const IFA_F_PERMANENT: u8 = 0x80;
const RT_SCOPE_UNIVERSE: u8 = 0;
const RT_SCOPE_LINK: u8 = 253;
const RT_SCOPE_HOST: u8 = 254;
const AF_UNSPEC: u8 = 0;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
/// `EOPNOTSUPP`, `ENODEV`, `EINVAL` (negated in `NLMSG_ERROR`).
const EOPNOTSUPP: i32 = 95;
const ENODEV: i32 = 19;
const EINVAL: i32 = 22;
/// `sizeof(struct nlmsghdr)`.
const HEADER: usize = 16;
/// The transmit queue length reported (`IFLA_TXQLEN`, `SIOCGIFTXQLEN`): Linux's default.
pub const TRANSMIT_QUEUE_LENGTH: u32 = 1000;
/// Reply datagrams stay below this (musl reads with an 8 KiB buffer).
const DATAGRAM_LIMIT: usize = 4096;

/// One interface as netlink reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// Its index (1 is loopback).
    pub index: u32,
    /// Its name (`lo`, `eth0`).
    pub name: &'static str,
    /// The loopback interface.
    pub loopback: bool,
    /// Its hardware address (zeros for loopback).
    pub hardware: [u8; 6],
    /// Its MTU.
    pub mtu: u32,
    /// Its addresses with their prefix lengths, in the order they were set.
    pub addresses: Vec<(IpAddress, u8)>,
}

/// A request message's header.
#[derive(Debug, Clone, Copy)]
struct Header {
    length: usize,
    kind: u16,
    flags: u16,
    sequence: u32,
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn align(length: usize) -> usize {
    length.div_ceil(4) * 4
}

/// The messages of a reply, packed into datagrams below the limit.
struct Reply {
    datagrams: Vec<Vec<u8>>,
    port: u32,
}

impl Reply {
    /// Appends a message of `kind` with `flags`, echoing `sequence`, whose
    /// body `write` fills.
    fn message(&mut self, kind: u16, flags: u16, sequence: u32, write: impl FnOnce(&mut Vec<u8>)) {
        let mut message = Vec::new();
        message.extend_from_slice(&[0; HEADER]);
        write(&mut message);
        let length = message.len() as u32;
        message[0..4].copy_from_slice(&length.to_le_bytes());
        message[4..6].copy_from_slice(&kind.to_le_bytes());
        message[6..8].copy_from_slice(&flags.to_le_bytes());
        message[8..12].copy_from_slice(&sequence.to_le_bytes());
        message[12..16].copy_from_slice(&self.port.to_le_bytes());
        message.resize(align(message.len()), 0);
        match self.datagrams.last_mut() {
            Some(last) if last.len() + message.len() <= DATAGRAM_LIMIT => last.extend_from_slice(&message),
            _ => self.datagrams.push(message),
        }
    }

    /// Ends the current datagram: what follows starts a new one.
    fn close_datagram(&mut self) {
        self.datagrams.push(Vec::new());
    }

    fn done(&mut self, sequence: u32) {
        self.message(NLMSG_DONE, NLM_F_MULTI, sequence, |body| body.extend_from_slice(&0i32.to_le_bytes()));
    }

    /// `NLMSG_ERROR` for `request` (`error` 0: an acknowledgement, which
    /// carries only the request's header; an error carries it whole).
    fn error(&mut self, request: &[u8], header: &Header, error: i32) {
        self.message(NLMSG_ERROR, 0, header.sequence, |body| {
            body.extend_from_slice(&(-error).to_le_bytes());
            let echoed = if error == 0 { HEADER } else { header.length };
            body.extend_from_slice(&request[..echoed.min(request.len())]);
        });
    }
}

fn attribute(body: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let length = (4 + value.len()) as u16;
    body.extend_from_slice(&length.to_le_bytes());
    body.extend_from_slice(&kind.to_le_bytes());
    body.extend_from_slice(value);
    body.resize(align(body.len()), 0);
}

impl InterfaceInfo {
    /// Its `IFF_*` flags (up and running; loopback, or broadcast and multicast).
    pub fn flags(&self) -> u32 {
        if self.loopback {
            IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP
        } else {
            IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST | IFF_LOWER_UP
        }
    }

    /// Its `ARPHRD_*` hardware type.
    pub fn hardware_type(&self) -> u16 {
        if self.loopback {
            ARPHRD_LOOPBACK
        } else {
            ARPHRD_ETHER
        }
    }
}

fn link_body(body: &mut Vec<u8>, interface: &InterfaceInfo) {
    let (kind, flags) = (interface.hardware_type(), interface.flags());
    // struct ifinfomsg: family, pad, type, index, flags, change.
    body.extend_from_slice(&[AF_UNSPEC, 0]);
    body.extend_from_slice(&kind.to_le_bytes());
    body.extend_from_slice(&interface.index.to_le_bytes());
    body.extend_from_slice(&flags.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    let mut name = Vec::from(interface.name.as_bytes());
    name.push(0);
    attribute(body, IFLA_IFNAME, &name);
    attribute(body, IFLA_TXQLEN, &TRANSMIT_QUEUE_LENGTH.to_le_bytes());
    attribute(body, IFLA_OPERSTATE, &[if interface.loopback { OPER_UNKNOWN } else { OPER_UP }]);
    attribute(body, IFLA_MTU, &interface.mtu.to_le_bytes());
    attribute(body, IFLA_ADDRESS, &interface.hardware);
    let broadcast = if interface.loopback { [0; 6] } else { [0xff; 6] };
    attribute(body, IFLA_BROADCAST, &broadcast);
}

fn address_body(body: &mut Vec<u8>, interface: &InterfaceInfo, address: IpAddress, prefix: u8) {
    let (family, bytes): (u8, Vec<u8>) = match address {
        IpAddress::Ipv4(v4) => (AF_INET, v4.octets().to_vec()),
        IpAddress::Ipv6(v6) => (AF_INET6, v6.octets().to_vec()),
    };
    let scope = if interface.loopback {
        RT_SCOPE_HOST
    } else if matches!(address, IpAddress::Ipv6(v6) if v6.is_unicast_link_local()) {
        RT_SCOPE_LINK
    } else {
        RT_SCOPE_UNIVERSE
    };
    let flags = if interface.loopback { IFA_F_PERMANENT } else { 0 };
    // struct ifaddrmsg: family, prefix length, flags, scope, index.
    body.extend_from_slice(&[family, prefix, flags, scope]);
    body.extend_from_slice(&interface.index.to_le_bytes());
    attribute(body, IFA_ADDRESS, &bytes);
    if let IpAddress::Ipv4(v4) = address {
        attribute(body, IFA_LOCAL, &bytes);
        if !interface.loopback && prefix < 31 {
            let host_bits = u32::MAX.checked_shr(u32::from(prefix)).unwrap_or(0);
            let broadcast = u32::from_be_bytes(v4.octets()) | host_bits;
            attribute(body, IFA_BROADCAST, &broadcast.to_be_bytes());
        }
        let mut label = Vec::from(interface.name.as_bytes());
        label.push(0);
        attribute(body, IFA_LABEL, &label);
    }
}

/// The interface a single `RTM_GETLINK` names: by index, else by an
/// `IFLA_IFNAME` attribute.
fn named_link<'i>(message: &[u8], interfaces: &'i [InterfaceInfo]) -> Option<&'i InterfaceInfo> {
    let index = u32_at(message, HEADER + 4)?;
    if index != 0 {
        return interfaces.iter().find(|interface| interface.index == index);
    }
    let mut at = HEADER + 16;
    while let (Some(length), Some(kind)) = (u16_at(message, at), u16_at(message, at + 2)) {
        let length = usize::from(length);
        if length < 4 || at + length > message.len() {
            return None;
        }
        if kind == IFLA_IFNAME {
            let value = &message[at + 4..at + length];
            let name = value.split(|byte| *byte == 0).next().unwrap_or_default();
            return interfaces.iter().find(|interface| interface.name.as_bytes() == name);
        }
        at += align(length);
    }
    None
}

/// The replies to the request datagram `request` from port `port`, given
/// the interfaces: each a datagram the socket receives in order.
pub fn answer(request: &[u8], port: u32, interfaces: &[InterfaceInfo]) -> Vec<Vec<u8>> {
    let mut reply = Reply { datagrams: Vec::new(), port };
    let mut at = 0;
    while let (Some(length), Some(kind), Some(flags), Some(sequence)) =
        (u32_at(request, at), u16_at(request, at + 4), u16_at(request, at + 6), u32_at(request, at + 8))
    {
        let length = length as usize;
        if length < HEADER || length > request.len() - at {
            break;
        }
        let header = Header { length, kind, flags, sequence };
        let message = &request[at..at + length];
        answer_one(&mut reply, message, &header, interfaces);
        at += align(length);
    }
    reply.datagrams.retain(|datagram| !datagram.is_empty());
    reply.datagrams
}

fn answer_one(reply: &mut Reply, message: &[u8], header: &Header, interfaces: &[InterfaceInfo]) {
    if header.flags & NLM_F_REQUEST == 0 || header.kind < NLMSG_MIN_TYPE {
        return;
    }
    let dump = header.flags & NLM_F_DUMP == NLM_F_DUMP;
    let outcome = match header.kind {
        RTM_GETLINK if dump => {
            for interface in interfaces {
                reply.message(RTM_NEWLINK, NLM_F_MULTI, header.sequence, |body| link_body(body, interface));
            }
            reply.done(header.sequence);
            reply.close_datagram();
            return;
        }
        RTM_GETLINK => match named_link(message, interfaces) {
            Some(interface) => {
                reply.message(RTM_NEWLINK, 0, header.sequence, |body| link_body(body, interface));
                0
            }
            None if message.len() < HEADER + 16 => EINVAL,
            None => ENODEV,
        },
        RTM_GETADDR if dump => {
            let family = message.get(HEADER).copied().unwrap_or(AF_UNSPEC);
            for wanted in [AF_INET, AF_INET6] {
                if family != AF_UNSPEC && family != wanted {
                    continue;
                }
                for interface in interfaces {
                    for &(address, prefix) in &interface.addresses {
                        let of_family = matches!((address, wanted), (IpAddress::Ipv4(_), AF_INET) | (IpAddress::Ipv6(_), AF_INET6));
                        if of_family {
                            reply.message(RTM_NEWADDR, NLM_F_MULTI, header.sequence, |body| address_body(body, interface, address, prefix));
                        }
                    }
                }
            }
            reply.done(header.sequence);
            reply.close_datagram();
            return;
        }
        _ => EOPNOTSUPP,
    };
    if outcome != 0 || header.flags & NLM_F_ACK != 0 {
        reply.error(message, header, outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smoltcp::wire::{Ipv4Address, Ipv6Address};

    fn interfaces() -> Vec<InterfaceInfo> {
        alloc::vec![
            InterfaceInfo {
                index: 1,
                name: "lo",
                loopback: true,
                hardware: [0; 6],
                mtu: 65536,
                addresses: alloc::vec![(IpAddress::Ipv4(Ipv4Address::LOCALHOST), 8), (IpAddress::Ipv6(Ipv6Address::LOCALHOST), 128)],
            },
            InterfaceInfo {
                index: 2,
                name: "eth0",
                loopback: false,
                hardware: [0x52, 0x54, 0, 0x12, 0x34, 0x56],
                mtu: 1500,
                addresses: alloc::vec![(IpAddress::Ipv4(Ipv4Address::new(10, 0, 2, 15)), 24)],
            },
        ]
    }

    fn request(kind: u16, flags: u16, sequence: u32, body: &[u8]) -> Vec<u8> {
        let mut message = Vec::new();
        message.extend_from_slice(&((HEADER + body.len()) as u32).to_le_bytes());
        message.extend_from_slice(&kind.to_le_bytes());
        message.extend_from_slice(&flags.to_le_bytes());
        message.extend_from_slice(&sequence.to_le_bytes());
        message.extend_from_slice(&0u32.to_le_bytes());
        message.extend_from_slice(body);
        message
    }

    /// (type, flags, sequence, port, body) of every message of a datagram.
    fn messages(datagram: &[u8]) -> Vec<(u16, u16, u32, u32, Vec<u8>)> {
        let mut found = Vec::new();
        let mut at = 0;
        while at < datagram.len() {
            let length = u32_at(datagram, at).unwrap() as usize;
            assert!(length >= HEADER && at + length <= datagram.len(), "message length {length} at {at}");
            found.push((
                u16_at(datagram, at + 4).unwrap(),
                u16_at(datagram, at + 6).unwrap(),
                u32_at(datagram, at + 8).unwrap(),
                u32_at(datagram, at + 12).unwrap(),
                datagram[at + HEADER..at + length].to_vec(),
            ));
            at += align(length);
        }
        found
    }

    fn attribute_of(body: &[u8], start: usize, wanted: u16) -> Option<Vec<u8>> {
        let mut at = start;
        while at + 4 <= body.len() {
            let length = usize::from(u16_at(body, at)?);
            if u16_at(body, at + 2)? == wanted {
                return Some(body[at + 4..at + length].to_vec());
            }
            at += align(length.max(4));
        }
        None
    }

    #[test]
    fn a_link_dump_lists_every_interface_then_done_with_the_callers_sequence_and_port() {
        let replies = answer(&request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 7, &[AF_UNSPEC, 0, 0, 0]), 4242, &interfaces());
        assert_eq!(replies.len(), 1, "a small dump is one datagram");
        let found = messages(&replies[0]);
        assert_eq!(found.iter().map(|message| message.0).collect::<Vec<_>>(), [RTM_NEWLINK, RTM_NEWLINK, NLMSG_DONE]);
        assert!(found.iter().all(|message| message.1 == NLM_F_MULTI && message.2 == 7 && message.3 == 4242));
        let lo = &found[0].4;
        assert_eq!(u16_at(lo, 2), Some(ARPHRD_LOOPBACK));
        assert_eq!(u32_at(lo, 4), Some(1));
        assert_eq!(u32_at(lo, 8).unwrap() & IFF_LOOPBACK, IFF_LOOPBACK);
        assert_eq!(attribute_of(lo, 16, IFLA_IFNAME).as_deref(), Some(&b"lo\0"[..]));
        let eth = &found[1].4;
        assert_eq!(attribute_of(eth, 16, IFLA_ADDRESS).as_deref(), Some(&[0x52, 0x54, 0, 0x12, 0x34, 0x56][..]));
        assert_eq!(attribute_of(eth, 16, IFLA_MTU), Some(1500u32.to_le_bytes().to_vec()));
        assert_eq!(found[2].4, 0i32.to_le_bytes());
    }

    #[test]
    fn an_address_dump_gives_ipv4_then_ipv6_and_filters_by_family() {
        let all = answer(&request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 1, &[AF_UNSPEC, 0, 0, 0, 0, 0, 0, 0]), 9, &interfaces());
        let found = messages(&all[0]);
        let families: Vec<(u8, u32)> = found.iter().filter(|message| message.0 == RTM_NEWADDR).map(|message| (message.4[0], u32_at(&message.4, 4).unwrap())).collect();
        assert_eq!(families, [(AF_INET, 1), (AF_INET, 2), (AF_INET6, 1)]);
        let eth = &found[1].4;
        assert_eq!(eth[1], 24, "prefix length");
        assert_eq!(attribute_of(eth, 8, IFA_LOCAL).as_deref(), Some(&[10, 0, 2, 15][..]));
        assert_eq!(attribute_of(eth, 8, IFA_BROADCAST).as_deref(), Some(&[10, 0, 2, 255][..]));
        assert_eq!(found[0].4[3], RT_SCOPE_HOST, "loopback addresses are host-scoped");
        let six = answer(&request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 1, &[AF_INET6, 0, 0, 0, 0, 0, 0, 0]), 9, &interfaces());
        let found = messages(&six[0]);
        assert_eq!(found.len(), 2, "::1 and done");
        assert_eq!(attribute_of(&found[0].4, 8, IFA_ADDRESS), Some(Ipv6Address::LOCALHOST.octets().to_vec()));
    }

    #[test]
    fn one_link_by_index_or_name_and_errors_carry_the_request() {
        let mut by_index = Vec::from([AF_UNSPEC, 0, 0, 0]);
        by_index.extend_from_slice(&2i32.to_le_bytes());
        by_index.extend_from_slice(&[0; 8]);
        let replies = answer(&request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 3, &by_index), 5, &interfaces());
        let found = messages(&replies[0]);
        assert_eq!(found.iter().map(|message| (message.0, message.1)).collect::<Vec<_>>(), [(RTM_NEWLINK, 0), (NLMSG_ERROR, 0)]);
        assert_eq!(found[1].4[..4], 0i32.to_le_bytes(), "an acknowledgement");
        assert_eq!(found[1].4.len(), 4 + HEADER, "an acknowledgement carries the header only");
        let mut by_name = Vec::from([AF_UNSPEC, 0, 0, 0]);
        by_name.extend_from_slice(&[0; 12]);
        attribute(&mut by_name, IFLA_IFNAME, b"lo\0");
        let replies = answer(&request(RTM_GETLINK, NLM_F_REQUEST, 4, &by_name), 5, &interfaces());
        assert_eq!(u32_at(&messages(&replies[0])[0].4, 4), Some(1));
        let mut missing = Vec::from([AF_UNSPEC, 0, 0, 0]);
        missing.extend_from_slice(&9i32.to_le_bytes());
        missing.extend_from_slice(&[0; 8]);
        let sent = request(RTM_GETLINK, NLM_F_REQUEST, 6, &missing);
        let found = messages(&answer(&sent, 5, &interfaces())[0]);
        assert_eq!(found[0].0, NLMSG_ERROR);
        assert_eq!(found[0].4[..4], (-ENODEV).to_le_bytes());
        assert_eq!(found[0].4[4..], sent[..], "an error carries the whole request");
        let change = messages(&answer(&request(RTM_NEWADDR, NLM_F_REQUEST, 8, &[AF_INET, 24, 0, 0, 2, 0, 0, 0]), 5, &interfaces())[0]);
        assert_eq!(found[0].2, 6);
        assert_eq!(change[0].4[..4], (-EOPNOTSUPP).to_le_bytes(), "changes are refused");
    }

    #[test]
    fn malformed_and_non_request_messages_are_ignored_without_a_panic() {
        assert!(answer(&[], 1, &interfaces()).is_empty());
        assert!(answer(&[1, 2, 3], 1, &interfaces()).is_empty());
        let mut lying = request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, &[0; 4]);
        lying[0] = 200;
        assert!(answer(&lying, 1, &interfaces()).is_empty(), "a length past the datagram ends it");
        assert!(answer(&request(RTM_GETLINK, NLM_F_DUMP, 1, &[0; 4]), 1, &interfaces()).is_empty(), "not a request");
        assert!(answer(&request(NLMSG_DONE, NLM_F_REQUEST, 1, &[]), 1, &interfaces()).is_empty(), "control messages");
        let short_get = answer(&request(RTM_GETLINK, NLM_F_REQUEST, 1, &[]), 1, &interfaces());
        assert_eq!(messages(&short_get[0])[0].4[..4], (-EINVAL).to_le_bytes());
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            let length = (seed % 64) as usize;
            let bytes: Vec<u8> = (0..length)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let _ = answer(&bytes, 1, &interfaces());
        }
    }

    #[test]
    fn two_requests_in_one_datagram_are_both_answered_in_order() {
        let mut both = request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, &[0; 4]);
        both.extend_from_slice(&request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 2, &[0; 8]));
        let replies = answer(&both, 1, &interfaces());
        assert_eq!(replies.len(), 2, "each dump ends its datagram");
        assert_eq!(messages(&replies[1]).last().map(|message| (message.0, message.2)), Some((NLMSG_DONE, 2)));
    }
}
