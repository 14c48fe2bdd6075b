//! Stream (TCP) sockets with Linux's behaviour over smoltcp's TCP.
//!
//! A smoltcp TCP socket serves one connection and a listening one becomes
//! the connection its SYN opens, so a listening socket here is a pool:
//! [`LISTEN_SLOTS`] smoltcp sockets in LISTEN per lane, refilled after
//! every poll, and the connections they made waiting in `ready` for
//! `accept` (at most the backlog). Half-open connections are bounded by
//! the backlog too: a SYN flood costs a bounded number of sockets.
//!
//! Must never lose track of a smoltcp socket: each one is a connection's,
//! a listener's, or `lingering` until smoltcp is done with it.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp::{self, State};
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint};

use crate::lanes::{LaneId, Slot};
use crate::network::{Body, Network, Readiness, Shutdown, SocketId};
use crate::socket_table::{stream_row, TableRow};
use crate::Errno;

/// smoltcp sockets kept in LISTEN per lane for each listening socket.
pub const LISTEN_SLOTS: usize = 4;
/// Each connection's receive and send buffers.
pub const BUFFER_BYTES: usize = 64 * 1024;
/// What one smoltcp TCP socket's buffers take (charged to its owner).
pub(crate) const TCP_SOCKET_BYTES: usize = 2 * BUFFER_BYTES;
/// Closed connections still finishing their FIN exchange kept at most;
/// the oldest is let go beyond it (each holds its buffers).
const LINGERING_LIMIT: usize = 64;

/// What a stream socket is doing.
pub(crate) enum Stream {
    /// Neither listening nor connected (perhaps bound).
    Idle,
    /// Listening.
    Listening(Listener),
    /// Connecting, connected, or done with a connection.
    Connection(Connection),
}

pub(crate) struct Listener {
    backlog: usize,
    /// Connections accepted so far (with the ready queue: arrivals).
    accepted: u64,
    /// smoltcp sockets listening or handshaking.
    waiting: Vec<(LaneId, SocketHandle)>,
    /// Established connections not yet accepted (each in a set of its own).
    ready: VecDeque<(LaneId, Slot)>,
    lanes: Vec<LaneId>,
}

impl Listener {
    /// Connections it holds: handshaking, listening or ready.
    fn held(&self) -> usize {
        self.waiting.len() + self.ready.len()
    }

    /// The most it may hold: the backlog, and a full pool on each lane (a
    /// SYN flood's bound).
    fn limit(&self) -> usize {
        self.backlog + LISTEN_SLOTS * self.lanes.len()
    }

    /// Whether another pooled socket may be made.
    fn has_room(&self) -> bool {
        self.held() < self.limit()
    }
}

pub(crate) struct Connection {
    lane: LaneId,
    slot: Slot,
    /// Whether it was ever established (a close before that is a refusal).
    established: bool,
    /// Bytes taken by receives so far (with the queue: arrivals).
    consumed: u64,
    /// Bytes queued by sends so far (less the queue: departures).
    queued: u64,
    shut_read: bool,
    shut_write: bool,
    /// `SO_ERROR` not yet reported.
    error: Option<Errno>,
    /// The refusal or reset was seen by an operation already.
    failure_reported: bool,
    /// The peer's FIN was seen (CLOSE-WAIT): a reset after it is EPIPE,
    /// not ECONNRESET, as Linux's `tcp_reset` says.
    peer_finished: bool,
}

/// A smoltcp TCP socket with its buffers (ENOBUFS when the heap has no
/// room for them: the one call fails, as Linux's does).
pub(crate) fn new_tcp() -> Result<tcp::Socket<'static>, Errno> {
    let mut socket = tcp::Socket::new(tcp::SocketBuffer::new(zeroed(BUFFER_BYTES)?), tcp::SocketBuffer::new(zeroed(BUFFER_BYTES)?));
    socket.set_ack_delay(None);
    Ok(socket)
}

/// `bytes` zero bytes, or ENOBUFS.
pub(crate) fn zeroed(bytes: usize) -> Result<Vec<u8>, Errno> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(bytes).map_err(|_| Errno::ENOBUFS)?;
    buffer.resize(bytes, 0);
    Ok(buffer)
}

/// States in which the connection was established at some point.
fn was_established(state: State) -> bool {
    matches!(state, State::Established | State::FinWait1 | State::FinWait2 | State::CloseWait | State::Closing | State::LastAck | State::TimeWait)
}

