//! Socket system calls on Internet sockets (`AF_INET`, `AF_INET6`; TCP
//! and UDP), over `linux_objects::inet_sockets`: creation, names, `bind`,
//! `listen`, `accept`, `connect` (blocking, or EINPROGRESS), sending and
//! receiving with addresses and `MSG_PEEK`/`MSG_DONTWAIT`/`MSG_WAITALL`/
//! `MSG_NOSIGNAL`, `shutdown`, and the options servers set. `sockets.rs`
//! sends here every call whose descriptor is an Internet socket.
//!
//! Must decode and check every argument before the network changes.

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::Placement;
use net::addresses::{self, Family, SocketAddress};
use net::{Arrival, DatagramProtocol, IpEndpoint, Network, Options, SendControl, Shutdown, SocketKind};

use super::files::{drop_descriptor, install_descriptor, signal_broken_pipe, CHUNK};
use super::inet_control::{self, IPPROTO_IP, IPPROTO_IPV6};
use super::{value, Call, CallResult};
use crate::inet_sockets::{self, Effect, InetSocket};
use crate::socket_waits::Patience;
use crate::open_files::{flags, Backing, OpenFile};
use linux_abi::Errno;

use super::sockets::{buffer_length, read_timeval, timeval, write_option_value, SO_RCVTIMEO, SO_SNDTIMEO, MSG_DONTWAIT, MSG_NOSIGNAL, MSG_PEEK, MSG_TRUNC, MSG_WAITALL, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_NONBLOCK, SOCK_STREAM, SOL_SOCKET};

const IPPROTO_TCP: u64 = 6;
const IPPROTO_UDP: u64 = 17;
/// UDP-Lite (RFC 3828): UDP's behaviour, in ports of its own, over the
/// loopback only (`net::DatagramProtocol::UdpLite`).
const IPPROTO_UDPLITE: u64 = 136;
/// What `SO_SNDBUF`/`SO_RCVBUF` report (Linux reports twice the buffer).
const REPORTED_BUFFER: u32 = 2 * net::STREAM_BUFFER_BYTES as u32;

/// `socket(AF_INET | AF_INET6, type, protocol)`.
pub fn socket(call: &mut Call<'_>, family: Family) -> CallResult {
    let (kind, protocol) = (call.argument(1), call.argument(2));
    if kind & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let socket = match (kind & 0xf, protocol) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) => InetSocket::open(family, SocketKind::Stream)?,
        (SOCK_DGRAM, 0 | IPPROTO_UDP) => InetSocket::open_datagram(family, DatagramProtocol::Udp)?,
        (SOCK_DGRAM, IPPROTO_UDPLITE) => InetSocket::open_datagram(family, DatagramProtocol::UdpLite)?,
        (SOCK_STREAM | SOCK_DGRAM, _) => return Err(Errno::EPROTONOSUPPORT),
        // Raw and packet sockets need privileges the network does not give.
        (3, _) => return Err(Errno::EPROTONOSUPPORT),
        _ => return Err(Errno::EINVAL),
    };
    let status = flags::O_RDWR | if kind & SOCK_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let fd = install_descriptor(call, OpenFile::new(Backing::Inet(Arc::new(socket)), status), Placement::LowestFrom(0), kind & SOCK_CLOEXEC != 0)?;
    value(u64::from(fd))
}

/// The socket address at `address` (`length` bytes) for `socket`.
fn read_address(call: &Call<'_>, socket: &InetSocket, address: u64, length: u64) -> Result<SocketAddress, Errno> {
    let length = usize::try_from(length).map_err(|_| Errno::EINVAL)?;
    if length > 128 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 128];
    call.read_in(address, &mut bytes[..length])?;
    addresses::parse(socket.family, &bytes[..length])
}

/// Writes `endpoint` as `socket`'s family lays it out to `address`, no
/// more than the length at `length_at` allows, and the full length there.
fn write_address(call: &Call<'_>, socket: &InetSocket, address: u64, length_at: u64, endpoint: IpEndpoint) -> Result<(), Errno> {
    let bytes = addresses::encode(socket.family, endpoint);
    let room = buffer_length(call, length_at)?;
    call.write_out(address, &bytes[..room.min(bytes.len())])?;
    call.write_out(length_at, &(bytes.len() as u32).to_le_bytes())
}

