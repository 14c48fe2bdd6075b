//! Socket system calls on what sockets there are: connected Unix pairs
//! (`socketpair`: stream, datagram, seqpacket). Sending and receiving
//! (`sendto`, `recvfrom`, `sendmsg`, `recvmsg` with `SCM_RIGHTS`, plus
//! plain `read`/`write` in `files.rs`), `shutdown`, options and names. A
//! call on a descriptor that is not a socket is ENOTSOCK; other families
//! and types are refused with Linux's errno. `socket`, `bind`, `connect`
//! and the network are not here yet.

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::Placement;

use super::files::{descriptor, drop_descriptor, install_descriptor, io_vectors, signal_broken_pipe, write_socket, CHUNK};
use super::{value, Call, CallResult};
use crate::open_files::{flags, Backing, OpenFile};
use crate::descriptor_passing::InFlight;
use crate::pipes::Received;
use crate::named_sockets::{SocketName, UnixSocket};
use crate::inet_sockets::InetSocket;
use crate::unix_sockets::{Shutdown, SocketEnd, SocketKind};
use linux_abi::Errno;

const AF_UNIX: u64 = 1;
pub(super) const SOCK_STREAM: u64 = 1;
pub(super) const SOCK_DGRAM: u64 = 2;
const SOCK_SEQPACKET: u64 = 5;
pub(super) const SOCK_NONBLOCK: u64 = 0o4000;
pub(super) const SOCK_CLOEXEC: u64 = 0o2000000;
pub(super) const MSG_PEEK: u64 = 0x2;
const MSG_CTRUNC: u32 = 0x8;
pub(super) const MSG_TRUNC: u64 = 0x20;
pub(super) const MSG_DONTWAIT: u64 = 0x40;
pub(super) const MSG_WAITALL: u64 = 0x100;
pub(super) const MSG_NOSIGNAL: u64 = 0x4000;
const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;
/// `SCM_RIGHTS`, `SCM_CREDENTIALS` (control messages at `SOL_SOCKET`).
const SCM_RIGHTS: u32 = 1;
const SCM_CREDENTIALS: u32 = 2;
/// `sizeof(struct cmsghdr)`: length (8), level (4), type (4).
const CONTROL_HEADER: usize = 16;
pub(super) const SOL_SOCKET: u64 = 1;
/// A Unix socket's buffer size as Linux reports it (`SO_SNDBUF`, `SO_RCVBUF`).
const BUFFER_BYTES: u32 = 212_992;

/// The description descriptor `fd` is open on, if it is a socket
/// (EBADF, ENOTSOCK).
fn socket(call: &Call<'_>, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    let file = descriptor(call, fd)?;
    socket_of(&file)?;
    Ok(file)
}

/// The description descriptor `fd` is open on and its Internet socket,
/// if it is one (EBADF for no descriptor).
fn inet_file(call: &Call<'_>, fd: u64) -> Result<Option<(Arc<OpenFile>, Arc<InetSocket>)>, Errno> {
    let file = descriptor(call, fd)?;
    let Backing::Inet(socket) = &file.backing else { return Ok(None) };
    let socket = socket.clone();
    Ok(Some((file, socket)))
}

/// The socket `file` is open on (ENOTSOCK).
fn socket_of(file: &OpenFile) -> Result<&Arc<UnixSocket>, Errno> {
    match &file.backing {
        Backing::Socket(socket) => Ok(socket),
        _ => Err(Errno::ENOTSOCK),
    }
}

/// The connected end of the socket `file` is open on (ENOTSOCK, ENOTCONN).
fn end_of(file: &OpenFile) -> Result<Arc<SocketEnd>, Errno> {
    socket_of(file)?.end()
}

