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
use crate::demux::{tcp_segment, tuple_key, Tuple, TupleKey};
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
    /// Nobody's, and not to be answered: taken off the queue unread.
    Discarded,
}

/// An interface with its device and sockets.
pub struct Lane {
    pub iface: Interface,
    pub device: FrameQueue,
    /// Listening pools, datagram sockets, DHCP.
    pub sockets: SocketSet<'static>,
    connections: Vec<Option<Connection>>,
    by_tuple: BTreeMap<TupleKey, Slot>,
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
    /// Connections marked dirty since the last egress (a slot may be
    /// listed twice or be free by then: egress checks the mark).
    dirty_slots: Vec<Slot>,
    /// A slot could not be listed (no memory): the next egress walks
    /// every connection.
    dirty_unlisted: bool,
    /// No connection's timer is due before this (a lower bound: a
    /// connection whose timer moved later leaves it early, and the egress
    /// that finds it passed walks every connection and sets it exactly);
    /// `None`: no connection has a timer.
    earliest_due: Option<Instant>,
    /// How many connections have a timer (at 0 `earliest_due` is `None`:
    /// a connection whose last timer went leaves no early wake-up).
    timed: usize,
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
        Lane::new(iface, device)
    }

    /// A NIC's lane with hardware address `mac` and `mtu`, no IP address
    /// until one is set.
    pub fn ethernet(mac: [u8; 6], mtu: usize, now: Instant) -> Lane {
        let mut device = FrameQueue::ethernet(mtu);
        let iface = Interface::new(Config::new(HardwareAddress::Ethernet(EthernetAddress(mac))), &mut device, now);
        Lane::new(iface, device)
    }

    fn new(iface: Interface, device: FrameQueue) -> Lane {
        Lane {
            iface,
            device,
            sockets: SocketSet::new(Vec::new()),
            connections: Vec::new(),
            by_tuple: BTreeMap::new(),
            refusing: SocketSet::new(Vec::new()),
            shared_charges: BTreeMap::new(),
            released: Vec::new(),
            shared_due: None,
            shared_touched: true,
            shared_dirty: true,
            dirty_slots: Vec::new(),
            dirty_unlisted: false,
            earliest_due: None,
            timed: 0,
        }
    }

    /// Where the next received packet goes, read from its headers once.
    pub fn next_destination(&self) -> Destination {
        let ethernet = self.device.medium() == Medium::Ethernet;
        let Some(segment) = self.device.front().and_then(|packet| tcp_segment(packet, ethernet)) else { return Destination::Shared };
        if !self.is_unicast_segment(&segment) {
            return Destination::Discarded;
        }
        match self.by_tuple.get(&tuple_key(&segment.tuple)) {
            Some(&slot) => Destination::Connection(slot),
            None if segment.opens => Destination::Opening(segment.tuple.0),
            None => Destination::Shared,
        }
    }

    /// Whether a TCP segment is between two unicast addresses, as TCP
    /// requires (RFC 1122 4.2.3.10). smoltcp lets in packets from the
    /// unspecified address (for DHCP) and to broadcast and multicast ones
    /// (for UDP): a listener answered such a SYN from the broadcast or
    /// multicast address, or panicked sending to 0.0.0.0, and a segment for
    /// no socket was reset from the broadcast address.
    fn is_unicast_segment(&self, segment: &crate::demux::Segment) -> bool {
        let (local, remote) = (segment.tuple.0.addr, segment.tuple.1.addr);
        let subnet_broadcast = self.iface.ip_addrs().iter().any(|cidr| match cidr {
            IpCidr::Ipv4(cidr) => cidr.broadcast().is_some_and(|broadcast| IpAddress::Ipv4(broadcast) == local),
            IpCidr::Ipv6(_) => false,
        });
        local.is_unicast() && remote.is_unicast() && !subnet_broadcast
    }

    /// Processes one received packet, if any, where `destination` says
    /// (from [`Lane::next_destination`]; `Refused`: an empty set, so
    /// smoltcp answers with a reset; `Discarded`: dropped unread): `None`
    /// when none waited, else whether a socket's state may have changed.
    pub fn ingress_one(&mut self, now: Instant, destination: Destination) -> Option<bool> {
        if destination == Destination::Discarded {
            return self.device.discard_front().then_some(false);
        }
        let connection = match destination {
            Destination::Connection(slot) => self.connections.get_mut(slot).and_then(Option::as_mut).map(|connection| (slot, connection)),
            _ => None,
        };
        let set = match (connection, destination) {
            (Some((slot, connection)), _) => {
                mark_dirty(connection, slot, &mut self.dirty_slots, &mut self.dirty_unlisted);
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
        let walk_all = self.dirty_unlisted || self.earliest_due.is_some_and(|due| due <= now);
        let mut listed = core::mem::take(&mut self.dirty_slots);
        if walk_all {
            let mut earliest = None;
            for connection in self.connections.iter_mut().flatten() {
                if connection.dirty || connection.due.is_some_and(|due| due <= now) {
                    changed |= Self::egress_connection(&mut self.iface, &mut self.device, &mut self.timed, now, connection);
                }
                earliest = earliest_of(earliest, connection.due);
            }
            self.earliest_due = earliest;
            self.dirty_unlisted = false;
        } else {
            for &slot in &listed {
                let Some(connection) = self.connections.get_mut(slot).and_then(Option::as_mut) else { continue };
                if connection.dirty {
                    changed |= Self::egress_connection(&mut self.iface, &mut self.device, &mut self.timed, now, connection);
                    self.earliest_due = earliest_of(self.earliest_due, connection.due);
                }
            }
            if self.timed == 0 {
                self.earliest_due = None;
            }
        }
        // The list's memory is kept for the next round.
        listed.clear();
        self.dirty_slots = listed;
        changed
    }

    /// Sends what `connection` has; whether a socket's state may have changed.
    /// `timed`: the lane's count of connections with a timer.
    fn egress_connection(iface: &mut Interface, device: &mut FrameQueue, timed: &mut usize, now: Instant, connection: &mut Connection) -> bool {
        let changed = iface.poll_egress(now, device, &mut connection.set) == PollResult::SocketStateChanged;
        connection.dirty = false;
        let due = iface.poll_at(now, &connection.set);
        *timed = *timed + usize::from(due.is_some()) - usize::from(connection.due.is_some());
        connection.due = due;
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
        // (Early at worst: see `earliest_due`.)
        shared.into_iter().chain(self.earliest_due).min()
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
        let mut connection = Connection { set, handle, tuple, dirty: false, due: None, charge };
        mark_dirty(&mut connection, slot, &mut self.dirty_slots, &mut self.dirty_unlisted);
        self.connections[slot] = Some(connection);
        if let Some(tuple) = tuple {
            self.by_tuple.insert(tuple_key(&tuple), slot);
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
        mark_dirty(connection, slot, &mut self.dirty_slots, &mut self.dirty_unlisted);
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
            self.by_tuple.insert(tuple_key(&tuple), slot);
        }
    }

    /// Lets go of connection `slot` (its charge released).
    pub fn release(&mut self, slot: Slot) {
        if let Some(connection) = self.connections.get_mut(slot).and_then(Option::take) {
            self.released.extend(connection.charge);
            self.timed -= usize::from(connection.due.is_some());
            if let Some(tuple) = connection.tuple {
                let key = tuple_key(&tuple);
                if self.by_tuple.get(&key) == Some(&slot) {
                    self.by_tuple.remove(&key);
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

/// Marks `connection` (in `slot`) touched and lists it for the next
/// egress (or, without memory for the list, has that egress walk them all).
fn mark_dirty(connection: &mut Connection, slot: Slot, listed: &mut Vec<Slot>, unlisted: &mut bool) {
    if connection.dirty {
        return;
    }
    connection.dirty = true;
    if listed.try_reserve(1).is_ok() {
        listed.push(slot);
    } else {
        *unlisted = true;
    }
}

/// The earlier of two optional instants (`None`: never).
fn earliest_of(left: Option<Instant>, right: Option<Instant>) -> Option<Instant> {
    match (left, right) {
        (Some(left), Some(right)) => Some(left.min(right)),
        (left, right) => left.or(right),
    }
}
