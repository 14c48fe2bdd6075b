//! Datagram (UDP) sockets with Linux's behaviour over smoltcp's UDP: bound
//! (explicitly, or to an ephemeral port at the first send), one smoltcp
//! socket per lane it receives on; `connect` fixes the peer (datagrams
//! from others are dropped) and `AF_UNSPEC` undoes it. A datagram a
//! connected socket sends over the loopback to a port nobody has bound
//! leaves ECONNREFUSED waiting on it (reported once, by the next receive,
//! send or `SO_ERROR`; `poll` sees it), as Linux's ICMP port-unreachable
//! does: a resolver asking 127.0.0.1:53 with no server there gives up at
//! once instead of waiting out its timeout.
//!
//! A datagram carries the hop limit and traffic class its socket's
//! options or the send name; a receive reports what the header held, to
//! which address and on which interface it came ([`Arrival`]).
//!
//! Must never deliver a datagram cut short without saying so: the caller
//! learns its whole length (`MSG_TRUNC`).

use alloc::vec::Vec;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::udp;
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint};

use crate::ip_marks::{HeaderMarks, IpMarks};
use crate::lanes::{interface_index, Lane, LaneId};
use crate::network::{Body, DatagramProtocol, Network, Readiness, ReceiveOptions, SendControl, SocketId};
use crate::ports::Protocol;
use crate::Errno;

/// Datagrams queued in each direction, and their bytes.
const QUEUED_DATAGRAMS: usize = 64;
const QUEUED_BYTES: usize = 128 * 1024;
/// The largest UDP payload (over IPv4).
pub const LARGEST_DATAGRAM: usize = 65507;

/// A datagram socket's state.
#[derive(Default)]
pub(crate) struct Datagram {
    /// UDP or UDP-Lite (whose smoltcp sockets live on UDP-Lite's own
    /// loopback lane, `lanes::LITE_LOOPBACK`).
    pub protocol: DatagramProtocol,
    /// The smoltcp socket on each lane it is bound to.
    lanes: Vec<(LaneId, SocketHandle)>,
    /// `connect`'s peer.
    pub peer: Option<IpEndpoint>,
    /// Datagrams taken by receives so far (with the queue: arrivals).
    pub taken: u64,
    /// ECONNREFUSED waiting to be reported (see the module's comment).
    pub refused: bool,
    /// It has asked for marks on an IPv6 datagram: each of its IPv6
    /// datagrams since has its marks waiting in the device
    /// ([`crate::ip_marks::PendingMarks`]).
    marks_pending: bool,
}

impl Datagram {
    /// A new socket of `protocol`, unbound.
    pub(crate) fn new(protocol: DatagramProtocol) -> Self {
        Datagram { protocol, ..Datagram::default() }
    }

    /// Whose ports it binds in the port table.
    pub(crate) fn port_protocol(&self) -> Protocol {
        match self.protocol {
            DatagramProtocol::Udp => Protocol::Udp,
            DatagramProtocol::UdpLite => Protocol::UdpLite,
        }
    }
}

/// What one receive got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramReceived {
    /// Bytes copied.
    pub copied: usize,
    /// The datagram's whole length.
    pub length: usize,
    /// Who sent it.
    pub from: IpEndpoint,
    /// How it came (`None` for a stream's bytes).
    pub arrival: Option<Arrival>,
}

/// How a datagram came: what `IP_PKTINFO`, `IP_RECVTTL`,
/// `IPV6_RECVHOPLIMIT` and their kin report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The address it was sent to.
    pub to: IpAddress,
    /// The interface it came in on (its index: 1 is the loopback).
    pub interface: u32,
    /// Its IP header's hop limit and traffic class (`None`: unknown).
    pub marks: Option<HeaderMarks>,
    /// Which of these the receiving socket asked to be told (its options
    /// as the datagram was taken: the caller needs no second look).
    pub asked: ReceiveOptions,
}

/// What one smoltcp UDP socket's queues take (charged to its owner).
pub(crate) const UDP_SOCKET_BYTES: usize = 2 * (QUEUED_BYTES + QUEUED_DATAGRAMS * core::mem::size_of::<udp::PacketMetadata>());

/// A smoltcp UDP socket with its queues (ENOBUFS without room for them).
pub(crate) fn new_udp() -> Result<udp::Socket<'static>, Errno> {
    let buffer = || -> Result<udp::PacketBuffer<'static>, Errno> {
        let mut metadata = Vec::new();
        metadata.try_reserve_exact(QUEUED_DATAGRAMS).map_err(|_| Errno::ENOBUFS)?;
        metadata.resize(QUEUED_DATAGRAMS, udp::PacketMetadata::EMPTY);
        Ok(udp::PacketBuffer::new(metadata, crate::stream::zeroed(QUEUED_BYTES)?))
    };
    Ok(udp::Socket::new(buffer()?, buffer()?))
}