/// `bind(fd, address, length)`.
pub fn bind(call: &mut Call<'_>, socket: &InetSocket) -> CallResult {
    let endpoint = match read_address(call, socket, call.argument(1), call.argument(2))? {
        SocketAddress::Ip(endpoint) => endpoint,
        // Linux takes AF_UNSPEC as INADDR_ANY on an IPv4 socket.
        SocketAddress::Unspecified if socket.family == Family::V4 => IpEndpoint::new(Family::V4.any(), 0),
        SocketAddress::Unspecified => return Err(Errno::EINVAL),
    };
    inet_sockets::with(|network| {
        network.bind(socket.id, endpoint)?;
        network.bound(socket.id)
    })?;
    value(0)
}

/// `listen(fd, backlog)` (EOPNOTSUPP for a datagram socket).
pub fn listen(call: &mut Call<'_>, socket: &InetSocket) -> CallResult {
    if socket.kind != SocketKind::Stream {
        return Err(Errno::EOPNOTSUPP);
    }
    let backlog = (call.argument(1) as i32).max(0) as usize;
    inet_sockets::with(|network| network.listen(socket.id, backlog))?;
    value(0)
}

/// `accept`/`accept4`: the next connection, its peer written when asked.
pub fn accept(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket, accept_flags: u64) -> CallResult {
    if socket.kind != SocketKind::Stream {
        return Err(Errno::EOPNOTSUPP);
    }
    let patience = Patience::of(file.status() & flags::O_NONBLOCK != 0, socket.receive_timeout.get());
    let id = inet_sockets::wait(patience, &|| call.interrupted(), |network| network.accept(socket.id))?;
    let accepted = Arc::new(socket.accepted(id));
    let peer = inet_sockets::look(|network| network.peer_name(id));
    let status = flags::O_RDWR | if accept_flags & SOCK_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let fd = install_descriptor(call, OpenFile::new(Backing::Inet(accepted.clone()), status), Placement::LowestFrom(0), accept_flags & SOCK_CLOEXEC != 0)?;
    if call.argument(1) != 0 {
        let written = peer.and_then(|peer| write_address(call, &accepted, call.argument(1), call.argument(2), peer));
        if let Err(errno) = written {
            drop_descriptor(call, fd);
            return Err(errno);
        }
    }
    value(u64::from(fd))
}

/// `connect(fd, address, length)`: a stream waits for the handshake (or
/// says EINPROGRESS when non-blocking); a datagram socket takes its peer.
pub fn connect(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let address = read_address(call, socket, call.argument(1), call.argument(2))?;
    if socket.kind == SocketKind::Datagram {
        let peer = match address {
            SocketAddress::Ip(endpoint) => Some(endpoint),
            SocketAddress::Unspecified => None,
        };
        inet_sockets::with(|network| network.connect_datagram(socket.id, peer))?;
        return value(0);
    }
    let SocketAddress::Ip(remote) = address else { return Err(Errno::EAFNOSUPPORT) };
    inet_sockets::with(|network| network.connect(socket.id, remote))?;
    if file.status() & flags::O_NONBLOCK != 0 {
        // Linux answers a non-blocking connect before the handshake, even
        // on the loopback; the outcome comes by poll and SO_ERROR.
        return Err(Errno::EINPROGRESS);
    }
    let outcome = |network: &mut Network| match network.connect_outcome(socket.id)? {
        true => Ok(()),
        false => Err(Errno::EAGAIN),
    };
    // SO_SNDTIMEO bounds the wait for the handshake.
    match inet_sockets::wait(Patience::of(false, socket.send_timeout.get()), &|| call.interrupted(), outcome) {
        Err(Errno::EAGAIN) => Err(Errno::EINPROGRESS),
        other => other.and_then(|()| value(0)),
    }
}

