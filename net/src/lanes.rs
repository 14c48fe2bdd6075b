//! A lane: one smoltcp interface, its device and the smoltcp sockets that
//! live on it. Lane 0 is the loopback (127.0.0.1/8, ::1), lane 1 UDP-Lite's
//! loopback ([`LITE_LOOPBACK`]); a NIC adds a lane with the addresses DHCP
//! gives it.
//!
//! Every TCP connection has a socket set of its own (a [`Connection`]
//! slot); listening pools, datagram sockets and DHCP share one. smoltcp
//! walks every socket of a set on each egress, so one shared set made
//! each packet cost as much as there are connections (redis-benchmark's
//! 50 clients: 5× Linux's instructions per request). Here a received
//! packet goes to its connection's set by its endpoints ([`crate::demux`]),
//! and egress visits only the sets something happened to or whose timer
//! is due.
//!
//! Must never loop: each call does a bounded amount of work (the
//! network's poll decides how many rounds).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use smoltcp::iface::{Config, Interface, PollIngressSingleResult, PollResult, SocketHandle, SocketSet};
use smoltcp::phy::Medium;
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint, Ipv4Address, Ipv6Address};

use crate::accounts::Charge;
use crate::demux::{tcp_segment, Tuple};
use crate::frame_queue::FrameQueue;
use crate::Errno;

/// Which lane.
pub type LaneId = usize;
/// The loopback lane.
pub const LOOPBACK: LaneId = 0;
/// UDP-Lite's loopback: a second loopback interface (the same addresses)
/// whose UDP sockets are UDP-Lite sockets, so the two protocols' ports
/// stay apart. Its packets never leave it; it is the loopback interface
/// (index 1) to programs and is never listed apart.
pub const LITE_LOOPBACK: LaneId = 1;
/// The first NIC's lane.
pub const FIRST_CARD: LaneId = 2;

/// The interface index programs see for `lane` (1 for the loopback, the
/// cards from 2 on, as Linux numbers them).
pub fn interface_index(lane: LaneId) -> u32 {
    if lane < FIRST_CARD {
        1
    } else {
        (lane - FIRST_CARD + 2) as u32
    }
}

/// A connection's slot in its lane.
pub type Slot = usize;

/// Where a received packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// A connection's own set.
    Connection(Slot),
    /// A SYN for no known connection, to `local` (the shared set, if a
    /// listener takes it).
    Opening(IpEndpoint),
    /// The shared set: listening pools, datagram sockets, DHCP, the rest.
    Shared,
    /// An empty set: smoltcp answers with a reset.
    Refused,
}

/// An interface with its device and sockets.
pub struct Lane {
    pub iface: Interface,
    pub device: FrameQueue,
    /// Listening pools, datagram sockets, DHCP.
    pub sockets: SocketSet<'static>,
    connections: Vec<Option<Connection>>,
    by_tuple: BTreeMap<Tuple, Slot>,
    /// Always empty: a SYN no listener may take is processed here, and
    /// smoltcp answers it with a reset.
    refusing: SocketSet<'static>,
    /// What the shared set's sockets are charged (DHCP's: nothing).
    shared_charges: BTreeMap<SocketHandle, Charge>,
    /// Charges of sockets let go, for the network to give back.
    pub(crate) released: Vec<Charge>,
    /// When the shared set next needs an egress for its timers, as of its
    /// last egress (every change to a shared socket is followed by one).
    shared_due: Option<Instant>,
    /// A packet went to the shared set, or its egress changed a socket,
    /// since the network last settled its listeners.
    pub(crate) shared_touched: bool,
    /// A shared socket was changed (or took a packet) since the shared
    /// set's last egress: the next egress walks it (else only when its
    /// timer is due — the listening pools cost nothing per packet).
    shared_dirty: bool,
}

