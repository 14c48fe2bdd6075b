//! The NIC's lane: added when the kernel finds a card, configured by
//! DHCP (smoltcp's client: address, default route, name servers), and
//! the frames that cross it ([`Network::deliver`], [`Network::take_outgoing`]).
//!
//! Must never keep an address DHCP took back.

use alloc::vec::Vec;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::dhcpv4;
use smoltcp::wire::{IpCidr, Ipv4Address, Ipv4Cidr};

use crate::lanes::{Lane, LaneId};
use crate::network::Network;

/// What DHCP last said about the NIC's lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DhcpNews {
    /// An address (and perhaps a router and name servers) was given.
    Configured {
        /// The address and prefix.
        address: Ipv4Cidr,
        /// The default gateway.
        router: Option<Ipv4Address>,
        /// Name servers.
        dns_servers: Vec<Ipv4Address>,
    },
    /// The lease was lost: no address.
    Deconfigured,
}

/// The NIC's lane and its DHCP client.
pub(crate) struct Ethernet {
    pub lane: LaneId,
    dhcp: SocketHandle,
    /// News not yet taken by [`Network::take_dhcp_news`].
    news: Option<DhcpNews>,
    /// The configuration in force.
    pub configured: Option<DhcpNews>,
}

impl Network {
    /// Adds the lane of a card with hardware address `mac` and `mtu`, and
    /// starts asking DHCP for an address. Once.
    pub fn add_ethernet(&mut self, mac: [u8; 6], mtu: usize) {
        self.listeners_unsettled = true;
        if self.ethernet.is_some() {
            return;
        }
        let mut lane = Lane::ethernet(mac, mtu, self.now);
        let dhcp = lane.sockets.add(dhcpv4::Socket::new());
        self.lanes.push(lane);
        self.ethernet = Some(Ethernet { lane: self.lanes.len() - 1, dhcp, news: None, configured: None });
    }

    /// A frame the card received.
    pub fn deliver(&mut self, frame: Vec<u8>) {
        if let Some(ethernet) = &self.ethernet {
            self.lanes[ethernet.lane].device.deliver(frame);
        }
    }

    /// Moves the frames waiting to go out on the card into `into`.
    pub fn take_outgoing(&mut self, into: &mut Vec<Vec<u8>>) {
        let Some(ethernet) = &self.ethernet else { return };
        let device = &mut self.lanes[ethernet.lane].device;
        while let Some(frame) = device.take_sent() {
            into.push(frame);
        }
    }

    /// What DHCP said since the last call, if anything.
    pub fn take_dhcp_news(&mut self) -> Option<DhcpNews> {
        self.ethernet.as_mut().and_then(|ethernet| ethernet.news.take())
    }

    /// The NIC's configuration now (for `ifconfig`-like reports).
    pub fn ethernet_configuration(&self) -> Option<&DhcpNews> {
        self.ethernet.as_ref().and_then(|ethernet| ethernet.configured.as_ref())
    }

    /// After a poll: applies what the DHCP client learnt.
    pub(crate) fn apply_dhcp(&mut self) -> bool {
        let Some(ethernet) = &mut self.ethernet else { return false };
        let lane = &mut self.lanes[ethernet.lane];
        let news = match lane.sockets.get_mut::<dhcpv4::Socket>(ethernet.dhcp).poll() {
            None => return false,
            Some(dhcpv4::Event::Configured(config)) => {
                lane.iface.update_ip_addrs(|addresses| {
                    addresses.retain(|cidr| !matches!(cidr, IpCidr::Ipv4(_)));
                    let _ = addresses.push(IpCidr::Ipv4(config.address));
                });
                match config.router {
                    Some(router) => {
                        let _ = lane.iface.routes_mut().add_default_ipv4_route(router);
                    }
                    None => {
                        lane.iface.routes_mut().remove_default_ipv4_route();
                    }
                }
                DhcpNews::Configured { address: config.address, router: config.router, dns_servers: config.dns_servers.iter().copied().collect() }
            }
            // The client starts out deconfigured: no news until it had a lease.
            Some(dhcpv4::Event::Deconfigured) if ethernet.configured.is_none() => return false,
            Some(dhcpv4::Event::Deconfigured) => {
                lane.iface.update_ip_addrs(|addresses| addresses.retain(|cidr| !matches!(cidr, IpCidr::Ipv4(_))));
                lane.iface.routes_mut().remove_default_ipv4_route();
                DhcpNews::Deconfigured
            }
        };
        ethernet.configured = Some(news.clone());
        ethernet.news = Some(news);
        true
    }
}
