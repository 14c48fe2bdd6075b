//! The guests' network: a virtio card on QEMU's user network, always with
//! `restrict=on` (the guest reaches nothing outside QEMU), and host ports
//! on 127.0.0.1 forwarded to guest ports (`--port HOST:GUEST`). A Linux
//! guest gets the modules its card needs and the address QEMU's DHCP
//! would give (`/init` sets it when `/etc/lamina-net` exists); Lamina asks
//! DHCP itself.
//!
//! For the bad-packet check the card can instead carry its frames as UDP
//! datagrams between QEMU and a host program on 127.0.0.1 (QEMU's `dgram`
//! backend): no user network at all, the host program is the guest's
//! whole world.
//!
//! Must never open a path off this machine: no forward listens beyond
//! 127.0.0.1, the user network stays restricted, datagrams go to
//! 127.0.0.1 only.

use crate::failure::{Failure, Outcome};

/// `N` distinct TCP ports on 127.0.0.1 free right now, chosen by the
/// host's kernel (bind to port 0, all held until each is chosen): a check
/// that forwarded fixed ports failed whenever another run on this machine
/// held one (two `make test`s side by side). Another process may take one
/// before QEMU binds it; the check then fails naming the port, as it did
/// with fixed ones.
pub fn free_tcp_ports<const N: usize>() -> Outcome<[u16; N]> {
    let listeners = (0..N).map(|_| std::net::TcpListener::bind(("127.0.0.1", 0))).collect::<Result<Vec<_>, _>>();
    let listeners = listeners.map_err(|error| Failure::failed(format!("finding a free TCP port on 127.0.0.1: {error}")))?;
    ports_of(listeners.iter().map(std::net::TcpListener::local_addr))
}

/// [`free_tcp_ports`] for UDP.
pub fn free_udp_ports<const N: usize>() -> Outcome<[u16; N]> {
    let sockets = (0..N).map(|_| std::net::UdpSocket::bind(("127.0.0.1", 0))).collect::<Result<Vec<_>, _>>();
    let sockets = sockets.map_err(|error| Failure::failed(format!("finding a free UDP port on 127.0.0.1: {error}")))?;
    ports_of(sockets.iter().map(std::net::UdpSocket::local_addr))
}

fn ports_of<const N: usize>(addresses: impl Iterator<Item = std::io::Result<std::net::SocketAddr>>) -> Outcome<[u16; N]> {
    let mut ports = [0; N];
    for (port, address) in ports.iter_mut().zip(addresses) {
        *port = address.map_err(|error| Failure::failed(error.to_string()))?.port();
    }
    Ok(ports)
}

/// A host TCP port on 127.0.0.1 forwarded to a guest port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortForward {
    pub host: u16,
    pub guest: u16,
}

/// What the guest's card is plugged into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestNetwork {
    /// QEMU's restricted user network, with host ports forwarded.
    User(Vec<PortForward>),
    /// Frames as UDP datagrams on 127.0.0.1: QEMU receives on `qemu_port`
    /// and sends to `peer_port`, where a host program answers.
    Datagrams { qemu_port: u16, peer_port: u16 },
}

/// What a Linux guest loads for its card.
pub const NET_MODULES: [&str; 2] = ["virtio_pci", "virtio_net"];
/// Where `/init` looks for the address to give a Linux guest's `eth0`.
pub const NET_MARKER: &str = "etc/lamina-net";
/// The address, prefix and gateway QEMU's user network gives its first guest.
pub const GUEST_ADDRESS: &str = "10.0.2.15/24 10.0.2.2\n";

/// Reads `HOST:GUEST` (or one port for both).
pub fn parse_port_forward(text: &str) -> Outcome<PortForward> {
    let port = |part: &str| part.parse::<u16>().ok().filter(|port| *port != 0);
    let (host, guest) = text.split_once(':').unwrap_or((text, text));
    match (port(host), port(guest)) {
        (Some(host), Some(guest)) => Ok(PortForward { host, guest }),
        _ => Err(Failure::usage(format!("--port wants HOST:GUEST (ports 1-65535), not `{text}`"))),
    }
}

/// QEMU's arguments for the card and what it is plugged into.
pub fn qemu_arguments(network: &GuestNetwork) -> Vec<String> {
    let netdev = match network {
        GuestNetwork::User(forwards) => {
            let mut netdev = "user,id=net0,restrict=on".to_string();
            for forward in forwards {
                netdev.push_str(&format!(",hostfwd=tcp:127.0.0.1:{}-:{}", forward.host, forward.guest));
            }
            netdev
        }
        GuestNetwork::Datagrams { qemu_port, peer_port } => format!(
            "dgram,id=net0,local.type=inet,local.host=127.0.0.1,local.port={qemu_port},remote.type=inet,remote.host=127.0.0.1,remote.port={peer_port}"
        ),
    };
    vec!["-netdev".into(), netdev, "-device".into(), "virtio-net-pci,netdev=net0".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_listen_on_the_loopback_only_and_the_network_is_restricted() {
        let arguments = qemu_arguments(&GuestNetwork::User(vec![PortForward { host: 16379, guest: 6379 }]));
        assert_eq!(arguments[1], "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:16379-:6379");
        let datagrams = qemu_arguments(&GuestNetwork::Datagrams { qemu_port: 1, peer_port: 2 });
        assert!(datagrams[1].starts_with("dgram,") && datagrams[1].matches("host=127.0.0.1").count() == 2);
        assert_eq!(parse_port_forward("8080").unwrap(), PortForward { host: 8080, guest: 8080 });
        assert!(parse_port_forward("0:80").is_err() && parse_port_forward("x:80").is_err());
        let [first, second] = free_tcp_ports::<2>().unwrap();
        let [datagrams] = free_udp_ports::<1>().unwrap();
        assert!(first != 0 && second != 0 && datagrams != 0 && first != second, "distinct ports the host's kernel chose");
        assert!(std::net::TcpListener::bind(("127.0.0.1", first)).is_ok(), "a port given back is free again");
    }
}
