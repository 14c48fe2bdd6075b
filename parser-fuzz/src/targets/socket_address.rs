//! Socket addresses a system call passes (`bind`, `connect`, `sendto`):
//! `net::addresses::parse` for a socket of either family, and the round
//! trip of what parsed: `encode` must give bytes of the right size that
//! parse to the same endpoint (an IPv6 socket's IPv4 endpoint comes back
//! through its mapped address). A broken round trip is a bug: a panic.
//! The input's first byte picks the socket's family; the rest is the
//! address. Hot ranges: the family, the port and the address.

use std::ops::Range;

use net::addresses::{encode, parse, AF_INET, AF_INET6, SOCKADDR_IN6_BYTES, SOCKADDR_IN_BYTES};
use net::{Family, SocketAddress};

use crate::{boundary_value, Rng, Target};

/// The socket-address target.
pub struct SocketAddressTarget;

/// The socket's family from the input's first byte (odd: IPv6).
fn family_of(selector: u8) -> Family {
    if selector & 1 == 1 {
        Family::V6
    } else {
        Family::V4
    }
}

fn with_family(family: Family, address: &[u8]) -> Vec<u8> {
    let selector = match family {
        Family::V4 => 0,
        Family::V6 => 1,
    };
    [&[selector][..], address].concat()
}

fn sockaddr_in(port: u16, address: [u8; 4]) -> Vec<u8> {
    [&AF_INET.to_le_bytes()[..], &port.to_be_bytes(), &address, &[0; 8]].concat()
}

fn sockaddr_in6(port: u16, flow: u32, address: [u8; 16], scope: u32) -> Vec<u8> {
    [&AF_INET6.to_le_bytes()[..], &port.to_be_bytes(), &flow.to_be_bytes(), &address, &scope.to_le_bytes()].concat()
}

/// `::ffff:a.b.c.d`.
fn mapped(v4: [u8; 4]) -> [u8; 16] {
    let mut octets = [0u8; 16];
    octets[10] = 0xff;
    octets[11] = 0xff;
    octets[12..].copy_from_slice(&v4);
    octets
}

/// An address of interest: any, loopback, mapped, link-local, an edge.
fn address6(random: &mut Rng) -> [u8; 16] {
    let mut octets = [0u8; 16];
    match random.below(5) {
        0 => {}
        1 => octets[15] = 1,
        2 => octets = mapped((random.next_u64() as u32).to_be_bytes()),
        3 => {
            octets[..2].copy_from_slice(&[0xfe, 0x80]);
            octets[8..].copy_from_slice(&random.next_u64().to_be_bytes());
        }
        _ => {
            octets[..8].copy_from_slice(&random.next_u64().to_be_bytes());
            octets[8..].copy_from_slice(&boundary_value(random).to_be_bytes());
        }
    }
    octets
}

impl Target for SocketAddressTarget {
    fn name(&self) -> &'static str {
        "sockaddr"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        vec![
            with_family(Family::V4, &sockaddr_in(80, [127, 0, 0, 1])),
            with_family(Family::V4, &sockaddr_in(0, [0; 4])),
            with_family(Family::V6, &sockaddr_in6(443, 0, { let mut loopback = [0; 16]; loopback[15] = 1; loopback }, 0)),
            with_family(Family::V6, &sockaddr_in6(8080, 0, mapped([10, 0, 2, 15]), 0)),
            with_family(Family::V6, &sockaddr_in6(53, 7, [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0xff, 0xfe, 0, 0, 1], 2)),
            with_family(Family::V4, &[0, 0]),
            with_family(Family::V6, &sockaddr_in(80, [10, 0, 0, 1])),
        ]
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let family = family_of(random.next_u64() as u8);
        let port = [0u16, 1, 80, 0xffff, boundary_value(random) as u16][random.below(5)];
        let mut address = match random.below(4) {
            0 => sockaddr_in(port, (random.next_u64() as u32).to_be_bytes()),
            1 | 2 => sockaddr_in6(port, random.next_u64() as u32, address6(random), random.next_u64() as u32),
            _ => (0..random.below(40)).map(|_| random.next_u64() as u8).collect(),
        };
        if random.below(4) == 0 && address.len() >= 2 {
            let family_number = [0u16, 1, 2, 10, 17, 0xffff, boundary_value(random) as u16][random.below(7)];
            address[..2].copy_from_slice(&family_number.to_le_bytes());
        }
        if random.below(4) == 0 {
            address.truncate(random.below(address.len() + 1));
        }
        with_family(family, &address)
    }

    fn max_len(&self) -> usize {
        1 + 128
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        std::iter::once(0..input.len().min(1 + SOCKADDR_IN6_BYTES)).collect()
    }

    fn run(&self, input: &[u8]) -> String {
        let Some((&selector, address)) = input.split_first() else { return "empty".into() };
        let family = family_of(selector);
        match parse(family, address) {
            Ok(SocketAddress::Unspecified) => format!("{family:?} unspecified"),
            Ok(SocketAddress::Ip(endpoint)) => {
                let encoded = encode(family, endpoint);
                let expected = match family {
                    Family::V4 => SOCKADDR_IN_BYTES,
                    Family::V6 => SOCKADDR_IN6_BYTES,
                };
                assert_eq!(encoded.len(), expected, "{endpoint} encoded to {} bytes for {family:?}", encoded.len());
                assert_eq!(parse(family, &encoded), Ok(SocketAddress::Ip(endpoint)), "{endpoint} did not survive encode then parse ({family:?})");
                let kind = if endpoint.addr.is_unspecified() { "any" } else { "address" };
                let version = match endpoint.addr {
                    net::IpAddress::Ipv4(_) => "v4",
                    net::IpAddress::Ipv6(_) => "v6",
                };
                format!("{family:?} {version} {kind} port {}", endpoint.port.min(1))
            }
            Err(errno) => format!("{family:?} errno {}", errno.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_parse_with_either_outcome_expected() {
        let labels: Vec<String> = SocketAddressTarget.samples().iter().map(|sample| SocketAddressTarget.run(sample)).collect();
        assert_eq!(labels[0], "V4 v4 address port 1");
        assert_eq!(labels[3], "V6 v4 address port 1", "a mapped address stands for IPv4");
        assert_eq!(labels[5], "V4 unspecified");
        assert!(labels[6].starts_with("V6 "), "{labels:?}");
    }
}
