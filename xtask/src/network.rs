//! The guests' network: a virtio card on QEMU's user network, always with
//! `restrict=on` (the guest reaches nothing outside QEMU), and host ports
//! on 127.0.0.1 forwarded to guest ports (`--port HOST:GUEST`). A Linux
//! guest gets the modules its card needs and the address QEMU's DHCP
//! would give (`/init` sets it when `/etc/lamina-net` exists); Lamina asks
//! DHCP itself.
//!
//! Must never open a path off this machine: no forward listens beyond
//! 127.0.0.1 and the user network stays restricted.

use crate::failure::{Failure, Outcome};

/// A host TCP port on 127.0.0.1 forwarded to a guest port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortForward {
    pub host: u16,
    pub guest: u16,
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

/// QEMU's arguments for the card and its restricted user network.
pub fn qemu_arguments(forwards: &[PortForward]) -> Vec<String> {
    let mut netdev = "user,id=net0,restrict=on".to_string();
    for forward in forwards {
        netdev.push_str(&format!(",hostfwd=tcp:127.0.0.1:{}-:{}", forward.host, forward.guest));
    }
    vec!["-netdev".into(), netdev, "-device".into(), "virtio-net-pci,netdev=net0".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_listen_on_the_loopback_only_and_the_network_is_restricted() {
        let arguments = qemu_arguments(&[PortForward { host: 16379, guest: 6379 }]);
        assert_eq!(arguments[1], "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:16379-:6379");
        assert_eq!(parse_port_forward("8080").unwrap(), PortForward { host: 8080, guest: 8080 });
        assert!(parse_port_forward("0:80").is_err() && parse_port_forward("x:80").is_err());
    }
}
