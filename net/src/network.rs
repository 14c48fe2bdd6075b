//! The network: its lanes, its sockets (by [`SocketId`]) and the port
//! table, and the poll that moves packets. Operations never wait: what
//! would block is `EAGAIN` (or a pending state) and the kernel waits
//! outside the lock, until a [`Network::poll`] changes something.
//!
//! The stream and datagram halves are `stream.rs` and `datagram.rs`.

use alloc::vec::Vec;

use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{IpAddress, IpEndpoint};

use crate::addresses::Family;
use crate::datagram::Datagram;
use crate::ip_marks::IpMarks;
use crate::lanes::{interface_index, Destination, Lane, LaneId, FIRST_CARD, LITE_LOOPBACK, LOOPBACK};
use crate::ports::{Claim, PortTable, Protocol};
use crate::stream::Stream;
use crate::accounts::Owner;
use crate::Errno;

/// A socket of the network (a slot in its table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketId(pub(crate) usize);

impl SocketId {
    /// Its slot in the table (stable while the socket is open).
    pub fn number(self) -> usize {
        self.0
    }
}

/// Stream (TCP) or datagram (UDP, UDP-Lite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    /// `SOCK_STREAM`.
    Stream,
    /// `SOCK_DGRAM`.
    Datagram,
}

/// A datagram socket's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DatagramProtocol {
    /// UDP (`IPPROTO_UDP`).
    #[default]
    Udp,
    /// UDP-Lite (`IPPROTO_UDPLITE`, RFC 3828), over the loopback only and
    /// with its checksum always covering the whole datagram: UDP's
    /// behaviour, in a port space of its own.
    UdpLite,
}

/// Which direction `shutdown` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// `SHUT_RD`.
    Read,
    /// `SHUT_WR`.
    Write,
    /// `SHUT_RDWR`.
    Both,
}

/// What `poll` reports of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Readiness {
    /// `POLLIN`: data, a connection to accept, or end of file.
    pub readable: bool,
    /// `POLLOUT`.
    pub writable: bool,
    /// `POLLHUP`: both directions are over.
    pub hangup: bool,
    /// `POLLERR`: an error waits (`SO_ERROR`).
    pub error: bool,
}

/// The options a socket carries (set before or after it binds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// `SO_REUSEADDR`.
    pub reuse_address: bool,
    /// `SO_REUSEPORT`.
    pub reuse_port: bool,
    /// `IPV6_V6ONLY`.
    pub v6_only: bool,
    /// `TCP_NODELAY`.
    pub no_delay: bool,
    /// `SO_KEEPALIVE`.
    pub keep_alive: bool,
    /// `SO_LINGER`: `Some(seconds)` when on. On with zero seconds, closing
    /// a connection resets it (unsent and unread data dropped); other
    /// values close in the background, as with it off.
    pub linger: Option<u32>,
    /// `IP_TTL`: the hop limit of IPv4 packets sent (`None`: 64).
    pub ttl: Option<u8>,
    /// `IP_TOS`: the TOS byte of IPv4 datagrams sent.
    pub tos: u8,
    /// `IPV6_UNICAST_HOPS`: the hop limit of IPv6 packets sent (`None`: 64).
    pub unicast_hops: Option<u8>,
    /// `IPV6_TCLASS`: the traffic class of IPv6 datagrams sent.
    pub traffic_class: u8,
    /// Which control messages a datagram socket's `recvmsg` adds (kept
    /// here for the system-call layer, which builds them).
    pub receive: ReceiveOptions,
}

/// What one datagram's send asks beyond the socket's options
/// (`sendmsg`'s `IP_TTL`, `IP_TOS`, `IPV6_HOPLIMIT`, `IPV6_TCLASS`,
/// `IP_PKTINFO`, `IPV6_PKTINFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SendControl {
    /// Hop limit and traffic class, where given.
    pub marks: IpMarks,
    /// The source address, where given (one of this host's).
    pub source: Option<IpAddress>,
}

/// `IP_PKTINFO`, `IP_RECVTTL`, `IP_RECVTOS`, `IPV6_RECVPKTINFO`,
/// `IPV6_RECVHOPLIMIT`, `IPV6_RECVTCLASS`: what a received datagram's
/// control messages tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReceiveOptions {
    /// `IP_PKTINFO`.
    pub ip_packet_info: bool,
    /// `IP_RECVTTL`.
    pub ip_ttl: bool,
    /// `IP_RECVTOS`.
    pub ip_tos: bool,
    /// `IPV6_RECVPKTINFO`.
    pub ipv6_packet_info: bool,
    /// `IPV6_RECVHOPLIMIT`.
    pub ipv6_hop_limit: bool,
    /// `IPV6_RECVTCLASS`.
    pub ipv6_traffic_class: bool,
}

