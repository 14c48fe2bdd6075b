//! The IP levels of Internet sockets: their options (`IP_TTL`, `IP_TOS`,
//! `IP_PKTINFO`, `IP_RECVTTL`, `IP_RECVTOS`; `IPV6_V6ONLY`,
//! `IPV6_UNICAST_HOPS`, `IPV6_TCLASS`, `IPV6_RECVPKTINFO`,
//! `IPV6_RECVHOPLIMIT`, `IPV6_RECVTCLASS`), what `sendmsg`'s control
//! messages ask of one datagram (`IP_TTL`, `IP_TOS`, `IP_PKTINFO`;
//! `IPV6_HOPLIMIT`, `IPV6_TCLASS`, `IPV6_PKTINFO`) and the control
//! messages `recvmsg` adds to a datagram as the socket asked (RFC 3542
//! and Linux's IPv4 counterparts) — with Linux's checks, values and order.
//!
//! Must not touch the network or the caller's memory: it turns option
//! values and control messages into requests, and arrivals into bytes.

use alloc::vec::Vec;

use net::{Arrival, Family, IpAddress, Options, SendControl, SocketKind};

use super::control_messages::ControlMessage;
use super::sockets::SOL_SOCKET;
use linux_abi::Errno;

pub(super) const IPPROTO_IP: u64 = 0;
pub(super) const IPPROTO_IPV6: u64 = 41;

const IP_TOS: u32 = 1;
const IP_TTL: u32 = 2;
const IP_PKTINFO: u32 = 8;
const IP_RECVTTL: u32 = 12;
const IP_RECVTOS: u32 = 13;
const IPV6_UNICAST_HOPS: u32 = 16;
const IPV6_V6ONLY: u32 = 26;
const IPV6_RECVPKTINFO: u32 = 49;
const IPV6_PKTINFO: u32 = 50;
const IPV6_RECVHOPLIMIT: u32 = 51;
const IPV6_HOPLIMIT: u32 = 52;
const IPV6_RECVTCLASS: u32 = 66;
const IPV6_TCLASS: u32 = 67;
/// `SOL_SOCKET` control messages Linux takes on an Internet socket's
/// `sendmsg` (`SO_MARK`, `SO_TIMESTAMPING`, `SCM_TXTIME`): accepted,
/// nothing to do with them here.
const SOCKET_LEVEL_SENDS: [u32; 3] = [36, 37, 61];
/// The hop limit Linux reports when none was set.
const DEFAULT_HOP_LIMIT: u32 = 64;
/// The ECN bits of a TOS byte or traffic class (a stream keeps its own).
const ECN_MASK: u8 = 3;

