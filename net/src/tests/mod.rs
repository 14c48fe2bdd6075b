//! Host tests of the network over its loopback lane.

mod accounts;
mod bad_packets;
mod datagram;
mod ports;
mod socket_table;
mod stream;

use crate::{Family, IpAddress, IpEndpoint, Ipv4Address, Network, SocketId, SocketKind};

/// A network at uptime 0.
fn network() -> Network {
    Network::new(0)
}

/// 127.0.0.1:`port`.
fn local(port: u16) -> IpEndpoint {
    IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::LOCALHOST), port)
}

/// A fresh IPv4 socket of `kind`.
fn open(network: &mut Network, kind: SocketKind) -> SocketId {
    network.open(Family::V4, kind).expect("a socket")
}

/// Polls as the kernel does after every operation.
fn settle(network: &mut Network) {
    network.poll(1_000_000);
}

/// What route netlink reports: the loopback (index 1, no hardware
/// address, 127.0.0.1/8 and ::1/128), then each card with its MAC and MTU.
#[test]
fn the_interfaces_are_the_loopback_then_the_cards() {
    let mut network = network();
    let interfaces = network.interfaces();
    assert_eq!(interfaces.len(), 1);
    let lo = &interfaces[0];
    assert_eq!((lo.index, lo.name, lo.loopback, lo.hardware, lo.mtu), (1, "lo", true, [0; 6], 65_536));
    assert_eq!(lo.addresses[0], (IpAddress::Ipv4(Ipv4Address::LOCALHOST), 8));
    network.add_ethernet([2, 0, 0, 0, 0, 1], 1500);
    let interfaces = network.interfaces();
    let card = &interfaces[1];
    assert_eq!((card.index, card.name, card.loopback, card.hardware, card.mtu), (2, "eth0", false, [2, 0, 0, 0, 0, 1], 1500));
    assert!(card.addresses.is_empty(), "no address before DHCP");
}
