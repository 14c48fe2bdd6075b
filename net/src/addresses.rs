//! `sockaddr_in` and `sockaddr_in6` as Linux lays them out, read from and
//! written to the bytes a system call passes. An IPv6 socket's
//! IPv4-mapped addresses (`::ffff:a.b.c.d`) stand for IPv4 endpoints.
//!
//! Must never trust a length or a family: short addresses are EINVAL,
//! foreign families EAFNOSUPPORT, as Linux answers.

use alloc::vec::Vec;

use smoltcp::wire::{IpAddress, IpEndpoint, Ipv4Address, Ipv6Address};

use crate::Errno;

/// `AF_UNSPEC`.
pub const AF_UNSPEC: u16 = 0;
/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;
/// `sizeof(struct sockaddr_in)`.
pub const SOCKADDR_IN_BYTES: usize = 16;
/// `sizeof(struct sockaddr_in6)`.
pub const SOCKADDR_IN6_BYTES: usize = 28;

/// An Internet socket's address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `AF_INET`.
    V4,
    /// `AF_INET6`.
    V6,
}

impl Family {
    /// The family of `domain` (a `socket` call's first argument).
    pub fn of_domain(domain: u64) -> Option<Family> {
        match domain {
            2 => Some(Family::V4),
            10 => Some(Family::V6),
            _ => None,
        }
    }

    /// Its `AF_*` number.
    pub fn number(self) -> u16 {
        match self {
            Family::V4 => AF_INET,
            Family::V6 => AF_INET6,
        }
    }

    /// The unspecified address of the family (`INADDR_ANY`, `in6addr_any`).
    pub fn any(self) -> IpAddress {
        match self {
            Family::V4 => IpAddress::Ipv4(Ipv4Address::UNSPECIFIED),
            Family::V6 => IpAddress::Ipv6(Ipv6Address::UNSPECIFIED),
        }
    }
}

/// Where packets to `endpoint` go: the unspecified address (0.0.0.0,
/// `::`) as a destination names this host, its loopback address of the
/// family (Linux's route lookup does so; stress-ng's UDP stressor sends
/// to `INADDR_ANY`).
pub(crate) fn this_host(endpoint: IpEndpoint) -> IpEndpoint {
    let address = match endpoint.addr {
        IpAddress::Ipv4(address) if address.is_unspecified() => IpAddress::Ipv4(Ipv4Address::LOCALHOST),
        IpAddress::Ipv6(address) if address.is_unspecified() => IpAddress::Ipv6(Ipv6Address::LOCALHOST),
        address => address,
    };
    IpEndpoint::new(address, endpoint.port)
}

/// What a socket address names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketAddress {
    /// `AF_UNSPEC` (a datagram socket's `connect` to it disconnects).
    Unspecified,
    /// An address and port (port 0: any).
    Ip(IpEndpoint),
}

/// Reads the address in `bytes` for a socket of `family`.
pub fn parse(family: Family, bytes: &[u8]) -> Result<SocketAddress, Errno> {
    if bytes.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let port = |bytes: &[u8]| u16::from_be_bytes([bytes[2], bytes[3]]);
    match (u16::from_le_bytes([bytes[0], bytes[1]]), family) {
        (AF_UNSPEC, _) => Ok(SocketAddress::Unspecified),
        (AF_INET, Family::V4) => {
            if bytes.len() < SOCKADDR_IN_BYTES {
                return Err(Errno::EINVAL);
            }
            let address = Ipv4Address::new(bytes[4], bytes[5], bytes[6], bytes[7]);
            Ok(SocketAddress::Ip(IpEndpoint::new(IpAddress::Ipv4(address), port(bytes))))
        }
        (AF_INET6, Family::V6) => {
            if bytes.len() < SOCKADDR_IN6_BYTES {
                return Err(Errno::EINVAL);
            }
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&bytes[8..24]);
            Ok(SocketAddress::Ip(IpEndpoint::new(unmapped(Ipv6Address::from(octets)), port(bytes))))
        }
        (AF_INET6, Family::V4) if bytes.len() >= SOCKADDR_IN6_BYTES => Err(Errno::EAFNOSUPPORT),
        (AF_INET, Family::V6) | (AF_INET6, Family::V4) => Err(Errno::EINVAL),
        _ => Err(Errno::EAFNOSUPPORT),
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
fn unmapped(address: Ipv6Address) -> IpAddress {
    let octets = address.octets();
    if octets[..10].iter().all(|byte| *byte == 0) && octets[10] == 0xff && octets[11] == 0xff {
        return IpAddress::Ipv4(Ipv4Address::new(octets[12], octets[13], octets[14], octets[15]));
    }
    IpAddress::Ipv6(address)
}

/// `endpoint` as a socket of `family` reports it (an IPv6 socket's IPv4
/// peer as a mapped address).
pub fn encode(family: Family, endpoint: IpEndpoint) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(SOCKADDR_IN6_BYTES);
    bytes.extend_from_slice(&family.number().to_le_bytes());
    bytes.extend_from_slice(&endpoint.port.to_be_bytes());
    match (family, endpoint.addr) {
        (Family::V4, IpAddress::Ipv4(address)) => {
            bytes.extend_from_slice(&address.octets());
            bytes.extend_from_slice(&[0; 8]);
        }
        (Family::V4, IpAddress::Ipv6(_)) => bytes.extend_from_slice(&[0; 12]),
        (Family::V6, address) => {
            bytes.extend_from_slice(&[0; 4]);
            let octets = match address {
                IpAddress::Ipv4(v4) => v4.to_ipv6_mapped().octets(),
                IpAddress::Ipv6(v6) => v6.octets(),
            };
            bytes.extend_from_slice(&octets);
            bytes.extend_from_slice(&[0; 4]);
        }
    }
    bytes
}