/// `setsockopt` at `IPPROTO_IP` or `IPPROTO_IPV6`: `value` is the
/// caller's bytes. ENOPROTOOPT for what Lamina does not have (and for
/// the IPv6 level on an IPv4 socket, as Linux).
pub(super) fn set_option(options: &mut Options, family: Family, kind: SocketKind, level: u64, name: u64, value: &[u8]) -> Result<(), Errno> {
    let name = u32::try_from(name).map_err(|_| Errno::ENOPROTOOPT)?;
    let integer = match value.len() {
        0 => return Err(Errno::EINVAL),
        // The IPv4 level takes a single byte where an int is short (Linux).
        1..=3 if level == IPPROTO_IP => i32::from(value[0]),
        1..=3 => return Err(Errno::EINVAL),
        _ => i32::from_le_bytes([value[0], value[1], value[2], value[3]]),
    };
    let on = integer != 0;
    let receive = &mut options.receive;
    match (level, name) {
        (IPPROTO_IP, IP_TTL) => options.ttl = hop_limit(integer, 1)?,
        (IPPROTO_IP, IP_TOS) => options.tos = keep_ecn(kind, integer as u8, options.tos),
        (IPPROTO_IP, IP_PKTINFO) => receive.ip_packet_info = on,
        (IPPROTO_IP, IP_RECVTTL) => receive.ip_ttl = on,
        (IPPROTO_IP, IP_RECVTOS) => receive.ip_tos = on,
        (IPPROTO_IPV6, _) if family != Family::V6 => return Err(Errno::ENOPROTOOPT),
        (IPPROTO_IPV6, IPV6_V6ONLY) => options.v6_only = on,
        (IPPROTO_IPV6, IPV6_UNICAST_HOPS) => options.unicast_hops = hop_limit(integer, 0)?,
        (IPPROTO_IPV6, IPV6_TCLASS) => options.traffic_class = keep_ecn(kind, traffic_class(integer)?.unwrap_or(0), options.traffic_class),
        (IPPROTO_IPV6, IPV6_RECVPKTINFO) => receive.ipv6_packet_info = on,
        (IPPROTO_IPV6, IPV6_RECVHOPLIMIT) => receive.ipv6_hop_limit = on,
        (IPPROTO_IPV6, IPV6_RECVTCLASS) => receive.ipv6_traffic_class = on,
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(())
}

/// `getsockopt` at `IPPROTO_IP` or `IPPROTO_IPV6`: the value, an int.
pub(super) fn get_option(options: &Options, family: Family, level: u64, name: u64) -> Result<u32, Errno> {
    let name = u32::try_from(name).map_err(|_| Errno::ENOPROTOOPT)?;
    let receive = &options.receive;
    Ok(match (level, name) {
        (IPPROTO_IP, IP_TTL) => options.ttl.map_or(DEFAULT_HOP_LIMIT, u32::from),
        (IPPROTO_IP, IP_TOS) => u32::from(options.tos),
        (IPPROTO_IP, IP_PKTINFO) => u32::from(receive.ip_packet_info),
        (IPPROTO_IP, IP_RECVTTL) => u32::from(receive.ip_ttl),
        (IPPROTO_IP, IP_RECVTOS) => u32::from(receive.ip_tos),
        (IPPROTO_IPV6, _) if family != Family::V6 => return Err(Errno::ENOPROTOOPT),
        (IPPROTO_IPV6, IPV6_V6ONLY) => u32::from(options.v6_only),
        (IPPROTO_IPV6, IPV6_UNICAST_HOPS) => options.unicast_hops.map_or(DEFAULT_HOP_LIMIT, u32::from),
        (IPPROTO_IPV6, IPV6_TCLASS) => u32::from(options.traffic_class),
        (IPPROTO_IPV6, IPV6_RECVPKTINFO) => u32::from(receive.ipv6_packet_info),
        (IPPROTO_IPV6, IPV6_RECVHOPLIMIT) => u32::from(receive.ipv6_hop_limit),
        (IPPROTO_IPV6, IPV6_RECVTCLASS) => u32::from(receive.ipv6_traffic_class),
        _ => return Err(Errno::ENOPROTOOPT),
    })
}

/// A hop limit option's value: -1 is the default (`None`), else
/// `lowest..=255` (IP_TTL: 1, IPV6_UNICAST_HOPS: 0), else EINVAL.
fn hop_limit(value: i32, lowest: i32) -> Result<Option<u8>, Errno> {
    match value {
        -1 => Ok(None),
        _ if (lowest..=255).contains(&value) => Ok(Some(value as u8)),
        _ => Err(Errno::EINVAL),
    }
}

/// A traffic class value: -1 is the default (`None`), else 0..=255.
fn traffic_class(value: i32) -> Result<Option<u8>, Errno> {
    match value {
        -1 => Ok(None),
        0..=255 => Ok(Some(value as u8)),
        _ => Err(Errno::EINVAL),
    }
}

/// A stream's TOS or traffic class keeps the ECN bits TCP owns.
fn keep_ecn(kind: SocketKind, asked: u8, current: u8) -> u8 {
    match kind {
        SocketKind::Stream => asked & !ECN_MASK | current & ECN_MASK,
        SocketKind::Datagram => asked,
    }
}

/// What `sendmsg`'s control messages ask of one datagram. Linux's rules:
/// a message of the socket's IP level it does not know, or of the wrong
/// size or range, is EINVAL; other levels are passed over, but for the
/// few `SOL_SOCKET` ones it takes.
pub(super) fn send_control(family: Family, messages: &[ControlMessage<'_>]) -> Result<SendControl, Errno> {
    let mut control = SendControl::default();
    let own_level = match family {
        Family::V4 => IPPROTO_IP,
        Family::V6 => IPPROTO_IPV6,
    };
    for message in messages {
        if message.level == SOL_SOCKET {
            if !SOCKET_LEVEL_SENDS.contains(&message.kind) {
                return Err(Errno::EINVAL);
            }
            continue;
        }
        if message.level != own_level {
            continue;
        }
        let marks = &mut control.marks;
        match (message.level, message.kind) {
            (IPPROTO_IP, IP_TTL) => marks.hop_limit = Some(hop_limit(message.int()?, 1)?.ok_or(Errno::EINVAL)?),
            (IPPROTO_IP, IP_TOS) => {
                let value = match message.data {
                    [byte] => i32::from(*byte),
                    _ => message.int()?,
                };
                marks.traffic_class = Some(u8::try_from(value).map_err(|_| Errno::EINVAL)?);
            }
            // struct in_pktinfo: index, the source to use, (the header's destination).
            (IPPROTO_IP, IP_PKTINFO) => {
                let info: &[u8; 12] = message.data.try_into().map_err(|_| Errno::EINVAL)?;
                let source = [info[4], info[5], info[6], info[7]];
                control.source = (source != [0; 4]).then(|| IpAddress::Ipv4(source.into()));
            }
            (IPPROTO_IPV6, IPV6_HOPLIMIT) => marks.hop_limit = hop_limit(message.int()?, 0)?,
            (IPPROTO_IPV6, IPV6_TCLASS) => marks.traffic_class = traffic_class(message.int()?)?,
            // struct in6_pktinfo: the source to use, the interface's index.
            (IPPROTO_IPV6, IPV6_PKTINFO) => {
                let info: &[u8; 20] = message.data.try_into().map_err(|_| Errno::EINVAL)?;
                let source: [u8; 16] = info[..16].try_into().map_err(|_| Errno::EINVAL)?;
                control.source = (source != [0; 16]).then(|| IpAddress::Ipv6(source.into()));
            }
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(control)
}

/// The control messages `recvmsg` adds to a datagram that came as
/// `arrival`, as its receiving socket asked, in Linux's order: on an IPv6 socket its
/// packet info, then for an IPv6 packet the hop limit and traffic class,
/// for an IPv4 one (a mapped peer) the IPv4 level's; on an IPv4 socket
/// packet info, TTL, TOS. Each is (level, type, data).
pub(super) fn arrival_messages(family: Family, arrival: &Arrival) -> Vec<(u64, u32, Vec<u8>)> {
    let mut messages = Vec::new();
    let receive = &arrival.asked;
    let int = |value: u8| i32::from(value).to_le_bytes().to_vec();
    if family == Family::V6 && receive.ipv6_packet_info {
        let address = match arrival.to {
            IpAddress::Ipv6(address) => address.octets(),
            IpAddress::Ipv4(address) => address.to_ipv6_mapped().octets(),
        };
        messages.push((IPPROTO_IPV6, IPV6_PKTINFO, [&address[..], &arrival.interface.to_le_bytes()].concat()));
    }
    let hop_limit = arrival.marks.map(|marks| marks.hop_limit);
    let traffic_class = arrival.marks.map(|marks| marks.traffic_class);
    match arrival.to {
        IpAddress::Ipv6(_) => {
            if let (true, Some(hops)) = (receive.ipv6_hop_limit, hop_limit) {
                messages.push((IPPROTO_IPV6, IPV6_HOPLIMIT, int(hops)));
            }
            if let (true, Some(class)) = (receive.ipv6_traffic_class, traffic_class) {
                messages.push((IPPROTO_IPV6, IPV6_TCLASS, int(class)));
            }
        }
        IpAddress::Ipv4(address) => {
            if receive.ip_packet_info {
                // struct in_pktinfo: index, the local address a reply
                // would come from, the header's destination.
                let octets = address.octets();
                messages.push((IPPROTO_IP, IP_PKTINFO, [&arrival.interface.to_le_bytes()[..], &octets, &octets].concat()));
            }
            if let (true, Some(ttl)) = (receive.ip_ttl, hop_limit) {
                messages.push((IPPROTO_IP, IP_TTL, int(ttl)));
            }
            if let (true, Some(tos)) = (receive.ip_tos, traffic_class) {
                messages.push((IPPROTO_IP, IP_TOS, Vec::from([tos])));
            }
        }
    }
    messages
}