/// Sends `data` (to `to`, for a datagram socket) with `MSG_*` flags: a
/// blocking stream send goes on until all is queued, or a signal comes or
/// SO_SNDTIMEO runs out after some was.
pub fn send(call: &Call<'_>, file: &OpenFile, socket: &InetSocket, data: &[u8], to: Option<IpEndpoint>, message_flags: u64) -> Result<usize, Errno> {
    send_with(call, file, socket, data, to, message_flags, SendControl::default())
}

/// [`send`] with what `sendmsg`'s control messages ask of a datagram.
pub fn send_with(call: &Call<'_>, file: &OpenFile, socket: &InetSocket, data: &[u8], to: Option<IpEndpoint>, message_flags: u64, control: SendControl) -> Result<usize, Errno> {
    let patience = Patience::of(file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0, socket.send_timeout.get());
    let interrupted = || call.interrupted();
    let mut sent = 0;
    let outcome = loop {
        match inet_sockets::wait(patience, &interrupted, |network| network.send_with(socket.id, &data[sent..], to, control)) {
            Ok(count) => sent += count,
            Err(_) if sent > 0 => break Ok(sent),
            Err(errno) => break Err(errno),
        }
        if sent >= data.len() || patience == Patience::Never || socket.kind == SocketKind::Datagram {
            break Ok(sent);
        }
    };
    if message_flags & MSG_NOSIGNAL != 0 {
        return outcome;
    }
    signal_broken_pipe(call, outcome)
}

/// What a receive got: the bytes, the datagram's whole length, the
/// sender, how a datagram came.
pub struct Received {
    pub data: Vec<u8>,
    pub length: usize,
    pub from: IpEndpoint,
    pub arrival: Option<Arrival>,
}

/// Receives up to `length` bytes with `MSG_*` flags.
pub fn receive(call: &Call<'_>, file: &OpenFile, socket: &InetSocket, length: usize, message_flags: u64) -> Result<Received, Errno> {
    let patience = Patience::of(file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0, socket.receive_timeout.get());
    let peek = message_flags & MSG_PEEK != 0;
    let interrupted = || call.interrupted();
    let limit = length.min(CHUNK);
    let mut data = Vec::new();
    // Sized to what is there (at most `limit`), under the lock: a server's
    // 16 KiB read of a 30-byte request zeroes 30 bytes, not 16 KiB.
    let got = inet_sockets::wait_with_effect(Effect::Takes, patience, &interrupted, |network| {
        let size = network.pending_bytes(socket.id).clamp(1, limit.max(1));
        data.clear();
        data.try_reserve_exact(size).map_err(|_| Errno::ENOMEM)?;
        data.resize(size.min(limit), 0);
        network.receive(socket.id, &mut data, peek)
    })?;
    let mut filled = got.copied;
    if socket.kind == SocketKind::Stream && message_flags & MSG_WAITALL != 0 && !peek && filled > 0 && filled < limit {
        data.try_reserve_exact(limit - data.len()).map_err(|_| Errno::ENOMEM)?;
        data.resize(limit, 0);
    }
    // MSG_WAITALL on a stream: on until all is there, end of file or a signal.
    while socket.kind == SocketKind::Stream && message_flags & MSG_WAITALL != 0 && !peek && filled > 0 && filled < data.len() {
        let more = inet_sockets::wait_with_effect(Effect::Takes, patience, &interrupted, |network| network.receive(socket.id, &mut data[filled..], false));
        match more {
            Ok(more) if more.copied > 0 => filled += more.copied,
            _ => break,
        }
    }
    data.truncate(filled);
    let length = if socket.kind == SocketKind::Stream { filled } else { got.length };
    Ok(Received { data, length, from: got.from, arrival: got.arrival })
}

/// `read(2)` on an Internet socket.
pub fn read(call: &Call<'_>, file: &OpenFile, socket: &InetSocket, length: usize) -> Result<Vec<u8>, Errno> {
    receive(call, file, socket, length, 0).map(|received| received.data)
}

/// `sendto(fd, buffer, length, flags, address, address_length)`.
pub fn sendto(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let length = (call.argument(2) as usize).min(CHUNK);
    let mut data = Vec::new();
    data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    data.resize(length, 0);
    call.read_in(call.argument(1), &mut data)?;
    let to = destination(call, socket, call.argument(4), call.argument(5))?;
    value(send(call, file, socket, &data, to, call.argument(3))? as u64)
}