impl Options {
    /// What a packet to `to` carries by these options (hop limit and
    /// traffic class, unless the send itself names them).
    pub(crate) fn marks_to(&self, to: IpAddress, asked: IpMarks) -> IpMarks {
        let (hop_limit, traffic_class) = match to {
            IpAddress::Ipv4(_) => (self.ttl, self.tos),
            IpAddress::Ipv6(_) => (self.unicast_hops, self.traffic_class),
        };
        IpMarks {
            hop_limit: asked.hop_limit.or(hop_limit),
            traffic_class: asked.traffic_class.or((traffic_class != 0).then_some(traffic_class)),
        }
    }
}

/// One socket.
pub(crate) struct Socket {
    pub family: Family,
    pub options: Options,
    /// Who pays for its buffers.
    pub owner: Owner,
    /// Where it is bound (the address may be unspecified).
    pub local: Option<IpEndpoint>,
    pub body: Body,
}

impl Socket {
    /// Whether a connection to `address` is of a family this socket takes
    /// (an IPv6 socket without IPV6_V6ONLY takes IPv4 too).
    pub fn takes_family(&self, address: IpAddress) -> bool {
        match (self.family, address) {
            (Family::V4, IpAddress::Ipv4(_)) | (Family::V6, IpAddress::Ipv6(_)) => true,
            (Family::V6, IpAddress::Ipv4(_)) => !self.options.v6_only,
            (Family::V4, IpAddress::Ipv6(_)) => false,
        }
    }
}

pub(crate) enum Body {
    Stream(Stream),
    Datagram(Datagram),
}

/// The lanes, the sockets and the ports.
pub struct Network {
    pub(crate) lanes: Vec<Lane>,
    pub(crate) sockets: Vec<Option<Socket>>,
    pub(crate) ports: PortTable,
    /// smoltcp sockets closed by their owner and still finishing (FIN
    /// exchange, TIME-WAIT); removed when closed.
    pub(crate) lingering: Vec<(LaneId, crate::lanes::Slot)>,
    /// The listening sockets (refilled after every packet that changes one).
    pub(crate) listeners: Vec<SocketId>,
    pub(crate) now: Instant,
    /// The NIC's lane, once a card is found.
    pub(crate) ethernet: Option<crate::ethernet::Ethernet>,
    /// A listener's own call (listen, accept, close) or a new lane may
    /// have left a listener to settle.
    pub(crate) listeners_unsettled: bool,
    /// What socket buffers are charged to (none: nothing is charged).
    pub(crate) account: Option<alloc::boxed::Box<dyn crate::BufferAccount>>,
}

/// Rounds of ingress and egress one lane's poll runs at most.
const POLL_ROUNDS: usize = 64;
/// Packets one round takes in before it sends.
const PACKETS_PER_ROUND: usize = 64;

/// smoltcp's time from the uptime in nanoseconds.
fn instant(uptime_nanoseconds: u64) -> Instant {
    Instant::from_micros((uptime_nanoseconds / 1000) as i64)
}

impl Network {
    /// A network with the loopback lane only, at uptime `now` (ns).
    pub fn new(now: u64) -> Network {
        let now = instant(now);
        Network { lanes: alloc::vec![Lane::loopback(now), Lane::loopback(now)], sockets: Vec::new(), ports: PortTable::new(), lingering: Vec::new(), listeners: Vec::new(), now, ethernet: None, listeners_unsettled: true, account: None }
    }

    /// Moves every lane's packets at uptime `now` (ns), then settles the
    /// sockets (listeners refilled, finished connections let go); whether
    /// anything a waiter may care about changed.
    pub fn poll(&mut self, now: u64) -> bool {
        self.now = self.now.max(instant(now));
        let mut changed = false;
        for lane in 0..self.lanes.len() {
            changed |= self.poll_lane(lane);
        }
        let configured = self.apply_dhcp();
        self.listeners_unsettled |= configured;
        changed |= configured;
        // Listeners change only through the shared set's packets and
        // timers or their own calls (listen, accept, close): a connection's
        // traffic leaves them as they were.
        if self.listeners_unsettled || self.lanes.iter().any(|lane| lane.shared_touched) {
            changed |= self.settle_listeners();
        }
        if self.reset_fed_after_close() {
            for lane in 0..self.lanes.len() {
                changed |= self.poll_lane(lane);
            }
        }
        self.drop_finished();
        self.give_back_released();
        changed
    }