/// `socketpair(domain, type, protocol, sv)`.
pub fn socketpair(call: &mut Call<'_>) -> CallResult {
    let (domain, kind, protocol) = (call.argument(0), call.argument(1), call.argument(2));
    const AF_INET: u64 = 2;
    const AF_INET6: u64 = 10;
    match domain {
        AF_UNIX => {}
        // Internet sockets come in pairs on no system.
        AF_INET | AF_INET6 => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EAFNOSUPPORT),
    }
    let (kind_of_socket, status, close_on_exec) = socket_kind(kind)?;
    if protocol != 0 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let (one, other) = SocketEnd::pair(kind_of_socket);
    let first = install_descriptor(call, OpenFile::new(Backing::Socket(Arc::new(UnixSocket::connected(one))), status), Placement::LowestFrom(0), close_on_exec)?;
    let second = match install_descriptor(call, OpenFile::new(Backing::Socket(Arc::new(UnixSocket::connected(other))), status), Placement::LowestFrom(0), close_on_exec) {
        Ok(fd) => fd,
        Err(errno) => {
            drop_descriptor(call, first);
            return Err(errno);
        }
    };
    let mut pair = [0u8; 8];
    pair[..4].copy_from_slice(&first.to_le_bytes());
    pair[4..].copy_from_slice(&second.to_le_bytes());
    if let Err(errno) = call.write_out(call.argument(3), &pair) {
        drop_descriptor(call, first);
        drop_descriptor(call, second);
        return Err(errno);
    }
    value(0)
}