/// A send's destination: none for a stream or without an address.
pub fn destination(call: &Call<'_>, socket: &InetSocket, address: u64, length: u64) -> Result<Option<IpEndpoint>, Errno> {
    if address == 0 || socket.kind == SocketKind::Stream {
        return Ok(None);
    }
    match read_address(call, socket, address, length)? {
        SocketAddress::Ip(endpoint) => Ok(Some(endpoint)),
        SocketAddress::Unspecified => Err(Errno::EAFNOSUPPORT),
    }
}

/// `recvfrom(fd, buffer, length, flags, address, address_length)`.
pub fn recvfrom(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let message_flags = call.argument(3);
    let received = receive(call, file, socket, call.argument(2) as usize, message_flags)?;
    call.write_out(call.argument(1), &received.data)?;
    if call.argument(4) != 0 && call.argument(5) != 0 {
        write_address(call, socket, call.argument(4), call.argument(5), received.from)?;
    }
    value(if message_flags & MSG_TRUNC != 0 { received.length } else { received.data.len() } as u64)
}

/// `recvmsg`'s name: the sender, written to `name_at` (`name_length_at`
/// holds its room).
pub fn write_name(call: &Call<'_>, socket: &InetSocket, name_at: u64, name_length_at: u64, from: IpEndpoint) -> Result<(), Errno> {
    if name_at == 0 {
        return call.write_out(name_length_at, &0u32.to_le_bytes());
    }
    write_address(call, socket, name_at, name_length_at, from)
}

/// `shutdown(fd, how)`.
pub fn shutdown(call: &mut Call<'_>, socket: &InetSocket) -> CallResult {
    let how = match call.argument(1) {
        0 => Shutdown::Read,
        1 => Shutdown::Write,
        2 => Shutdown::Both,
        _ => return Err(Errno::EINVAL),
    };
    inet_sockets::with(|network| network.shutdown(socket.id, how))?;
    value(0)
}

/// `getsockname` / `getpeername`.
pub fn socket_name(call: &mut Call<'_>, socket: &InetSocket, peer: bool) -> CallResult {
    let endpoint = inet_sockets::look(|network| if peer { network.peer_name(socket.id) } else { network.local_name(socket.id) })?;
    write_address(call, socket, call.argument(1), call.argument(2), endpoint)?;
    value(0)
}

/// `getsockopt(fd, level, name, value, length)`.
pub fn getsockopt(call: &mut Call<'_>, socket: &InetSocket) -> CallResult {
    let options = inet_sockets::look(|network| network.options(socket.id))?;
    let (level, name) = (call.argument(1), call.argument(2));
    let answer: Vec<u8> = match (level, name) {
        (SOL_SOCKET, 4) => {
            let error = inet_sockets::with(|network| network.take_error(socket.id))?;
            word(error.map_or(0, |errno| errno.0 as u32))
        }
        (SOL_SOCKET, SO_LINGER) => {
            let (on, seconds) = options.linger.map_or((0, 0), |seconds| (1, seconds));
            [word(on), word(seconds)].concat()
        }
        (SOL_SOCKET, SO_RCVTIMEO) => timeval(socket.receive_timeout.get()).to_vec(),
        (SOL_SOCKET, SO_SNDTIMEO) => timeval(socket.send_timeout.get()).to_vec(),
        (SOL_SOCKET, name) => word(socket_option(socket, &options, name).ok_or(Errno::ENOPROTOOPT)?),
        (IPPROTO_TCP, _) if socket.kind != SocketKind::Stream => return Err(Errno::EOPNOTSUPP),
        (IPPROTO_TCP, 1) => word(u32::from(options.no_delay)),
        (IPPROTO_TCP, 2) => word(1460),
        (IPPROTO_TCP, 4) => word(7200),
        (IPPROTO_TCP, 5) => word(75),
        (IPPROTO_TCP, 6) => word(9),
        (IPPROTO_IP | IPPROTO_IPV6, _) => word(inet_control::get_option(&options, socket.family, level, name)?),
        _ => return Err(Errno::ENOPROTOOPT),
    };
    write_option_value(call, &answer)
}