    /// Resets every closed connection that received data after its close
    /// (nobody will read it), as Linux does: the sender learns at once
    /// (ECONNRESET, EPIPE) instead of filling a window nobody empties —
    /// asyncio's sendfile fallback waited forever on a peer that had
    /// closed in the middle. Whether any was reset (its RST still to go).
    fn reset_fed_after_close(&mut self) -> bool {
        let mut reset = false;
        for &(lane, slot) in &self.lingering {
            let fed = self.lanes[lane].connection_ref(slot).recv_queue() > 0;
            if fed {
                self.lanes[lane].connection(slot).abort();
                reset = true;
            }
        }
        reset
    }

    /// Moves lane `lane`'s packets until nothing moves (at most
    /// [`POLL_ROUNDS`] rounds of ingress and egress; on the loopback a
    /// segment sent in one round is received in the next). Listeners are
    /// refilled after each packet that changed a socket, so a burst of
    /// SYNs finds a listening socket for each (up to the backlog).
    fn poll_lane(&mut self, lane: LaneId) -> bool {
        let mut changed = false;
        for _ in 0..POLL_ROUNDS {
            let mut received = 0;
            loop {
                // A SYN no listener's family or address takes is refused
                // here (smoltcp's listening sockets take either family).
                let destination = match self.lanes[lane].next_destination() {
                    Destination::Opening(local) if !self.takes_connection(local) => Destination::Refused,
                    destination => destination,
                };
                let Some(socket_changed) = self.lanes[lane].ingress_one(self.now, destination) else { break };
                received += 1;
                changed |= socket_changed;
                // A packet for a listening pool (a SYN, a handshake's ACK):
                // settle at once, so a burst of SYNs finds a listening
                // socket for each.
                if socket_changed && matches!(destination, Destination::Shared | Destination::Opening(_)) {
                    self.settle_listeners();
                }
                if received >= PACKETS_PER_ROUND {
                    break;
                }
            }
            let sent = self.lanes[lane].egress(self.now);
            changed |= sent;
            // Egress ran after everything received: with nothing sent and
            // nothing more received, another round would find no work.
            if !sent && !self.lanes[lane].has_received() {
                break;
            }
        }
        changed
    }

    /// Whether frames wait to be taken in on some lane.
    pub fn has_received(&self) -> bool {
        self.lanes.iter().any(Lane::has_received)
    }

    /// How long until a lane needs polling for its timers (nanoseconds),
    /// if any does.
    pub fn poll_delay(&mut self) -> Option<u64> {
        let now = self.now;
        let next = self.lanes.iter().filter_map(Lane::poll_at).min()?;
        let delay: Duration = if next > now { next - now } else { Duration::from_millis(0) };
        Some(delay.total_micros() * 1000)
    }

    /// A new socket.
    pub fn open(&mut self, family: Family, kind: SocketKind) -> Result<SocketId, Errno> {
        self.open_for(family, kind, 0)
    }

    /// A new socket whose buffers `owner` pays for (its listening pool
    /// and the connections it accepts too).
    pub fn open_for(&mut self, family: Family, kind: SocketKind, owner: Owner) -> Result<SocketId, Errno> {
        self.open_with(family, kind, DatagramProtocol::Udp, owner)
    }

    /// A new datagram socket of `protocol` whose buffers `owner` pays for.
    pub fn open_datagram_for(&mut self, family: Family, protocol: DatagramProtocol, owner: Owner) -> Result<SocketId, Errno> {
        self.open_with(family, SocketKind::Datagram, protocol, owner)
    }

    fn open_with(&mut self, family: Family, kind: SocketKind, protocol: DatagramProtocol, owner: Owner) -> Result<SocketId, Errno> {
        let body = match kind {
            SocketKind::Stream => Body::Stream(Stream::Idle),
            SocketKind::Datagram => Body::Datagram(Datagram::new(protocol)),
        };
        let socket = Socket { family, options: Options { v6_only: false, ..Options::default() }, owner, local: None, body };
        if let Some(free) = self.sockets.iter().position(Option::is_none) {
            self.sockets[free] = Some(socket);
            return Ok(SocketId(free));
        }
        self.sockets.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.sockets.push(Some(socket));
        Ok(SocketId(self.sockets.len() - 1))
    }