impl Network {
    fn datagram_mut(&mut self, id: SocketId) -> Result<&mut Datagram, Errno> {
        match &mut self.socket_mut(id)?.body {
            Body::Datagram(datagram) => Ok(datagram),
            Body::Stream(_) => Err(Errno::EOPNOTSUPP),
        }
    }

    fn udp(&mut self, lane: LaneId, handle: SocketHandle) -> &mut udp::Socket<'static> {
        self.lanes[lane].shared_mut::<udp::Socket>(handle)
    }

    /// Datagram socket `id` and the lanes, borrowed apart (its smoltcp
    /// sockets are walked without copying the list of them).
    fn datagram_and_lanes(&mut self, id: SocketId) -> Result<(&mut Datagram, &mut [Lane]), Errno> {
        let Network { sockets, lanes, .. } = self;
        match sockets.get_mut(id.0).and_then(Option::as_mut).map(|socket| &mut socket.body) {
            Some(Body::Datagram(datagram)) => Ok((datagram, lanes.as_mut_slice())),
            Some(Body::Stream(_)) => Err(Errno::EOPNOTSUPP),
            None => Err(Errno::EBADF),
        }
    }

    /// Binds (ephemerally if need be) and opens the smoltcp sockets of
    /// datagram socket `id` on every lane its address is on.
    fn open_datagram(&mut self, id: SocketId) -> Result<(), Errno> {
        let local = self.bind_ephemeral(id)?;
        if !self.datagram_mut(id)?.lanes.is_empty() {
            return Ok(());
        }
        let endpoint = IpListenEndpoint { addr: (!local.addr.is_unspecified()).then_some(local.addr), port: local.port };
        let owner = self.socket(id)?.owner;
        let protocol = self.datagram_mut(id)?.protocol;
        let mut opened = Vec::new();
        for lane in self.datagram_lanes_for(protocol, local.addr) {
            let made = self.charged_udp(owner).and_then(|(mut socket, charge)| match socket.bind(endpoint) {
                Ok(()) => Ok(self.lanes[lane].add_shared(socket, Some(charge))),
                Err(_) => {
                    self.lanes[lane].released.push(charge);
                    Err(Errno::EINVAL)
                }
            });
            match made {
                Ok(handle) => opened.push((lane, handle)),
                Err(errno) => {
                    for (lane, handle) in opened {
                        self.lanes[lane].remove_shared(handle);
                    }
                    self.give_back_released();
                    return Err(errno);
                }
            }
        }
        self.datagram_mut(id)?.lanes = opened;
        Ok(())
    }

    /// After `bind`: a datagram socket receives from then on.
    pub fn bound(&mut self, id: SocketId) -> Result<(), Errno> {
        match self.socket(id)?.body {
            Body::Datagram(_) => self.open_datagram(id),
            Body::Stream(_) => Ok(()),
        }
    }

    /// `connect` of a datagram socket (`None`: `AF_UNSPEC`, forget the peer).
    pub fn connect_datagram(&mut self, id: SocketId, peer: Option<IpEndpoint>) -> Result<(), Errno> {
        let peer = peer.map(crate::addresses::this_host);
        if let Some(peer) = peer {
            let protocol = self.datagram_mut(id)?.protocol;
            self.datagram_lane_to(protocol, peer.addr)?;
            self.open_datagram(id)?;
        }
        self.datagram_mut(id)?.peer = peer;
        Ok(())
    }

    /// Sends `data` as one datagram to `to` (or the connected peer):
    /// EDESTADDRREQ without either, EMSGSIZE when too large, EAGAIN when the
    /// queue is full.
    pub fn send_datagram(&mut self, id: SocketId, data: &[u8], to: Option<IpEndpoint>, control: SendControl) -> Result<usize, Errno> {
        // A waiting error fails the send and is cleared (Linux checks it
        // before it makes the packet).
        if core::mem::take(&mut self.datagram_mut(id)?.refused) {
            return Err(Errno::ECONNREFUSED);
        }
        let to = crate::addresses::this_host(to.or(self.datagram_mut(id)?.peer).ok_or(Errno::EDESTADDRREQ)?);
        if data.len() > LARGEST_DATAGRAM {
            return Err(Errno::EMSGSIZE);
        }
        if to.port == 0 {
            return Err(Errno::EINVAL);
        }
        let protocol = self.datagram_mut(id)?.protocol;
        let lane = self.datagram_lane_to(protocol, to.addr)?;
        self.open_datagram(id)?;
        let handle = self.datagram_mut(id)?.lanes.iter().find(|(l, _)| *l == lane).map(|(_, h)| *h).ok_or(Errno::ENETUNREACH)?;
        if let Some(source) = control.source {
            if !self.lanes[lane].has_address(source) {
                return Err(Errno::EINVAL);
            }
        }
        let marks = self.socket(id)?.options.marks_to(to.addr, control.marks);
        let metadata = udp::UdpMetadata { endpoint: to, local_address: control.source, meta: marks.to_meta() };
        match self.udp(lane, handle).send_slice(data, metadata) {
            Ok(()) => {}
            Err(udp::SendError::BufferFull) => return Err(Errno::EAGAIN),
            Err(udp::SendError::Unaddressable) => return Err(Errno::EINVAL),
        }
        if let IpAddress::Ipv6(address) = to.addr {
            let datagram = self.datagram_mut(id)?;
            datagram.marks_pending |= marks != IpMarks::default();
            if datagram.marks_pending {
                let from = self.socket(id)?.local.map_or(0, |local| local.port);
                self.lanes[lane].device.pending_marks.expect(from, address.octets(), to.port, marks);
            }
        }
        // Only a connected socket hears of it, as from an ICMP error.
        let to_peer = self.datagram_mut(id)?.peer == Some(to);
        let port_protocol = self.datagram_mut(id)?.port_protocol();
        if interface_index(lane) == 1 && to_peer && !self.ports.receives(port_protocol, to.addr, to.port) {
            self.datagram_mut(id)?.refused = true;
        }
        Ok(data.len())
    }

    /// Receives one datagram into `buffer` (`peek`: leaving it queued):
    /// EAGAIN when none waits. Datagrams from others than a connected
    /// peer are dropped.
    pub fn receive_datagram(&mut self, id: SocketId, buffer: &mut [u8], peek: bool) -> Result<DatagramReceived, Errno> {
        let asked = self.socket(id)?.options.receive;
        let (datagram, lanes) = self.datagram_and_lanes(id)?;
        if core::mem::take(&mut datagram.refused) {
            return Err(Errno::ECONNREFUSED);
        }
        let peer = datagram.peer;
        for &(lane, handle) in &datagram.lanes {
            let udp = lanes[lane].sockets.get_mut::<udp::Socket>(handle);
            loop {
                let Ok((payload, metadata)) = udp.peek() else { break };
                let from = metadata.endpoint;
                let arrival = Arrival {
                    to: metadata.local_address.unwrap_or(match from.addr {
                        IpAddress::Ipv4(_) => IpAddress::Ipv4(smoltcp::wire::Ipv4Address::UNSPECIFIED),
                        IpAddress::Ipv6(_) => IpAddress::Ipv6(smoltcp::wire::Ipv6Address::UNSPECIFIED),
                    }),
                    interface: interface_index(lane),
                    marks: HeaderMarks::of_reception(metadata.meta),
                    asked,
                };
                if peer.is_some_and(|peer| peer != from) {
                    let _ = udp.recv();
                    continue;
                }
                let copied = payload.len().min(buffer.len());
                buffer[..copied].copy_from_slice(&payload[..copied]);
                let length = payload.len();
                if !peek {
                    let _ = udp.recv();
                    datagram.taken += 1;
                }
                return Ok(DatagramReceived { copied, length, from, arrival: Some(arrival) });
            }
        }
        Err(Errno::EAGAIN)
    }

    /// The length of the next datagram socket `id` would receive (0: none).
    pub(crate) fn datagram_pending(&mut self, id: SocketId) -> usize {
        let Ok((datagram, lanes)) = self.datagram_and_lanes(id) else { return 0 };
        datagram.lanes.iter().find_map(|&(lane, handle)| lanes[lane].sockets.get_mut::<udp::Socket>(handle).peek().ok().map(|(payload, _)| payload.len())).unwrap_or(0)
    }

    /// What `poll` reports of datagram socket `id`.
    pub fn datagram_readiness(&mut self, id: SocketId) -> Result<Readiness, Errno> {
        let (datagram, lanes) = self.datagram_and_lanes(id)?;
        let socket = |&(lane, handle): &(LaneId, SocketHandle)| lanes[lane].sockets.get::<udp::Socket>(handle);
        let readable = datagram.lanes.iter().any(|entry| socket(entry).can_recv());
        let writable = datagram.lanes.is_empty() || datagram.lanes.iter().all(|entry| socket(entry).can_send());
        Ok(Readiness { readable, writable, error: datagram.refused, ..Readiness::default() })
    }

    /// Closes a datagram socket's smoltcp sockets.
    pub(crate) fn close_datagram(&mut self, datagram: Datagram, port: Option<u16>) {
        for (lane, handle) in datagram.lanes {
            self.lanes[lane].remove_shared(handle);
            if let (true, Some(port)) = (datagram.marks_pending, port) {
                self.lanes[lane].device.pending_marks.forget(port);
            }
        }
    }
}