/// `shutdown(fd, how)`.
pub fn shutdown(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::shutdown(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let how = match call.argument(1) {
        0 => Shutdown::Read,
        1 => Shutdown::Write,
        2 => Shutdown::Both,
        _ => return Err(Errno::EINVAL),
    };
    socket_of(&file)?.shut_down(how)?;
    value(0)
}

/// Sends `data` (with `descriptors`, if any) on socket `file` with
/// `MSG_*` `message_flags`.
fn send(call: &Call<'_>, file: &OpenFile, data: &[u8], descriptors: Option<InFlight>, message_flags: u64) -> Result<usize, Errno> {
    let nonblocking = file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0;
    let interrupted = || call.interrupted();
    let end = end_of(file)?;
    let written = match descriptors {
        // A stream carries descriptors only with at least one byte.
        Some(_) if data.is_empty() && end.kind == SocketKind::Stream => Ok(0),
        Some(descriptors) if end.can_write() => end.outgoing().send_record(data, Some(descriptors), nonblocking, &interrupted),
        _ => write_socket(&end, data, nonblocking, &interrupted),
    };
    match written {
        // A datagram to a peer that has gone is refused, without SIGPIPE.
        Err(Errno::EPIPE) if end.kind == SocketKind::Datagram => Err(Errno::ECONNREFUSED),
        written if message_flags & MSG_NOSIGNAL != 0 => written,
        written => signal_broken_pipe(call, written),
    }
}

/// Receives up to `length` bytes from socket `file`, with what came with
/// them.
fn receive(call: &Call<'_>, file: &OpenFile, length: usize, message_flags: u64) -> Result<(Vec<u8>, Received), Errno> {
    let nonblocking = file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0;
    let interrupted = || call.interrupted();
    let end = socket_of(file)?.end_for_reading()?;
    let incoming = end.incoming();
    let length = length.min(CHUNK);
    let mut buffer = Vec::new();
    let take = message_flags & MSG_PEEK == 0;
    let mut received = incoming.receive(&mut buffer, length, nonblocking, &interrupted, take)?;
    // MSG_WAITALL on a stream: on until it is all there, end of file, a
    // signal, or descriptors.
    while take && end.kind == SocketKind::Stream && message_flags & MSG_WAITALL != 0 && !buffer.is_empty() && buffer.len() < length && received.descriptors.is_none() {
        let wanted = length - buffer.len();
        match incoming.receive(&mut buffer, wanted, nonblocking, &interrupted, true) {
            Ok(more) if more.count > 0 => received.descriptors = more.descriptors,
            _ => break,
        }
    }
    received.count = buffer.len();
    Ok((buffer, received))
}

/// `sendto(fd, buffer, length, flags, address, address_length)`: the
/// address of a connected socket is not looked at.
pub fn sendto(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::sendto(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let length = (call.argument(2) as usize).min(CHUNK);
    let mut data = Vec::new();
    data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    data.resize(length, 0);
    call.read_in(call.argument(1), &mut data)?;
    value(send(call, &file, &data, None, call.argument(3))? as u64)
}

/// `recvfrom(fd, buffer, length, flags, address, address_length)`: a
/// connected pair's end gives no address (length 0). Descriptors that
/// came with the bytes are closed (there is nowhere to put them).
/// `MSG_TRUNC` on a record socket returns the record's whole length.
pub fn recvfrom(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::recvfrom(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let message_flags = call.argument(3);
    let (data, received) = receive(call, &file, call.argument(2) as usize, message_flags)?;
    call.write_out(call.argument(1), &data)?;
    if call.argument(4) != 0 && call.argument(5) != 0 {
        call.write_out(call.argument(5), &0u32.to_le_bytes())?;
    }
    let records = socket_of(&file)?.kind.keeps_records();
    value(if records && message_flags & MSG_TRUNC != 0 { received.length } else { data.len() } as u64)
}

/// The fields of a `struct msghdr` at `address`: name length's address,
/// the iovecs, the control length and its address.
struct MessageHeader {
    name_at: u64,
    name_length: u64,
    name_length_at: u64,
    vectors: Vec<(u64, u64)>,
    control_at: u64,
    control_length: u64,
    control_length_at: u64,
    flags_at: u64,
}

fn message_header(call: &Call<'_>, address: u64) -> Result<MessageHeader, Errno> {
    let mut bytes = [0u8; 56];
    call.read_in(address, &mut bytes)?;
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    Ok(MessageHeader {
        name_at: word(0),
        name_length: word(8) & 0xffff_ffff,
        name_length_at: address + 8,
        vectors: io_vectors(call, word(16), word(24))?,
        control_at: word(32),
        control_length: word(40),
        control_length_at: address + 40,
        flags_at: address + 48,
    })
}

/// `sendmsg(fd, message, flags)`: the iovecs' bytes as one send, with the
/// descriptors of its `SCM_RIGHTS` control messages (`SCM_CREDENTIALS`
/// are accepted and not passed on).
pub fn sendmsg(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return inet_sendmsg(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let header = message_header(call, call.argument(1))?;
    let descriptors = descriptors_to_send(call, &header)?;
    let data = gather(call, &header)?;
    value(send(call, &file, &data, descriptors, call.argument(2))? as u64)
}

/// The iovecs' bytes of `header`, gathered (at most [`CHUNK`]).
fn gather(call: &Call<'_>, header: &MessageHeader) -> Result<Vec<u8>, Errno> {
    let mut data = Vec::new();
    for &(base, length) in &header.vectors {
        let start = data.len();
        let length = (length as usize).min(CHUNK.saturating_sub(start));
        data.try_reserve(length).map_err(|_| Errno::ENOMEM)?;
        data.resize(start + length, 0);
        call.read_in(base, &mut data[start..])?;
    }
    Ok(data)
}

/// Writes `data` into `header`'s iovecs in turn.
fn scatter(call: &Call<'_>, header: &MessageHeader, data: &[u8]) -> Result<(), Errno> {
    let mut rest = data;
    for &(base, length) in &header.vectors {
        if rest.is_empty() {
            break;
        }
        let (part, after) = rest.split_at((length as usize).min(rest.len()));
        call.write_out(base, part)?;
        rest = after;
    }
    Ok(())
}

/// `sendmsg` on an Internet socket: the iovecs' bytes to the message's
/// name (control messages carry nothing an Internet socket passes).
fn inet_sendmsg(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let header = message_header(call, call.argument(1))?;
    let data = gather(call, &header)?;
    let to = super::inet::destination(call, socket, header.name_at, header.name_length)?;
    value(super::inet::send(call, file, socket, &data, to, call.argument(2))? as u64)
}

/// `recvmsg` on an Internet socket: into the iovecs, the sender as the
/// name, no control messages, `MSG_TRUNC` for a datagram cut short.
fn inet_recvmsg(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let header = message_header(call, call.argument(1))?;
    let message_flags = call.argument(2);
    let total: u64 = header.vectors.iter().map(|(_, length)| *length).fold(0, u64::saturating_add);
    let received = super::inet::receive(call, file, socket, total.min(CHUNK as u64) as usize, message_flags)?;
    scatter(call, &header, &received.data)?;
    super::inet::write_name(call, socket, header.name_at, header.name_length_at, received.from)?;
    call.write_out(header.control_length_at, &0u64.to_le_bytes())?;
    let out_flags = if received.length > received.data.len() { MSG_TRUNC as u32 } else { 0 };
    call.write_out(header.flags_at, &out_flags.to_le_bytes())?;
    value(if message_flags & MSG_TRUNC != 0 { received.length } else { received.data.len() } as u64)
}

/// The descriptors a message's control part passes, taken into flight
/// (EINVAL for a malformed control message, EBADF for a descriptor the
/// caller does not hold).
fn descriptors_to_send(call: &Call<'_>, header: &MessageHeader) -> Result<Option<InFlight>, Errno> {
    let length = header.control_length as usize;
    if length == 0 {
        return Ok(None);
    }
    if length > 64 * 1024 {
        return Err(Errno::ENOBUFS);
    }
    let mut control = Vec::new();
    control.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    control.resize(length, 0);
    call.read_in(header.control_at, &mut control)?;
    let mut fds: Vec<u32> = Vec::new();
    let mut at = 0;
    while at + CONTROL_HEADER <= length {
        let field = |offset: usize, size: usize| control[at + offset..at + offset + size].iter().rev().fold(0u64, |value, byte| value << 8 | u64::from(*byte));
        let (message_length, level, kind) = (field(0, 8) as usize, field(8, 4) as u32, field(12, 4) as u32);
        if message_length < CONTROL_HEADER || at + message_length > length {
            return Err(Errno::EINVAL);
        }
        match (level as u64, kind) {
            (SOL_SOCKET, SCM_RIGHTS) => {
                for index in 0..(message_length - CONTROL_HEADER) / 4 {
                    fds.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    fds.push(field(CONTROL_HEADER + index * 4, 4) as u32);
                }
            }
            (SOL_SOCKET, SCM_CREDENTIALS) => {}
            _ => return Err(Errno::EINVAL),
        }
        at += message_length.next_multiple_of(8);
    }
    if fds.is_empty() {
        return Ok(None);
    }
    InFlight::send(call.process.native.space(), &fds).map(Some)
}

/// `recvmsg(fd, message, flags)`: into the iovecs in turn; descriptors
/// that came with the bytes as an `SCM_RIGHTS` control message (as many
/// as the control buffer holds, the rest closed and `MSG_CTRUNC` set);
/// `MSG_TRUNC` when a record was cut short; no name.
pub fn recvmsg(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return inet_recvmsg(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let header = message_header(call, call.argument(1))?;
    let message_flags = call.argument(2);
    let total: u64 = header.vectors.iter().map(|(_, length)| *length).fold(0, u64::saturating_add);
    let (data, received) = receive(call, &file, total.min(CHUNK as u64) as usize, message_flags)?;
    scatter(call, &header, &data)?;
    let mut out_flags = 0u32;
    let records = socket_of(&file)?.kind.keeps_records();
    if records && received.length > data.len() {
        out_flags |= MSG_TRUNC as u32;
    }
    let mut control_written = 0u64;
    if let Some(descriptors) = received.descriptors {
        let room = (header.control_length as usize).saturating_sub(CONTROL_HEADER) / 4;
        if room < descriptors.count() {
            out_flags |= MSG_CTRUNC;
        }
        let fds = descriptors.deliver(call.process.native.space(), room);
        for fd in &fds {
            call.process.state().set_close_on_exec(*fd, message_flags & MSG_CMSG_CLOEXEC != 0)?;
        }
        if !fds.is_empty() {
            let mut control = Vec::new();
            control.try_reserve_exact(CONTROL_HEADER + fds.len() * 4).map_err(|_| Errno::ENOMEM)?;
            control.extend_from_slice(&((CONTROL_HEADER + fds.len() * 4) as u64).to_le_bytes());
            control.extend_from_slice(&(SOL_SOCKET as u32).to_le_bytes());
            control.extend_from_slice(&SCM_RIGHTS.to_le_bytes());
            for fd in &fds {
                control.extend_from_slice(&fd.to_le_bytes());
            }
            call.write_out(header.control_at, &control)?;
            control_written = (control.len() as u64).next_multiple_of(8).min(header.control_length);
        }
    }
    call.write_out(header.name_length_at, &0u32.to_le_bytes())?;
    call.write_out(header.control_length_at, &control_written.to_le_bytes())?;
    call.write_out(header.flags_at, &out_flags.to_le_bytes())?;
    let length = if records && message_flags & MSG_TRUNC != 0 { received.length } else { data.len() };
    value(length as u64)
}

/// `getsockopt(fd, level, name, value, length)`: the `SOL_SOCKET` options
/// a Unix stream socket answers.
pub fn getsockopt(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::getsockopt(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    const SO_TYPE: u64 = 3;
    const SO_ERROR: u64 = 4;
    const SO_SNDBUF: u64 = 7;
    const SO_RCVBUF: u64 = 8;
    const SO_PASSCRED: u64 = 16;
    const SO_ACCEPTCONN: u64 = 30;
    const SO_PROTOCOL: u64 = 38;
    const SO_DOMAIN: u64 = 39;
    if call.argument(1) != SOL_SOCKET {
        // A Unix socket has no other level's options.
        return Err(Errno::EOPNOTSUPP);
    }
    let answer: u32 = match call.argument(2) {
        SO_TYPE => socket_of(&file)?.kind as u32,
        SO_ACCEPTCONN => u32::from(socket_of(&file)?.is_listening()),
        SO_ERROR | SO_PASSCRED | SO_PROTOCOL => 0,
        SO_SNDBUF | SO_RCVBUF => BUFFER_BYTES,
        SO_DOMAIN => AF_UNIX as u32,
        _ => return Err(Errno::ENOPROTOOPT),
    };
    write_option_value(call, &answer.to_le_bytes())
}

/// `getsockopt`'s answer: `bytes` to its value buffer (no more than the
/// length it gives allows) and the length written to its length.
pub(super) fn write_option_value(call: &Call<'_>, bytes: &[u8]) -> CallResult {
    let length_at = call.argument(4);
    let count = buffer_length(call, length_at)?.min(bytes.len());
    call.write_out(call.argument(3), &bytes[..count])?;
    call.write_out(length_at, &(count as u32).to_le_bytes())?;
    value(0)
}

/// `setsockopt(fd, level, name, value, length)`: buffer sizes and
/// `SO_PASSCRED` are accepted (nothing changes); other `SOL_SOCKET`
/// options ENOPROTOOPT, other levels EOPNOTSUPP (as for Linux's Unix sockets).
pub fn setsockopt(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::setsockopt(call, &socket);
    }
    socket(call, call.argument(0))?;
    match (call.argument(1), call.argument(2)) {
        (SOL_SOCKET, 7 | 8 | 16 | 32 | 33) => {
            if call.argument(4) < 4 {
                return Err(Errno::EINVAL);
            }
            let mut option = [0u8; 4];
            call.read_in(call.argument(3), &mut option)?;
            value(0)
        }
        (SOL_SOCKET, _) => Err(Errno::ENOPROTOOPT),
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// `getsockname` (`peer` false), `getpeername`: the `sockaddr_un` of the
/// socket's name or its peer's — the family alone for an unnamed one;
/// ENOTCONN for the peer of an unconnected socket.
pub fn socket_name(call: &mut Call<'_>, peer: bool) -> CallResult {
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::socket_name(call, &socket, peer);
    }
    let file = socket(call, call.argument(0))?;
    let (own, peers) = socket_of(&file)?.names();
    let name = if peer { peers? } else { own };
    write_address(call, call.argument(1), call.argument(2), name.as_ref())?;
    value(0)
}

/// Writes `name` as a `sockaddr_un` to `address` (no more than the length
/// at `length_at` allows) and its full length to `length_at`.
fn write_address(call: &Call<'_>, address: u64, length_at: u64, name: Option<&SocketName>) -> Result<(), Errno> {
    let mut bytes = Vec::new();
    bytes.try_reserve(2 + 109).map_err(|_| Errno::ENOMEM)?;
    bytes.extend_from_slice(&(AF_UNIX as u16).to_le_bytes());
    match name {
        Some(SocketName::Path(_, path)) => {
            bytes.extend_from_slice(path);
            bytes.push(0);
        }
        Some(SocketName::Abstract(name)) => {
            bytes.push(0);
            bytes.extend_from_slice(name);
        }
        None => {}
    }
    let count = buffer_length(call, length_at)?.min(bytes.len());
    call.write_out(address, &bytes[..count])?;
    call.write_out(length_at, &(bytes.len() as u32).to_le_bytes())
}

/// What a `sockaddr_un` of `length` bytes at `address` names: a path
/// (up to its first NUL) or an abstract name. EINVAL for a short or long
/// address, or another family.
fn read_address(call: &Call<'_>, address: u64, length: u64) -> Result<AddressName, Errno> {
    const SUN_PATH: usize = 108;
    let length = length as usize;
    if !(3..=2 + SUN_PATH).contains(&length) {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 2 + SUN_PATH];
    call.read_in(address, &mut bytes[..length])?;
    if u16::from_le_bytes([bytes[0], bytes[1]]) != AF_UNIX as u16 {
        return Err(Errno::EINVAL);
    }
    let path = &bytes[2..length];
    if path[0] == 0 {
        return Ok(AddressName::Abstract(path[1..].to_vec()));
    }
    let end = path.iter().position(|byte| *byte == 0).unwrap_or(path.len());
    Ok(AddressName::Path(path[..end].to_vec()))
}

/// A `sockaddr_un` read from user memory, before a path is looked up.
enum AddressName {
    Path(Vec<u8>),
    Abstract(Vec<u8>),
}

/// `socket(domain, type, protocol)`: a fresh Unix socket, or an Internet
/// one (`inet.rs`); other families are EAFNOSUPPORT.
pub fn socket_call(call: &mut Call<'_>) -> CallResult {
    let (domain, kind, protocol) = (call.argument(0), call.argument(1), call.argument(2));
    if let Some(family) = net::Family::of_domain(domain) {
        return super::inet::socket(call, family);
    }
    if domain != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    let (kind, status, close_on_exec) = socket_kind(kind)?;
    if protocol != 0 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let fd = install_descriptor(call, OpenFile::new(Backing::Socket(Arc::new(UnixSocket::new(kind))), status), Placement::LowestFrom(0), close_on_exec)?;
    value(u64::from(fd))
}

/// A `type` argument's kind, status flags and close-on-exec (EINVAL for
/// unknown bits or kinds).
fn socket_kind(kind: u64) -> Result<(SocketKind, u32, bool), Errno> {
    if kind & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let kind_of_socket = match kind & 0xf {
        SOCK_STREAM => SocketKind::Stream,
        SOCK_DGRAM => SocketKind::Datagram,
        SOCK_SEQPACKET => SocketKind::SeqPacket,
        _ => return Err(Errno::EINVAL),
    };
    let status = flags::O_RDWR | if kind & SOCK_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    Ok((kind_of_socket, status, kind & SOCK_CLOEXEC != 0))
}

/// `bind(fd, address, length)`: a path name makes a socket file (EEXIST
/// as EADDRINUSE, as Linux says it); an abstract name is taken unless in use.
pub fn bind(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::bind(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let socket = socket_of(&file)?;
    let name = match read_address(call, call.argument(1), call.argument(2))? {
        AddressName::Abstract(name) => SocketName::Abstract(name),
        AddressName::Path(path) => {
            // The file first, as Linux: a taken path is EADDRINUSE even
            // for a socket that is bound already.
            let inode = super::paths::make_node_at(call, super::paths::AT_FDCWD as u64, &path, vfs::FileKind::Socket, 0o777)
                .map_err(|errno| if errno == Errno::EEXIST { Errno::EADDRINUSE } else { errno })?;
            let name = SocketName::Path(inode, path.clone());
            if let Err(errno) = socket.bind(name) {
                let _ = super::paths::remove(call, super::paths::AT_FDCWD as u64, &path, false);
                return Err(errno);
            }
            return value(0);
        }
    };
    socket.bind(name)?;
    value(0)
}

/// `listen(fd, backlog)`.
pub fn listen(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::listen(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let backlog = (call.argument(1) as i32).max(0) as usize;
    socket_of(&file)?.listen(backlog)?;
    value(0)
}

/// `connect(fd, address, length)`: to the listener bound to that name
/// (ENOENT for no such path, ECONNREFUSED for a name nobody listens on;
/// the socket file needs write permission, EACCES).
pub fn connect(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::connect(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let name = match read_address(call, call.argument(1), call.argument(2))? {
        AddressName::Abstract(name) => SocketName::Abstract(name),
        AddressName::Path(path) => {
            let inode = super::paths::lookup_at(call, super::paths::AT_FDCWD as u64, &path, true)?;
            super::permissions::check(call, inode, super::permissions::want::WRITE, false)?;
            SocketName::Path(inode, path)
        }
    };
    let nonblocking = file.status() & flags::O_NONBLOCK != 0;
    socket_of(&file)?.connect(&name, nonblocking, &|| call.interrupted())?;
    value(0)
}

/// `accept(fd, address, length)` and `accept4(…, flags)`: the next
/// connection as a new descriptor, the connecting socket's name written
/// to `address` when asked.
pub fn accept(call: &mut Call<'_>, with_flags: bool) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let accept_flags = if with_flags { call.argument(3) } else { 0 };
    if accept_flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if let Backing::Inet(socket) = &file.backing {
        return super::inet::accept(call, &file, socket, accept_flags);
    }
    let listener = socket_of(&file)?;
    let nonblocking = file.status() & flags::O_NONBLOCK != 0;
    let accepted = Arc::new(listener.accept(nonblocking, &|| call.interrupted())?);
    let (_, peer) = accepted.names();
    let status = flags::O_RDWR | if accept_flags & SOCK_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let fd = install_descriptor(call, OpenFile::new(Backing::Socket(accepted), status), Placement::LowestFrom(0), accept_flags & SOCK_CLOEXEC != 0)?;
    if call.argument(1) != 0 {
        if let Err(errno) = write_address(call, call.argument(1), call.argument(2), peer.ok().flatten().as_ref()) {
            drop_descriptor(call, fd);
            return Err(errno);
        }
    }
    value(u64::from(fd))
}

/// The caller's buffer size at `at` (a `socklen_t`; EINVAL if negative).
pub(super) fn buffer_length(call: &Call<'_>, at: u64) -> Result<usize, Errno> {
    let mut length = [0u8; 4];
    call.read_in(at, &mut length)?;
    usize::try_from(i32::from_le_bytes(length)).map_err(|_| Errno::EINVAL)
}