    /// Closes socket `id`: a connection ends gracefully in the background
    /// (by a reset under `SO_LINGER` of zero seconds),
    /// a listener's waiting connections are reset.
    pub fn close(&mut self, id: SocketId) {
        self.listeners_unsettled = true;
        let Some(socket) = self.sockets.get_mut(id.0).and_then(Option::take) else { return };
        self.ports.release(id.0);
        self.listeners.retain(|listener| *listener != id);
        match socket.body {
            Body::Stream(stream) => self.close_stream(stream, socket.options.linger == Some(0)),
            Body::Datagram(datagram) => self.close_datagram(datagram, socket.local.map(|local| local.port)),
        }
        self.give_back_released();
    }

    pub(crate) fn socket(&self, id: SocketId) -> Result<&Socket, Errno> {
        self.sockets.get(id.0).and_then(Option::as_ref).ok_or(Errno::EBADF)
    }

    pub(crate) fn socket_mut(&mut self, id: SocketId) -> Result<&mut Socket, Errno> {
        self.sockets.get_mut(id.0).and_then(Option::as_mut).ok_or(Errno::EBADF)
    }

    /// Its options.
    pub fn options(&self, id: SocketId) -> Result<Options, Errno> {
        Ok(self.socket(id)?.options)
    }

    /// Sets its options (what a connection already uses changes too).
    pub fn set_options(&mut self, id: SocketId, options: Options) -> Result<(), Errno> {
        self.socket_mut(id)?.options = options;
        self.apply_stream_options(id);
        Ok(())
    }

    /// Binds socket `id` to `local` (port 0: an ephemeral port). EINVAL
    /// if it is bound already, EADDRNOTAVAIL for an address no lane has.
    pub fn bind(&mut self, id: SocketId, local: IpEndpoint) -> Result<(), Errno> {
        let socket = self.socket(id)?;
        if socket.local.is_some() {
            return Err(Errno::EINVAL);
        }
        if let (Family::V4, IpAddress::Ipv6(_)) = (socket.family, local.addr) {
            return Err(Errno::EAFNOSUPPORT);
        }
        if !local.addr.is_unspecified() && !self.lanes.iter().any(|lane| lane.has_address(local.addr)) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        let protocol = match &socket.body {
            Body::Stream(_) => Protocol::Tcp,
            Body::Datagram(datagram) => datagram.port_protocol(),
        };
        let options = socket.options;
        let claim = Claim { owner: id.0, protocol, address: local.addr, v6_only: options.v6_only, reuse_address: options.reuse_address, reuse_port: options.reuse_port };
        let port = self.ports.bind(claim, local.port)?;
        self.socket_mut(id)?.local = Some(IpEndpoint::new(local.addr, port));
        Ok(())
    }

    /// Binds an unbound socket to an ephemeral port of its family's
    /// unspecified address (before it connects or sends).
    pub(crate) fn bind_ephemeral(&mut self, id: SocketId) -> Result<IpEndpoint, Errno> {
        let socket = self.socket(id)?;
        if let Some(local) = socket.local {
            return Ok(local);
        }
        self.bind(id, IpEndpoint::new(socket.family.any(), 0))?;
        self.socket(id)?.local.ok_or(Errno::EINVAL)
    }

    /// `getsockname`: where it is bound (the family's unspecified address
    /// and port 0 if nowhere), or the connection's own end.
    pub fn local_name(&self, id: SocketId) -> Result<IpEndpoint, Errno> {
        let socket = self.socket(id)?;
        if let Some(local) = self.connection_local(id) {
            return Ok(local);
        }
        let local = socket.local.unwrap_or(IpEndpoint::new(socket.family.any(), 0));
        // A connected datagram socket bound to no address names the
        // address its datagrams leave from (Linux picks it at connect).
        if let (Body::Datagram(datagram), true) = (&socket.body, local.addr.is_unspecified()) {
            if let Some(source) = datagram.peer.and_then(|peer| self.source_address(peer.addr)) {
                return Ok(IpEndpoint::new(source, local.port));
            }
        }
        Ok(local)
    }

    /// `getpeername` (ENOTCONN when it has no peer).
    pub fn peer_name(&self, id: SocketId) -> Result<IpEndpoint, Errno> {
        match &self.socket(id)?.body {
            Body::Stream(_) => self.stream_peer(id),
            Body::Datagram(datagram) => datagram.peer.ok_or(Errno::ENOTCONN),
        }
    }