/// A line of `/proc/net/tcp` for a stream socket (see `socket_table`).
pub(crate) struct StreamRow {
    pub row: TableRow,
    /// Held by the socket's own descriptor (not a connection waiting to be accepted).
    pub owned: bool,
}

impl Network {
    /// A listening pool's socket (in the lane's shared set).
    fn pooled(&mut self, lane: LaneId, handle: SocketHandle) -> &mut tcp::Socket<'static> {
        self.lanes[lane].shared_mut::<tcp::Socket>(handle)
    }

    /// A connection's socket, to change (egressed at the next poll).
    fn tcp(&mut self, lane: LaneId, slot: Slot) -> &mut tcp::Socket<'static> {
        self.lanes[lane].connection(slot)
    }

    /// A connection's socket, to look at.
    fn tcp_ref(&self, lane: LaneId, slot: Slot) -> &tcp::Socket<'static> {
        self.lanes[lane].connection_ref(slot)
    }

    fn stream_mut(&mut self, id: SocketId) -> Result<&mut Stream, Errno> {
        match &mut self.socket_mut(id)?.body {
            Body::Stream(stream) => Ok(stream),
            Body::Datagram(_) => Err(Errno::EOPNOTSUPP),
        }
    }

    /// The connection of stream `id`, its `established` flag brought up to date.
    fn connection(&mut self, id: SocketId) -> Result<Option<&mut Connection>, Errno> {
        let (lane, slot) = match self.stream_mut(id)? {
            Stream::Connection(connection) => (connection.lane, connection.slot),
            _ => return Ok(None),
        };
        let state = self.tcp_ref(lane, slot).state();
        let Stream::Connection(connection) = self.stream_mut(id)? else { return Ok(None) };
        if was_established(state) {
            connection.established = true;
        }
        if matches!(state, State::CloseWait | State::LastAck) {
            connection.peer_finished = true;
        }
        if state == State::Closed && connection.error.is_none() && !connection.failure_reported && !(connection.established && connection.shut_write) {
            connection.error = Some(match (connection.established, connection.peer_finished) {
                (false, _) => Errno::ECONNREFUSED,
                (true, false) => Errno::ECONNRESET,
                (true, true) => Errno::EPIPE,
            });
        }
        Ok(Some(connection))
    }

    /// `listen(id, backlog)`: binds an unbound socket to an ephemeral port.
    pub fn listen(&mut self, id: SocketId, backlog: usize) -> Result<(), Errno> {
        self.listeners_unsettled = true;
        let backlog = backlog.clamp(1, 4096);
        match self.stream_mut(id)? {
            Stream::Idle => {}
            Stream::Listening(listener) => {
                listener.backlog = backlog;
                return Ok(());
            }
            Stream::Connection(_) => return Err(Errno::EINVAL),
        }
        let local = self.bind_ephemeral(id)?;
        self.ports.listen(id.0)?;
        let lanes = self.lanes_for(local.addr);
        self.listeners.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        *self.stream_mut(id)? = Stream::Listening(Listener { backlog, accepted: 0, waiting: Vec::new(), ready: VecDeque::new(), lanes });
        self.listeners.push(id);
        self.refill(id);
        Ok(())
    }

    /// Tops the listener `id` up to [`LISTEN_SLOTS`] listening smoltcp
    /// sockets per lane, while its half-open connections stay within
    /// bounds: at the bound the oldest half-open connection goes, so a SYN
    /// flood that never completes its handshakes still leaves a new
    /// client a listening socket (Linux answers floods with SYN cookies;
    /// this is the bound without them).
    fn refill(&mut self, id: SocketId) {
        let Ok(socket) = self.socket(id) else { return };
        let Some(local) = socket.local else { return };
        let owner = socket.owner;
        let Body::Stream(Stream::Listening(listener)) = &socket.body else { return };
        let (lanes, mut count, limit) = (listener.lanes.clone(), listener.held(), listener.limit());
        let endpoint = IpListenEndpoint { addr: (!local.addr.is_unspecified()).then_some(local.addr), port: local.port };
        let mut added = Vec::new();
        for lane in lanes {
            let listening = self.listening_on(id, lane);
            for _ in listening..LISTEN_SLOTS {
                if count >= limit {
                    if !self.drop_oldest_half_open(id) {
                        break;
                    }
                    count -= 1;
                }
                // Without room for another listening socket (the owner's
                // quota, the heap), the pool stays smaller (SYNs find
                // fewer); the next refill tries again.
                let Ok((mut tcp, charge)) = self.charged_tcp(owner) else { break };
                if tcp.listen(endpoint).is_err() {
                    self.lanes[lane].released.push(charge);
                    break;
                }
                added.push((lane, self.lanes[lane].add_shared(tcp, Some(charge))));
                count += 1;
            }
        }
        if let Ok(Stream::Listening(listener)) = self.stream_mut(id) {
            listener.waiting.extend(added);
        }
    }

    /// Forgets listener `id`'s oldest connection still in SYN-RECEIVED
    /// (its peer's next segment gets a reset); false when it has none.
    fn drop_oldest_half_open(&mut self, id: SocketId) -> bool {
        let Ok(socket) = self.socket(id) else { return false };
        let Body::Stream(Stream::Listening(listener)) = &socket.body else { return false };
        let lanes = &self.lanes;
        let Some(position) = listener.waiting.iter().position(|&(lane, handle)| lanes[lane].sockets.get::<tcp::Socket>(handle).state() == State::SynReceived) else { return false };
        let Ok(Stream::Listening(listener)) = self.stream_mut(id) else { return false };
        let (lane, handle) = listener.waiting.remove(position);
        self.lanes[lane].remove_shared(handle);
        true
    }

    fn listening_on(&self, id: SocketId, lane: LaneId) -> usize {
        let Ok(socket) = self.socket(id) else { return 0 };
        let Body::Stream(Stream::Listening(listener)) = &socket.body else { return 0 };
        let sockets = &self.lanes[lane].sockets;
        listener.waiting.iter().filter(|(on, handle)| *on == lane && sockets.get::<tcp::Socket>(*handle).state() == State::Listen).count()
    }

    /// After a poll: each listener's established connections move to its
    /// ready queue (while there is room), failed ones go, and the pool is
    /// refilled; whether a connection became ready.
    pub(crate) fn settle_listeners(&mut self) -> bool {
        self.listeners_unsettled = false;
        for lane in &mut self.lanes {
            lane.shared_touched = false;
        }
        let mut any_ready = false;
        for index in 0..self.listeners.len() {
            let id = self.listeners[index];
            if self.settled(id) {
                continue;
            }
            let Ok(Stream::Listening(listener)) = self.stream_mut(id) else { continue };
            let waiting = core::mem::take(&mut listener.waiting);
            let (mut keep, mut ready, mut gone) = (Vec::new(), Vec::new(), Vec::new());
            for (lane, handle) in waiting {
                match self.pooled(lane, handle).state() {
                    State::Listen | State::SynReceived => keep.push((lane, handle)),
                    State::Established | State::CloseWait => ready.push((lane, handle)),
                    _ => gone.push((lane, handle)),
                }
            }
            for (lane, handle) in gone {
                self.lanes[lane].remove_shared(handle);
            }
            for (lane, handle) in ready {
                match self.listener_for(id, (lane, handle)) {
                    Some(owner) if self.has_room(owner) => match self.lanes[lane].adopt_shared(handle) {
                        Ok(slot) => {
                            if let Ok(Stream::Listening(listener)) = self.stream_mut(owner) {
                                listener.ready.push_back((lane, slot));
                            }
                            any_ready = true;
                        }
                        // No room for its set: the socket is gone with the
                        // move; the peer's next segment gets a reset.
                        Err(_) => {}
                    },
                    Some(_) => keep.push((lane, handle)),
                    None => {
                        self.pooled(lane, handle).abort();
                        keep.push((lane, handle));
                    }
                }
            }
            if let Ok(Stream::Listening(listener)) = self.stream_mut(id) {
                listener.waiting.extend(keep);
            }
            self.refill(id);
        }
        any_ready
    }

    /// Whether listener `id` has nothing to settle: every pooled socket
    /// still listening or handshaking, and a full pool on each lane (this
    /// runs after every packet that changes a socket: no allocation).
    fn settled(&self, id: SocketId) -> bool {
        let Ok(socket) = self.socket(id) else { return true };
        let Body::Stream(Stream::Listening(listener)) = &socket.body else { return true };
        let handshaking = |&(lane, handle): &(LaneId, SocketHandle)| matches!(self.lanes[lane].sockets.get::<tcp::Socket>(handle).state(), State::Listen | State::SynReceived);
        let full_pools = listener.lanes.iter().all(|&lane| self.listening_on(id, lane) >= LISTEN_SLOTS);
        // At the bound, a pool short of listening sockets is refilled by
        // dropping a half-open connection, if there is one.
        let half_open = |&(lane, handle): &(LaneId, SocketHandle)| self.lanes[lane].sockets.get::<tcp::Socket>(handle).state() == State::SynReceived;
        listener.waiting.iter().all(handshaking) && (full_pools || (!listener.has_room() && !listener.waiting.iter().any(half_open)))
    }

    /// Whether some listener takes a connection to `local`: its port, its
    /// address (or the unspecified one), its family (an IPv6 listener
    /// without IPV6_V6ONLY takes IPv4 too).
    pub(crate) fn takes_connection(&self, local: IpEndpoint) -> bool {
        self.listeners.iter().any(|&id| {
            let Ok(socket) = self.socket(id) else { return false };
            let Some(bound) = socket.local else { return false };
            bound.port == local.port && socket.takes_family(local.addr) && (bound.addr.is_unspecified() || bound.addr == local.addr)
        })
    }

    /// Whether `owner`'s ready queue has room under its backlog.
    fn has_room(&self, owner: SocketId) -> bool {
        matches!(self.socket(owner).map(|socket| &socket.body), Ok(Body::Stream(Stream::Listening(listener))) if listener.ready.len() < listener.backlog)
    }

    /// The listener an established connection belongs to: the one whose
    /// pool took its SYN if its family fits, else another listener on the
    /// same port whose does (smoltcp's listening sockets take either
    /// family; Linux gives an IPv4 connection to an IPv4 listener, or to an
    /// IPv6 one without IPV6_V6ONLY). `None`: no listener takes it.
    fn listener_for(&self, took: SocketId, connection: (LaneId, SocketHandle)) -> Option<SocketId> {
        let local = self.lanes[connection.0].sockets.get::<tcp::Socket>(connection.1).local_endpoint()?;
        let fits = |id: SocketId| self.socket(id).is_ok_and(|socket| socket.takes_family(local.addr));
        let port = |id: SocketId| self.socket(id).ok().and_then(|socket| socket.local).map(|local| local.port);
        if fits(took) {
            return Some(took);
        }
        // A listener of the right family first, then one that maps IPv4.
        let same_port = self.listeners.iter().copied().filter(|&other| other != took && port(other) == Some(local.port) && fits(other));
        same_port.min_by_key(|&other| self.socket(other).map_or(2, |socket| u8::from(socket.family != family_of(local.addr))))
    }

    /// `accept`: the next established connection as a new socket (EAGAIN
    /// if none waits, EINVAL if `id` is not listening).
    pub fn accept(&mut self, id: SocketId) -> Result<SocketId, Errno> {
        self.listeners_unsettled = true;
        let (family, options) = {
            let socket = self.socket(id)?;
            (socket.family, socket.options)
        };
        let Stream::Listening(listener) = self.stream_mut(id)? else { return Err(Errno::EINVAL) };
        let Some((lane, slot)) = listener.ready.pop_front() else { return Err(Errno::EAGAIN) };
        listener.accepted += 1;
        let connection = Connection { lane, slot, established: true, consumed: 0, queued: 0, shut_read: false, shut_write: false, error: None, failure_reported: false, peer_finished: false };
        let accepted = self.open(family, crate::SocketKind::Stream);
        let Ok(accepted) = accepted else {
            self.tcp(lane, slot).abort();
            self.lingering.push((lane, slot));
            return Err(Errno::ENOMEM);
        };
        let socket = self.socket_mut(accepted)?;
        socket.options = options;
        socket.body = Body::Stream(Stream::Connection(connection));
        self.apply_stream_options(accepted);
        self.refill(id);
        Ok(accepted)
    }

    /// Starts connecting stream `id` to `remote`; [`Network::connect_outcome`]
    /// says when it is done.
    pub fn connect(&mut self, id: SocketId, remote: IpEndpoint) -> Result<(), Errno> {
        match self.connection(id)? {
            Some(connection) if connection.established && connection.error.is_none() && !connection.failure_reported => return Err(Errno::EISCONN),
            Some(connection) if !connection.established && connection.error.is_none() => return Err(Errno::EALREADY),
            _ => {}
        }
        match self.stream_mut(id)? {
            Stream::Listening(_) => return Err(Errno::EISCONN),
            Stream::Connection(connection) => {
                let (lane, slot) = (connection.lane, connection.slot);
                self.lanes[lane].release(slot);
                *self.stream_mut(id)? = Stream::Idle;
            }
            Stream::Idle => {}
        }
        let remote = crate::addresses::this_host(remote);
        if remote.port == 0 {
            return Err(Errno::ECONNREFUSED);
        }
        let lane = self.lane_to(remote.addr)?;
        let local = self.bind_ephemeral(id)?;
        let (mut tcp, charge) = self.charged_tcp(self.socket(id)?.owner)?;
        let local = IpListenEndpoint { addr: (!local.addr.is_unspecified()).then_some(local.addr), port: local.port };
        if let Err(error) = tcp.connect(self.lanes[lane].iface.context(), remote, local) {
            self.lanes[lane].released.push(charge);
            self.give_back_released();
            return Err(match error {
                tcp::ConnectError::InvalidState => Errno::EISCONN,
                tcp::ConnectError::Unaddressable => Errno::EADDRNOTAVAIL,
            });
        }
        let adopted = self.lanes[lane].adopt(tcp, Some(charge));
        self.give_back_released();
        let slot = adopted?;
        self.lanes[lane].register(slot);
        *self.stream_mut(id)? = Stream::Connection(Connection { lane, slot, established: false, consumed: 0, queued: 0, shut_read: false, shut_write: false, error: None, failure_reported: false, peer_finished: false });
        self.apply_stream_options(id);
        Ok(())
    }

    /// Whether the connection `connect` started is done: `Ok(true)`
    /// established, `Ok(false)` still trying, or why it failed (reported once).
    pub fn connect_outcome(&mut self, id: SocketId) -> Result<bool, Errno> {
        let Some(connection) = self.connection(id)? else { return Err(Errno::ENOTCONN) };
        if let Some(error) = connection.error.take() {
            connection.failure_reported = true;
            return Err(error);
        }
        Ok(connection.established)
    }

    /// `SO_ERROR`: the pending error, cleared.
    pub fn take_error(&mut self, id: SocketId) -> Result<Option<Errno>, Errno> {
        if let Body::Datagram(datagram) = &mut self.socket_mut(id)?.body {
            return Ok(core::mem::take(&mut datagram.refused).then_some(Errno::ECONNREFUSED));
        }
        Ok(self.connection(id)?.and_then(|connection| {
            let error = connection.error.take();
            connection.failure_reported |= error.is_some();
            error
        }))
    }

    /// Sends what of `data` fits (EAGAIN if nothing does; EPIPE once the
    /// sending side is shut; ENOTCONN before a connection).
    pub fn send_stream(&mut self, id: SocketId, data: &[u8]) -> Result<usize, Errno> {
        let connection = self.connection(id)?.ok_or(Errno::ENOTCONN)?;
        if connection.shut_write {
            return Err(Errno::EPIPE);
        }
        if let Some(error) = connection.error.take() {
            connection.failure_reported = true;
            return Err(error);
        }
        if connection.failure_reported {
            return Err(Errno::EPIPE);
        }
        let (lane, slot, established) = (connection.lane, connection.slot, connection.established);
        let tcp = self.tcp(lane, slot);
        if !established {
            return Err(Errno::EAGAIN);
        }
        if !tcp.may_send() {
            return Err(Errno::EPIPE);
        }
        let sent = match tcp.send_slice(data) {
            Ok(0) if !data.is_empty() => Err(Errno::EAGAIN),
            Ok(count) => Ok(count),
            Err(_) => Err(Errno::EPIPE),
        };
        if let (Ok(count), Ok(Some(connection))) = (sent, self.connection(id)) {
            connection.queued += count as u64;
        }
        sent
    }

    /// Receives into `buffer` (`peek`: leaving the bytes queued); 0 at end
    /// of file, EAGAIN when nothing is there yet.
    pub fn receive_stream(&mut self, id: SocketId, buffer: &mut [u8], peek: bool) -> Result<usize, Errno> {
        let connection = self.connection(id)?.ok_or(Errno::ENOTCONN)?;
        if connection.shut_read {
            return Ok(0);
        }
        let (lane, handle, established) = (connection.lane, connection.slot, connection.established);
        if let Some(Errno::ECONNRESET) = connection.error {
            connection.error = None;
            connection.failure_reported = true;
            return Err(Errno::ECONNRESET);
        }
        let tcp = self.tcp(lane, handle);
        if tcp.can_recv() {
            let received = if peek { tcp.peek_slice(buffer) } else { tcp.recv_slice(buffer) };
            let count = received.map_err(|_| Errno::ENOTCONN)?;
            if let (false, Ok(Some(connection))) = (peek, self.connection(id)) {
                connection.consumed += count as u64;
            }
            return Ok(count);
        }
        if !established {
            return if tcp.state() == State::Closed { Err(Errno::ENOTCONN) } else { Err(Errno::EAGAIN) };
        }
        if tcp.may_recv() {
            return Err(Errno::EAGAIN);
        }
        Ok(0)
    }

    /// Activity on stream `id`: bytes received and sent out, or connections.
    pub(crate) fn stream_activity(&self, id: SocketId) -> u64 {
        match self.socket(id).map(|socket| &socket.body) {
            Ok(Body::Stream(Stream::Connection(connection))) => {
                let tcp = self.tcp_ref(connection.lane, connection.slot);
                let arrived = connection.consumed + tcp.recv_queue() as u64;
                let departed = connection.queued.saturating_sub(tcp.send_queue() as u64);
                arrived.wrapping_add(departed)
            }
            Ok(Body::Stream(Stream::Listening(listener))) => listener.accepted + listener.ready.len() as u64,
            _ => 0,
        }
    }

    /// Bytes queued for reading on stream `id`.
    pub(crate) fn stream_pending(&self, id: SocketId) -> usize {
        match self.socket(id).map(|socket| &socket.body) {
            Ok(Body::Stream(Stream::Connection(connection))) => self.tcp_ref(connection.lane, connection.slot).recv_queue(),
            _ => 0,
        }
    }

    /// `shutdown`: ending the sending side sends a FIN.
    pub fn shutdown_stream(&mut self, id: SocketId, how: Shutdown) -> Result<(), Errno> {
        let connection = self.connection(id)?.ok_or(Errno::ENOTCONN)?;
        if !connection.established {
            return Err(Errno::ENOTCONN);
        }
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            connection.shut_read = true;
        }
        if matches!(how, Shutdown::Write | Shutdown::Both) && !connection.shut_write {
            connection.shut_write = true;
            let (lane, slot) = (connection.lane, connection.slot);
            self.tcp(lane, slot).close();
        }
        Ok(())
    }

    /// What `poll` reports of stream `id`.
    pub fn stream_readiness(&mut self, id: SocketId) -> Result<Readiness, Errno> {
        if let Stream::Listening(listener) = self.stream_mut(id)? {
            return Ok(Readiness { readable: !listener.ready.is_empty(), ..Readiness::default() });
        }
        let Some(connection) = self.connection(id)? else {
            // Linux: an unconnected stream socket polls as hung up.
            return Ok(Readiness { writable: true, hangup: true, ..Readiness::default() });
        };
        let (lane, slot, shut_read, shut_write, failed) = (connection.lane, connection.slot, connection.shut_read, connection.shut_write, connection.error.is_some() || connection.failure_reported);
        let established = connection.established;
        let tcp = self.tcp_ref(lane, slot);
        let peer_done = established && !tcp.may_recv();
        let closed = tcp.state() == State::Closed;
        Ok(Readiness {
            readable: tcp.can_recv() || peer_done || shut_read || failed,
            writable: (established && tcp.can_send() && !shut_write) || failed || (shut_write && established),
            hangup: (peer_done && (shut_write || closed)) || failed,
            error: failed && !closed_quietly(established, closed, shut_write),
        })
    }

    /// Closes a stream's connection or listener (the socket is gone).
    pub(crate) fn close_stream(&mut self, stream: Stream, reset: bool) {
        match stream {
            Stream::Idle => {}
            Stream::Listening(listener) => {
                // Handshakes under way are forgotten; accepted-ready
                // connections are reset, as Linux does.
                for (lane, handle) in listener.waiting {
                    self.lanes[lane].remove_shared(handle);
                }
                for (lane, slot) in listener.ready {
                    self.tcp(lane, slot).abort();
                    self.lingering.push((lane, slot));
                }
            }
            Stream::Connection(connection) => {
                let tcp = self.tcp(connection.lane, connection.slot);
                // Unread data lost: the peer is told with a reset, as Linux
                // does; so it is under SO_LINGER of zero seconds.
                if reset || tcp.recv_queue() > 0 {
                    tcp.abort();
                } else {
                    tcp.close();
                }
                self.lingering.push((connection.lane, connection.slot));
            }
        }
        while self.lingering.len() > LINGERING_LIMIT {
            let (lane, slot) = self.lingering.remove(0);
            self.lanes[lane].release(slot);
        }
    }

    /// What `/proc/net/tcp` lists of `stream` (bound to `local`): a
    /// listener and the connections waiting for `accept`, or a connection
    /// that is not closed.
    pub(crate) fn stream_rows(&self, stream: &Stream, local: Option<IpEndpoint>) -> Vec<StreamRow> {
        let mut rows = Vec::new();
        match stream {
            Stream::Idle => {}
            Stream::Listening(listener) => {
                if let Some(local) = local {
                    rows.push(stream_row(local, None, State::Listen, 0, listener.ready.len(), true));
                }
                rows.extend(listener.ready.iter().filter_map(|(lane, slot)| self.connection_row(*lane, *slot, false)));
            }
            Stream::Connection(connection) => rows.extend(self.connection_row(connection.lane, connection.slot, true)),
        }
        rows
    }

    /// Connections closed by their owners and still finishing.
    pub(crate) fn lingering_rows(&self) -> Vec<TableRow> {
        self.lingering.iter().filter_map(|(lane, slot)| self.connection_row(*lane, *slot, false)).map(|row| row.row).collect()
    }

    fn connection_row(&self, lane: LaneId, slot: Slot, owned: bool) -> Option<StreamRow> {
        let tcp = self.tcp_ref(lane, slot);
        let (Some(local), state) = (tcp.local_endpoint(), tcp.state()) else { return None };
        if state == State::Closed {
            return None;
        }
        Some(stream_row(local, tcp.remote_endpoint(), state, tcp.send_queue(), tcp.recv_queue(), owned))
    }

    /// A connection's own end.
    pub(crate) fn connection_local(&self, id: SocketId) -> Option<IpEndpoint> {
        let Ok(socket) = self.socket(id) else { return None };
        let Body::Stream(Stream::Connection(connection)) = &socket.body else { return None };
        self.tcp_ref(connection.lane, connection.slot).local_endpoint()
    }

    /// The far end of stream `id`'s connection (ENOTCONN without one).
    pub(crate) fn stream_peer(&self, id: SocketId) -> Result<IpEndpoint, Errno> {
        let Body::Stream(Stream::Connection(connection)) = &self.socket(id)?.body else { return Err(Errno::ENOTCONN) };
        let tcp = self.tcp_ref(connection.lane, connection.slot);
        match tcp.remote_endpoint() {
            Some(remote) if connection.established || was_established(tcp.state()) => Ok(remote),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// Puts the socket's options into its connection.
    pub(crate) fn apply_stream_options(&mut self, id: SocketId) {
        let Ok(socket) = self.socket(id) else { return };
        let options = socket.options;
        let Body::Stream(Stream::Connection(connection)) = &socket.body else { return };
        let tcp = self.tcp(connection.lane, connection.slot);
        // smoltcp refuses a hop limit of 0 (IPV6_UNICAST_HOPS allows it).
        let hop_limit = match tcp.remote_endpoint().map(|remote| remote.addr) {
            Some(IpAddress::Ipv4(_)) => options.ttl,
            Some(IpAddress::Ipv6(_)) => options.unicast_hops,
            None => None,
        };
        tcp.set_hop_limit(hop_limit.filter(|&hops| hops != 0));
        tcp.set_nagle_enabled(!options.no_delay);
        tcp.set_keep_alive(options.keep_alive.then(|| smoltcp::time::Duration::from_secs(7200)));
    }
}

/// The socket family an address belongs to.
fn family_of(address: IpAddress) -> crate::Family {
    match address {
        IpAddress::Ipv4(_) => crate::Family::V4,
        IpAddress::Ipv6(_) => crate::Family::V6,
    }
}

/// A close after our own FIN is no error to report.
fn closed_quietly(established: bool, closed: bool, shut_write: bool) -> bool {
    established && closed && shut_write
}