fn word(value: u32) -> Vec<u8> {
    value.to_le_bytes().to_vec()
}

const SO_LINGER: u64 = 13;

/// The `struct linger` at the call's value argument: `Some(seconds)` when on.
fn read_linger(call: &Call<'_>) -> Result<Option<u32>, Errno> {
    if call.argument(4) < 8 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 8];
    call.read_in(call.argument(3), &mut bytes)?;
    let [on, seconds] = [0, 4].map(|at| i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()));
    Ok((on != 0).then_some(seconds.max(0) as u32))
}

/// A `SOL_SOCKET` option's value, if the socket has it.
fn socket_option(socket: &InetSocket, options: &Options, name: u64) -> Option<u32> {
    Some(match name {
        2 => u32::from(options.reuse_address),
        3 => match socket.kind {
            SocketKind::Stream => SOCK_STREAM as u32,
            SocketKind::Datagram => SOCK_DGRAM as u32,
        },
        7 | 8 => REPORTED_BUFFER,
        9 => u32::from(options.keep_alive),
        5 | 6 | 10 => 0,
        15 => u32::from(options.reuse_port),
        18 | 19 => 1,
        30 => u32::from(inet_sockets::look(|network| Ok(network.is_listening(socket.id))).unwrap_or(false)),
        38 => u32::from(inet_sockets::look(|network| network.protocol_number(socket.id)).ok()?),
        39 => u32::from(socket.family.number()),
        _ => return None,
    })
}

/// `setsockopt(fd, level, name, value, length)`: the options that change
/// behaviour are kept (timeouts and linger too; the IP levels' in
/// `inet_control.rs`); buffer sizes are accepted and change nothing yet
/// (docs/network.md).
pub fn setsockopt(call: &mut Call<'_>, socket: &InetSocket) -> CallResult {
    let (level, name, length) = (call.argument(1), call.argument(2), call.argument(4));
    if (level, name) == (SOL_SOCKET, SO_RCVTIMEO) {
        socket.receive_timeout.set(read_timeval(call)?);
        return value(0);
    }
    if (level, name) == (SOL_SOCKET, SO_SNDTIMEO) {
        socket.send_timeout.set(read_timeval(call)?);
        return value(0);
    }
    if level == IPPROTO_IP || level == IPPROTO_IPV6 {
        let mut raw = [0u8; 4];
        let size = (length as usize).min(raw.len());
        call.read_in(call.argument(3), &mut raw[..size])?;
        let mut options = inet_sockets::look(|network| network.options(socket.id))?;
        inet_control::set_option(&mut options, socket.family, socket.kind, level, name, &raw[..size])?;
        inet_sockets::with(|network| network.set_options(socket.id, options))?;
        return value(0);
    }
    if length < 4 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 4];
    call.read_in(call.argument(3), &mut raw)?;
    let on = u32::from_le_bytes(raw) != 0;
    let mut options = inet_sockets::look(|network| network.options(socket.id))?;
    match (level, name) {
        (SOL_SOCKET, 2) => options.reuse_address = on,
        (SOL_SOCKET, 9) => options.keep_alive = on,
        (SOL_SOCKET, 15) => options.reuse_port = on,
        (SOL_SOCKET, SO_LINGER) => options.linger = read_linger(call)?,
        (SOL_SOCKET, 5 | 6 | 7 | 8 | 10 | 18 | 19 | 32 | 33) => return value(0),
        (SOL_SOCKET, _) => return Err(Errno::ENOPROTOOPT),
        (IPPROTO_TCP, _) if socket.kind != SocketKind::Stream => return Err(Errno::EOPNOTSUPP),
        (IPPROTO_TCP, 1) => options.no_delay = on,
        (IPPROTO_TCP, 2 | 4 | 5 | 6 | 9 | 12 | 23) => return value(0),
        _ => return Err(Errno::ENOPROTOOPT),
    }
    inet_sockets::with(|network| network.set_options(socket.id, options))?;
    value(0)
}
