//! A lane: one smoltcp interface, its device and the smoltcp sockets that
//! live on it. Lane 0 is the loopback (127.0.0.1/8, ::1); a NIC adds a lane
//! with the addresses DHCP gives it.
//!
//! Must never loop: each call does a bounded amount of work (the
//! network's poll decides how many rounds).

use alloc::vec::Vec;

use smoltcp::iface::{Config, Interface, PollIngressSingleResult, PollResult, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address, Ipv6Address};

use crate::frame_queue::FrameQueue;

/// Which lane.
pub type LaneId = usize;
/// The loopback lane.
pub const LOOPBACK: LaneId = 0;

/// An interface with its device and sockets.
pub struct Lane {
    pub iface: Interface,
    pub device: FrameQueue,
    pub sockets: SocketSet<'static>,
}

impl Lane {
    /// The loopback lane.
    pub fn loopback(now: Instant) -> Lane {
        let mut device = FrameQueue::loopback();
        let mut iface = Interface::new(Config::new(HardwareAddress::Ip), &mut device, now);
        iface.update_ip_addrs(|addresses| {
            let _ = addresses.push(IpCidr::new(IpAddress::Ipv4(Ipv4Address::LOCALHOST), 8));
            let _ = addresses.push(IpCidr::new(IpAddress::Ipv6(Ipv6Address::LOCALHOST), 128));
        });
        Lane { iface, device, sockets: SocketSet::new(Vec::new()) }
    }

    /// A NIC's lane with hardware address `mac` and `mtu`, no IP address
    /// until one is set.
    pub fn ethernet(mac: [u8; 6], mtu: usize, now: Instant) -> Lane {
        let mut device = FrameQueue::ethernet(mtu);
        let iface = Interface::new(Config::new(HardwareAddress::Ethernet(EthernetAddress(mac))), &mut device, now);
        Lane { iface, device, sockets: SocketSet::new(Vec::new()) }
    }

    /// Processes one received packet, if any: `None` when none waited,
    /// else whether a socket's state may have changed.
    pub fn ingress_one(&mut self, now: Instant) -> Option<bool> {
        match self.iface.poll_ingress_single(now, &mut self.device, &mut self.sockets) {
            PollIngressSingleResult::None => None,
            PollIngressSingleResult::PacketProcessed => Some(false),
            PollIngressSingleResult::SocketStateChanged => Some(true),
        }
    }

    /// Sends what the sockets have; whether a socket's state may have changed.
    pub fn egress(&mut self, now: Instant) -> bool {
        self.iface.poll_egress(now, &mut self.device, &mut self.sockets) == PollResult::SocketStateChanged
    }

    /// Whether packets wait to be received.
    pub fn has_received(&self) -> bool {
        self.device.has_received()
    }

    /// Whether `address` is one of this lane's.
    pub fn has_address(&self, address: IpAddress) -> bool {
        self.iface.has_ip_addr(address)
    }

    /// Whether packets to `address` go out this lane (its subnet, or its default route).
    pub fn reaches(&self, address: IpAddress) -> bool {
        self.iface.ip_addrs().iter().any(|cidr| cidr.contains_addr(&address))
    }
}
