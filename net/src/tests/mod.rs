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