    /// The IP protocol number of socket `id` (`SO_PROTOCOL`): 6, 17 or 136.
    pub fn protocol_number(&self, id: SocketId) -> Result<u8, Errno> {
        Ok(match &self.socket(id)?.body {
            Body::Stream(_) => 6,
            Body::Datagram(datagram) => match datagram.protocol {
                DatagramProtocol::Udp => 17,
                DatagramProtocol::UdpLite => 136,
            },
        })
    }

    /// The socket's family and kind.
    pub fn describe(&self, id: SocketId) -> Result<(Family, SocketKind), Errno> {
        let socket = self.socket(id)?;
        let kind = match socket.body {
            Body::Stream(_) => SocketKind::Stream,
            Body::Datagram(_) => SocketKind::Datagram,
        };
        Ok((socket.family, kind))
    }

    /// The interfaces as route netlink reports them: loopback first
    /// (index 1, `lo`), then each card in order (`eth0`, …).
    pub fn interfaces(&self) -> Vec<crate::netlink::InterfaceInfo> {
        const CARDS: [&str; 4] = ["eth0", "eth1", "eth2", "eth3"];
        self.lanes
            .iter()
            .enumerate()
            .filter(|(lane, _)| *lane == LOOPBACK || (FIRST_CARD..FIRST_CARD + CARDS.len()).contains(lane))
            .map(|(lane, state)| crate::netlink::InterfaceInfo {
                index: interface_index(lane),
                name: if lane == LOOPBACK { "lo" } else { CARDS[lane - FIRST_CARD] },
                loopback: lane == LOOPBACK,
                // smoltcp asks only an Ethernet interface for its address.
                hardware: match state.device.medium() {
                    smoltcp::phy::Medium::Ethernet => match state.iface.hardware_addr() {
                        smoltcp::wire::HardwareAddress::Ethernet(mac) => mac.0,
                        _ => [0; 6],
                    },
                    _ => [0; 6],
                },
                mtu: if lane == LOOPBACK { 65_536 } else { state.device.ip_mtu() as u32 },
                addresses: state.iface.ip_addrs().iter().map(|cidr| (cidr.address(), cidr.prefix_len())).collect(),
            })
            .collect()
    }

    /// The lane packets to `address` go out on (ENETUNREACH if none).
    pub(crate) fn lane_to(&self, address: IpAddress) -> Result<LaneId, Errno> {
        if address.is_unspecified() || self.lanes[LOOPBACK].reaches(address) {
            return Ok(LOOPBACK);
        }
        (FIRST_CARD..self.lanes.len()).find(|&lane| self.lanes[lane].reaches(address) || self.lanes[lane].iface.ip_addrs().iter().any(|cidr| matches!((cidr.address(), address), (IpAddress::Ipv4(_), IpAddress::Ipv4(_)) | (IpAddress::Ipv6(_), IpAddress::Ipv6(_))))).ok_or(Errno::ENETUNREACH)
    }

    /// The address packets to `destination` leave from: the first of its
    /// family on the lane they take.
    pub(crate) fn source_address(&self, destination: IpAddress) -> Option<IpAddress> {
        let lane = self.lane_to(destination).ok()?;
        let same_family = |address: &IpAddress| matches!((address, destination), (IpAddress::Ipv4(_), IpAddress::Ipv4(_)) | (IpAddress::Ipv6(_), IpAddress::Ipv6(_)));
        self.lanes[lane].iface.ip_addrs().iter().map(|cidr| cidr.address()).find(same_family)
    }

    /// The lanes a socket bound to `address` listens or receives on.
    pub(crate) fn lanes_for(&self, address: IpAddress) -> Vec<LaneId> {
        (0..self.lanes.len()).filter(|&lane| lane != LITE_LOOPBACK && (address.is_unspecified() || self.lanes[lane].has_address(address))).collect()
    }

    /// [`Network::lane_to`] for a datagram socket of `protocol`: UDP-Lite
    /// reaches the loopback's addresses only (ENETUNREACH past them).
    pub(crate) fn datagram_lane_to(&self, protocol: DatagramProtocol, address: IpAddress) -> Result<LaneId, Errno> {
        match protocol {
            DatagramProtocol::Udp => self.lane_to(address),
            DatagramProtocol::UdpLite if address.is_unspecified() || self.lanes[LITE_LOOPBACK].reaches(address) => Ok(LITE_LOOPBACK),
            DatagramProtocol::UdpLite => Err(Errno::ENETUNREACH),
        }
    }