/// One TCP connection in a set of its own.
struct Connection {
    set: SocketSet<'static>,
    handle: SocketHandle,
    tuple: Option<Tuple>,
    /// Touched since its last egress (an operation, a packet).
    dirty: bool,
    /// When its timers next need an egress.
    due: Option<Instant>,
    /// What its buffers are charged.
    charge: Option<Charge>,
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
        Lane { iface, device, sockets: SocketSet::new(Vec::new()), connections: Vec::new(), by_tuple: BTreeMap::new(), refusing: SocketSet::new(Vec::new()), shared_charges: BTreeMap::new(), released: Vec::new(), shared_due: None, shared_touched: true, shared_dirty: true }
    }

    /// A NIC's lane with hardware address `mac` and `mtu`, no IP address
    /// until one is set.
    pub fn ethernet(mac: [u8; 6], mtu: usize, now: Instant) -> Lane {
        let mut device = FrameQueue::ethernet(mtu);
        let iface = Interface::new(Config::new(HardwareAddress::Ethernet(EthernetAddress(mac))), &mut device, now);
        Lane { iface, device, sockets: SocketSet::new(Vec::new()), connections: Vec::new(), by_tuple: BTreeMap::new(), refusing: SocketSet::new(Vec::new()), shared_charges: BTreeMap::new(), released: Vec::new(), shared_due: None, shared_touched: true, shared_dirty: true }
    }

    /// Where the next received packet goes, read from its headers once.
    pub fn next_destination(&self) -> Destination {
        let ethernet = self.device.medium() == Medium::Ethernet;
        let Some(segment) = self.device.front().and_then(|packet| tcp_segment(packet, ethernet)) else { return Destination::Shared };
        match self.by_tuple.get(&segment.tuple) {
            Some(&slot) => Destination::Connection(slot),
            None if segment.opens => Destination::Opening(segment.tuple.0),
            None => Destination::Shared,
        }
    }

    /// Processes one received packet, if any, where `destination` says
    /// (from [`Lane::next_destination`]; `Refused`: an empty set, so
    /// smoltcp answers with a reset): `None` when none waited, else
    /// whether a socket's state may have changed.
    pub fn ingress_one(&mut self, now: Instant, destination: Destination) -> Option<bool> {
        let connection = match destination {
            Destination::Connection(slot) => self.connections.get_mut(slot).and_then(Option::as_mut),
            _ => None,
        };
        let set = match (connection, destination) {
            (Some(connection), _) => {
                connection.dirty = true;
                &mut connection.set
            }
            (None, Destination::Refused) => &mut self.refusing,
            (None, _) => &mut self.sockets,
        };
        let result = self.iface.poll_ingress_single(now, &mut self.device, set);
        // A packet the shared set took (not the call that found none).
        if result != PollIngressSingleResult::None && matches!(destination, Destination::Shared | Destination::Opening(_)) {
            self.shared_touched = true;
            self.shared_dirty = true;
        }
        match result {
            PollIngressSingleResult::None => None,
            PollIngressSingleResult::PacketProcessed => Some(false),
            PollIngressSingleResult::SocketStateChanged => Some(true),
        }
    }

    /// Sends what the touched or due shared sockets and connections
    /// have; whether a socket's state may have changed.
    pub fn egress(&mut self, now: Instant) -> bool {
        let mut changed = false;
        if self.shared_dirty || self.shared_due.is_some_and(|due| due <= now) {
            changed = self.iface.poll_egress(now, &mut self.device, &mut self.sockets) == PollResult::SocketStateChanged;
            self.shared_touched |= changed;
            self.shared_due = self.iface.poll_at(now, &self.sockets);
            self.shared_dirty = false;
        }
        for connection in self.connections.iter_mut().flatten() {
            if !connection.dirty && connection.due.map_or(true, |due| due > now) {
                continue;
            }
            changed |= self.iface.poll_egress(now, &mut self.device, &mut connection.set) == PollResult::SocketStateChanged;
            connection.dirty = false;
            connection.due = self.iface.poll_at(now, &connection.set);
        }
        changed
    }

    /// When a socket of the lane next needs an egress for its timers.
    pub fn poll_at(&self) -> Option<Instant> {
        let shared = self.shared_due;
        // Not `dirty`: every operation that changes a connection is
        // followed by a poll that egresses it; what stays dirty was only
        // looked at by an operation that would block (a receive with
        // nothing there), and counting it as due made every blocked
        // caller wake at once, again and again.
        let connections = self.connections.iter().flatten().filter_map(|connection| connection.due).min();
        shared.into_iter().chain(connections).min()
    }

    /// A shared socket, to change (the shared set is egressed next poll).
    pub fn shared_mut<S: smoltcp::socket::AnySocket<'static>>(&mut self, handle: SocketHandle) -> &mut S {
        self.shared_dirty = true;
        self.sockets.get_mut::<S>(handle)
    }

    /// A socket into the shared set, with what its buffers are charged.
    pub fn add_shared<S: smoltcp::socket::AnySocket<'static>>(&mut self, socket: S, charge: Option<Charge>) -> SocketHandle {
        self.shared_dirty = true;
        let handle = self.sockets.add(socket);
        if let Some(charge) = charge {
            self.shared_charges.insert(handle, charge);
        }
        handle
    }

    /// Lets go of the shared set's socket `handle` (its charge released).
    pub fn remove_shared(&mut self, handle: SocketHandle) {
        self.sockets.remove(handle);
        self.released.extend(self.shared_charges.remove(&handle));
    }

    /// Gives `socket` (a connection charged `charge`) a set of its own;
    /// its slot (ENOBUFS without room: the socket goes, its charge released).
    pub fn adopt(&mut self, socket: tcp::Socket<'static>, charge: Option<Charge>) -> Result<Slot, Errno> {
        let tuple = socket.local_endpoint().zip(socket.remote_endpoint());
        let slot = match self.connections.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                if self.connections.try_reserve(1).is_err() {
                    self.released.extend(charge);
                    return Err(Errno::ENOBUFS);
                }
                self.connections.push(None);
                self.connections.len() - 1
            }
        };
        let mut set = SocketSet::new(Vec::new());
        let handle = set.add(socket);
        let connection = Connection { set, handle, tuple, dirty: true, due: None, charge };
        self.connections[slot] = Some(connection);
        if let Some(tuple) = tuple {
            self.by_tuple.insert(tuple, slot);
        }
        Ok(slot)
    }

    /// Moves the shared set's socket `handle` (a connection a listening
    /// pool made) into a set of its own.
    pub fn adopt_shared(&mut self, handle: SocketHandle) -> Result<Slot, Errno> {
        let charge = self.shared_charges.remove(&handle);
        match self.sockets.remove(handle) {
            smoltcp::socket::Socket::Tcp(socket) => self.adopt(socket, charge),
            _ => {
                self.released.extend(charge);
                Err(Errno::EINVAL)
            }
        }
    }

    /// Connection `slot`'s socket, to change (it is egressed next poll).
    pub fn connection(&mut self, slot: Slot) -> &mut tcp::Socket<'static> {
        let connection = self.connections[slot].as_mut().expect("a live connection slot");
        connection.dirty = true;
        connection.set.get_mut::<tcp::Socket>(connection.handle)
    }

    /// Connection `slot`'s socket, to look at.
    pub fn connection_ref(&self, slot: Slot) -> &tcp::Socket<'static> {
        let connection = self.connections[slot].as_ref().expect("a live connection slot");
        connection.set.get::<tcp::Socket>(connection.handle)
    }

    /// After a connect: the connection's endpoints are known now.
    pub fn register(&mut self, slot: Slot) {
        let Some(connection) = self.connections[slot].as_mut() else { return };
        let socket = connection.set.get::<tcp::Socket>(connection.handle);
        if let Some(tuple) = socket.local_endpoint().zip(socket.remote_endpoint()) {
            connection.tuple = Some(tuple);
            self.by_tuple.insert(tuple, slot);
        }
    }

    /// Lets go of connection `slot` (its charge released).
    pub fn release(&mut self, slot: Slot) {
        if let Some(connection) = self.connections.get_mut(slot).and_then(Option::take) {
            self.released.extend(connection.charge);
            if let Some(tuple) = connection.tuple {
                if self.by_tuple.get(&tuple) == Some(&slot) {
                    self.by_tuple.remove(&tuple);
                }
            }
        }
    }

    /// Connections held (for tests: nothing may pile up).
    #[cfg(test)]
    pub fn connection_count(&self) -> usize {
        self.connections.iter().flatten().count()
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