    /// [`Network::lanes_for`] for a datagram socket of `protocol`.
    pub(crate) fn datagram_lanes_for(&self, protocol: DatagramProtocol, address: IpAddress) -> Vec<LaneId> {
        match protocol {
            DatagramProtocol::Udp => self.lanes_for(address),
            DatagramProtocol::UdpLite => [LITE_LOOPBACK].into_iter().filter(|&lane| address.is_unspecified() || self.lanes[lane].has_address(address)).collect(),
        }
    }

    /// Removes from their sets the smoltcp sockets that closed sockets
    /// left finishing, once they are done.
    fn drop_finished(&mut self) {
        let lanes = &mut self.lanes;
        self.lingering.retain(|&(lane, slot)| {
            // TIME-WAIT is let go at once: it would hold a connection's
            // buffers for its whole wait, and a late segment for it gets a
            // reset at worst.
            let state = lanes[lane].connection_ref(slot).state();
            let done = matches!(state, smoltcp::socket::tcp::State::Closed | smoltcp::socket::tcp::State::TimeWait);
            if done {
                lanes[lane].release(slot);
            }
            !done
        });
    }
}

/// Either kind's received datagram or bytes.
pub use crate::datagram::DatagramReceived as Received;

impl Network {
    /// Sends on socket `id` (a stream ignores `to`).
    pub fn send(&mut self, id: SocketId, data: &[u8], to: Option<IpEndpoint>) -> Result<usize, Errno> {
        self.send_with(id, data, to, SendControl::default())
    }

    /// [`Network::send`] with what `sendmsg`'s control messages ask of a
    /// datagram. A stream ignores it (Linux's TCP takes no such control
    /// messages).
    pub fn send_with(&mut self, id: SocketId, data: &[u8], to: Option<IpEndpoint>, control: SendControl) -> Result<usize, Errno> {
        match self.socket(id)?.body {
            Body::Stream(_) => self.send_stream(id, data),
            Body::Datagram(_) => self.send_datagram(id, data, to, control),
        }
    }

    /// Receives from socket `id`: a stream's bytes (its peer as `from`),
    /// or one datagram.
    pub fn receive(&mut self, id: SocketId, buffer: &mut [u8], peek: bool) -> Result<Received, Errno> {
        match self.socket(id)?.body {
            Body::Stream(_) => {
                let copied = self.receive_stream(id, buffer, peek)?;
                let from = self.stream_peer(id).unwrap_or(IpEndpoint::new(self.socket(id)?.family.any(), 0));
                Ok(Received { copied, length: copied, from, arrival: None })
            }
            Body::Datagram(_) => self.receive_datagram(id, buffer, peek),
        }
    }

    /// How many bytes a receive on socket `id` would take now: a stream's
    /// queued bytes, the next datagram's length (0: nothing waits).
    pub fn pending_bytes(&mut self, id: SocketId) -> usize {
        match self.socket(id).map(|socket| &socket.body) {
            Ok(Body::Stream(_)) => self.stream_pending(id),
            Ok(Body::Datagram(_)) => self.datagram_pending(id),
            Err(_) => 0,
        }
    }

    /// A count that moves with everything arriving at or leaving socket
    /// `id`: bytes received or sent out of its buffer, datagrams,
    /// connections for a listener.
    pub fn activity(&mut self, id: SocketId) -> u64 {
        match self.socket(id).map(|socket| &socket.body) {
            Ok(Body::Stream(_)) => self.stream_activity(id),
            Ok(Body::Datagram(datagram)) => datagram.taken + self.datagram_pending(id) as u64,
            Err(_) => 0,
        }
    }

    /// What `poll` reports of socket `id`.
    pub fn readiness(&mut self, id: SocketId) -> Result<Readiness, Errno> {
        match self.socket(id)?.body {
            Body::Stream(_) => self.stream_readiness(id),
            Body::Datagram(_) => self.datagram_readiness(id),
        }
    }

    /// `shutdown` (a datagram socket: ENOTCONN unless connected, then nothing).
    pub fn shutdown(&mut self, id: SocketId, how: Shutdown) -> Result<(), Errno> {
        match &self.socket(id)?.body {
            Body::Stream(_) => self.shutdown_stream(id, how),
            Body::Datagram(datagram) => datagram.peer.map(drop).ok_or(Errno::ENOTCONN),
        }
    }

    /// Whether stream `id` is listening (`SO_ACCEPTCONN`).
    pub fn is_listening(&self, id: SocketId) -> bool {
        matches!(self.socket(id).map(|socket| &socket.body), Ok(Body::Stream(crate::stream::Stream::Listening(_))))
    }
}
