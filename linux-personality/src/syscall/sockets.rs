//! Socket system calls: Unix sockets here (pairs from `socketpair`,
//! named ones from `socket`: stream, datagram, seqpacket), Internet
//! sockets sent on to `inet.rs`. Sending and receiving (`sendto`,
//! `recvfrom`, `sendmsg`, `recvmsg` with `SCM_RIGHTS` and
//! `SCM_CREDENTIALS`; `read`/`write` come here from `files.rs`) within
//! `SO_SNDTIMEO`/`SO_RCVTIMEO`, `shutdown`, options and names. A call on a
//! descriptor that is not a socket is ENOTSOCK; other families and types
//! are refused with Linux's errno.

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::Placement;

use super::files::{descriptor, drop_descriptor, install_descriptor, io_vectors, signal_broken_pipe, write_socket, CHUNK};
use super::control_messages::{self, CONTROL_HEADER, MSG_CTRUNC};
use super::{value, Call, CallResult};
use crate::open_files::{flags, Backing, OpenFile};
use crate::descriptor_passing::InFlight;
use crate::pipes::{Attached, Credentials, Received};
use crate::socket_waits::{Patience, Timeout};
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
pub(super) const MSG_TRUNC: u64 = 0x20;
pub(super) const MSG_DONTWAIT: u64 = 0x40;
pub(super) const MSG_WAITALL: u64 = 0x100;
pub(super) const MSG_NOSIGNAL: u64 = 0x4000;
const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;
/// `SCM_RIGHTS`, `SCM_CREDENTIALS` (control messages at `SOL_SOCKET`).
const SCM_RIGHTS: u32 = 1;
const SCM_CREDENTIALS: u32 = 2;
pub(super) const SOL_SOCKET: u64 = 1;
const SO_PASSCRED: u64 = 16;
pub(super) const SO_RCVTIMEO: u64 = 20;
pub(super) const SO_SNDTIMEO: u64 = 21;
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

/// `socketpair(domain, type, protocol, sv)`.
pub fn socketpair(call: &mut Call<'_>) -> CallResult {
    let (domain, kind, protocol) = (call.argument(0), call.argument(1), call.argument(2));
    const AF_INET: u64 = 2;
    const AF_INET6: u64 = 10;
    match domain {
        AF_UNIX => {}
        // Internet and netlink sockets come in pairs on no system.
        AF_INET | AF_INET6 | super::netlink::AF_NETLINK => return Err(Errno::EOPNOTSUPP),
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
    if super::netlink::netlink_file(call, call.argument(0))?.is_some() {
        return Err(Errno::EOPNOTSUPP);
    }
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

/// What a message's control part carries.
#[derive(Default)]
struct Control {
    descriptors: Option<InFlight>,
    credentials: Option<Credentials>,
}

/// The largest record a stream send with something attached is cut into
/// (a stream's pipe holds 64 KiB; a record must fit whole).
const ATTACHED_STREAM_RECORD: usize = 16 * 1024;

/// Runs `operation(nonblocking)` as `patience` allows: once without
/// waiting, waiting as long as it must, or — under a socket timeout —
/// without waiting, tried again on every change until the deadline.
fn with_patience<R>(patience: Patience, interrupted: &dyn Fn() -> bool, mut operation: impl FnMut(bool) -> Result<R, Errno>) -> Result<R, Errno> {
    match patience {
        Patience::Never => operation(true),
        Patience::Unbounded => operation(false),
        Patience::Until(deadline) => crate::socket_waits::wait_as_poller(deadline, interrupted, || operation(true)),
    }
}

/// The caller's own credentials: pid, real user and group.
fn own_credentials(call: &Call<'_>) -> Credentials {
    let ids = call.process.state().credentials;
    Credentials { pid: call.pid(), uid: ids.user.real, gid: ids.group.real }
}

/// Credentials a sender claims (`SCM_CREDENTIALS`), checked as Linux
/// does: its own pid unless root (then any live process, else ESRCH), a
/// uid and gid it holds unless root (EPERM).
fn claimed_credentials(call: &Call<'_>, claimed: Credentials) -> Result<Credentials, Errno> {
    let ids = call.process.state().credentials;
    let privileged = ids.privileged();
    let own_pid = claimed.pid == call.pid();
    if !(own_pid || privileged) || !(privileged || ids.user.holds(claimed.uid)) || !(privileged || ids.group.holds(claimed.gid)) {
        return Err(Errno::EPERM);
    }
    if !own_pid && crate::process::find(claimed.pid).is_none() {
        return Err(Errno::ESRCH);
    }
    Ok(claimed)
}

/// Sends `data` with what `control` attaches on socket `file` (to `to`,
/// a datagram socket's destination by name) with `MSG_*` flags, within
/// `O_NONBLOCK`, `MSG_DONTWAIT` and `SO_SNDTIMEO`.
fn send(call: &Call<'_>, file: &OpenFile, data: &[u8], control: Control, to: Option<&SocketName>, message_flags: u64) -> Result<usize, Errno> {
    let socket = socket_of(file)?;
    let patience = Patience::of(file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0, socket.send_timeout.get());
    let interrupted = || call.interrupted();
    let written = if socket.is_addressable() {
        let pipe = socket.datagram_destination(to)?;
        let credentials = control.credentials.or_else(|| pipe.wants_credentials().then(|| own_credentials(call)));
        let mut attached = Attached { descriptors: control.descriptors, credentials, sender: socket.name() };
        with_patience(patience, &interrupted, |nonblocking| pipe.send_record(data, &mut attached, nonblocking, &interrupted))
    } else {
        let end = socket.end()?;
        let credentials = control.credentials.or_else(|| end.outgoing().wants_credentials().then(|| own_credentials(call)));
        match (control.descriptors, credentials) {
            (None, None) => send_bytes(&end, data, patience, &interrupted),
            // A stream carries descriptors only with at least one byte.
            (Some(_), _) if data.is_empty() && end.kind == SocketKind::Stream => Ok(0),
            _ if !end.can_write() => Err(Errno::EPIPE),
            (descriptors, credentials) => send_attached(&end, data, Attached { descriptors, credentials, sender: None }, patience, &interrupted),
        }
    };
    match written {
        // A datagram to a peer that has gone is refused, without SIGPIPE.
        Err(Errno::EPIPE) if socket.kind == SocketKind::Datagram => Err(Errno::ECONNREFUSED),
        written if message_flags & MSG_NOSIGNAL != 0 => written,
        written => signal_broken_pipe(call, written),
    }
}

/// Plain bytes to a connected end; under a timeout, as much as fits
/// before the deadline (EAGAIN when nothing did).
fn send_bytes(end: &SocketEnd, data: &[u8], patience: Patience, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
    let Patience::Until(deadline) = patience else { return write_socket(end, data, patience == Patience::Never, interrupted) };
    let mut sent = 0;
    let outcome = crate::socket_waits::wait_as_poller(deadline, interrupted, || {
        sent += write_socket(end, &data[sent..], true, interrupted)?;
        if sent < data.len() {
            Err(Errno::EAGAIN)
        } else {
            Ok(())
        }
    });
    match outcome {
        Err(_) if sent > 0 => Ok(sent),
        other => other.map(|()| sent),
    }
}

/// Bytes with descriptors or credentials as records: one on a record
/// socket; on a stream, pieces of at most [`ATTACHED_STREAM_RECORD`]
/// bytes, the descriptors with the first, the credentials with each.
fn send_attached(end: &SocketEnd, data: &[u8], mut attached: Attached, patience: Patience, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
    if end.kind == SocketKind::Stream && data.is_empty() {
        return Ok(0);
    }
    let piece = if end.kind == SocketKind::Stream { ATTACHED_STREAM_RECORD } else { data.len().max(1) };
    let credentials = attached.credentials;
    let mut sent = 0;
    for chunk in data.chunks(piece).chain(data.is_empty().then_some(&data[..0])) {
        match with_patience(patience, interrupted, |nonblocking| end.outgoing().send_record(chunk, &mut attached, nonblocking, interrupted)) {
            Ok(count) => sent += count,
            Err(_) if sent > 0 => break,
            Err(errno) => return Err(errno),
        }
        attached = Attached { credentials, ..Attached::default() };
    }
    Ok(sent)
}

/// `write(2)` on a Unix socket.
pub(super) fn write(call: &Call<'_>, file: &OpenFile, data: &[u8]) -> Result<usize, Errno> {
    send(call, file, data, Control::default(), None, 0)
}

/// `read(2)` on a Unix socket.
pub(super) fn read(call: &Call<'_>, file: &OpenFile, length: usize) -> Result<Vec<u8>, Errno> {
    receive(call, file, length, 0).map(|(data, _)| data)
}

/// `read(2)` on a Unix socket, its bytes copied straight to `address`: when
/// that copy fails (EFAULT) they go back to the socket, as a pipe's do
/// (`Pipe::read_and_deliver`), instead of being lost.
pub(super) fn read_to(call: &Call<'_>, file: &OpenFile, address: u64, length: usize) -> Result<usize, Errno> {
    let socket = socket_of(file)?;
    let patience = Patience::of(file.status() & flags::O_NONBLOCK != 0, socket.receive_timeout.get());
    let interrupted = || call.interrupted();
    let incoming = socket.reading_pipe()?;
    let length = length.min(CHUNK);
    with_patience(patience, &interrupted, |nonblocking| incoming.read_and_deliver(length, nonblocking, &interrupted, |bytes| call.write_out(address, bytes)))
}

/// Receives up to `length` bytes from socket `file`, with what came with
/// them, within `O_NONBLOCK`, `MSG_DONTWAIT` and `SO_RCVTIMEO`.
fn receive(call: &Call<'_>, file: &OpenFile, length: usize, message_flags: u64) -> Result<(Vec<u8>, Received), Errno> {
    let socket = socket_of(file)?;
    let patience = Patience::of(file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0, socket.receive_timeout.get());
    let interrupted = || call.interrupted();
    let incoming = socket.reading_pipe()?;
    let length = length.min(CHUNK);
    let mut buffer = Vec::new();
    let take = message_flags & MSG_PEEK == 0;
    let mut received = with_patience(patience, &interrupted, |nonblocking| incoming.receive(&mut buffer, length, nonblocking, &interrupted, take))?;
    // MSG_WAITALL on a stream: on until it is all there, end of file, a
    // signal, or descriptors.
    while take && socket.kind == SocketKind::Stream && message_flags & MSG_WAITALL != 0 && !buffer.is_empty() && buffer.len() < length && received.attached.descriptors.is_none() {
        let wanted = length - buffer.len();
        match with_patience(patience, &interrupted, |nonblocking| incoming.receive(&mut buffer, wanted, nonblocking, &interrupted, true)) {
            Ok(more) if more.count > 0 => received.attached.descriptors = more.attached.descriptors,
            _ => break,
        }
    }
    received.count = buffer.len();
    Ok((buffer, received))
}

/// `sendto(fd, buffer, length, flags, address, address_length)`: a
/// datagram socket's destination by name, if given; the address of a
/// connected socket is not looked at.
pub fn sendto(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::sendto(call, &socket);
    }
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::sendto(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let length = (call.argument(2) as usize).min(CHUNK);
    let mut data = Vec::new();
    data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    data.resize(length, 0);
    call.read_in(call.argument(1), &mut data)?;
    let to = destination(call, &file, call.argument(4), call.argument(5))?;
    value(send(call, &file, &data, Control::default(), to.as_ref(), call.argument(3))? as u64)
}

/// A datagram socket's destination by name (`sendto`'s, `sendmsg`'s),
/// if one is given; none for other sockets (Linux ignores it there).
fn destination(call: &Call<'_>, file: &OpenFile, address: u64, length: u64) -> Result<Option<SocketName>, Errno> {
    if address == 0 || !socket_of(file)?.is_addressable() {
        return Ok(None);
    }
    resolve_name(call, read_address(call, address, length)?).map(Some)
}

/// The socket name `address` stands for: a path is looked up (ENOENT)
/// and must be writable (EACCES).
fn resolve_name(call: &Call<'_>, address: AddressName) -> Result<SocketName, Errno> {
    Ok(match address {
        AddressName::Unnamed => return Err(Errno::EINVAL),
        AddressName::Abstract(name) => SocketName::Abstract(name),
        AddressName::Path(path) => {
            let inode = super::paths::lookup_at(call, super::paths::AT_FDCWD as u64, &path, true)?;
            super::permissions::check(call, inode, super::permissions::want::WRITE, false)?;
            SocketName::Path(inode, path)
        }
    })
}

/// `recvfrom(fd, buffer, length, flags, address, address_length)`: a
/// datagram's sender by name, if it had one (else length 0, as for a
/// pair's end). Descriptors that came with the bytes are closed (there is
/// nowhere to put them).
/// `MSG_TRUNC` on a record socket returns the record's whole length.
pub fn recvfrom(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::recvfrom(call, &file, &socket);
    }
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::recvfrom(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let message_flags = call.argument(3);
    let (data, received) = receive(call, &file, call.argument(2) as usize, message_flags)?;
    call.write_out(call.argument(1), &data)?;
    if call.argument(4) != 0 && call.argument(5) != 0 {
        write_sender(call, call.argument(4), call.argument(5), &received)?;
    }
    let records = socket_of(&file)?.kind.keeps_records();
    value(if records && message_flags & MSG_TRUNC != 0 { received.length } else { data.len() } as u64)
}

/// The fields of a `struct msghdr` at `address`: name length's address,
/// the iovecs, the control length and its address.
pub(super) struct MessageHeader {
    pub(super) name_at: u64,
    pub(super) name_length: u64,
    pub(super) name_length_at: u64,
    pub(super) vectors: Vec<(u64, u64)>,
    control_at: u64,
    control_length: u64,
    pub(super) control_length_at: u64,
    pub(super) flags_at: u64,
}

pub(super) fn message_header(call: &Call<'_>, address: u64) -> Result<MessageHeader, Errno> {
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

/// `sendmsg(fd, message, flags)`: the iovecs' bytes as one send (to the
/// message's name, for a datagram socket), with the descriptors of its
/// `SCM_RIGHTS` and the credentials of its `SCM_CREDENTIALS` control
/// messages.
pub fn sendmsg(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::sendmsg(call, &socket);
    }
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return inet_sendmsg(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let header = message_header(call, call.argument(1))?;
    let to = destination(call, &file, header.name_at, header.name_length)?;
    let control = control_to_send(call, &header)?;
    let data = gather(call, &header)?;
    value(send(call, &file, &data, control, to.as_ref(), call.argument(2))? as u64)
}

/// The iovecs' bytes of `header`, gathered (at most [`CHUNK`]).
pub(super) fn gather(call: &Call<'_>, header: &MessageHeader) -> Result<Vec<u8>, Errno> {
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
pub(super) fn scatter(call: &Call<'_>, header: &MessageHeader, data: &[u8]) -> Result<(), Errno> {
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
/// name, with what its control messages ask of a datagram (hop limit,
/// traffic class, source address: `inet_control.rs`).
fn inet_sendmsg(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let header = message_header(call, call.argument(1))?;
    let control = control_messages::read_control(call, header.control_at, header.control_length as usize)?;
    let control = super::inet_control::send_control(socket.family, &control_messages::messages(&control)?)?;
    let data = gather(call, &header)?;
    let to = super::inet::destination(call, socket, header.name_at, header.name_length)?;
    value(super::inet::send_with(call, file, socket, &data, to, call.argument(2), control)? as u64)
}

/// `recvmsg` on an Internet socket: into the iovecs, the sender as the
/// name, the control messages the socket asked for of a datagram
/// (`inet_control.rs`), `MSG_TRUNC` for a datagram cut short.
fn inet_recvmsg(call: &mut Call<'_>, file: &OpenFile, socket: &InetSocket) -> CallResult {
    let header = message_header(call, call.argument(1))?;
    let message_flags = call.argument(2);
    let total: u64 = header.vectors.iter().map(|(_, length)| *length).fold(0, u64::saturating_add);
    let received = super::inet::receive(call, file, socket, total.min(CHUNK as u64) as usize, message_flags)?;
    scatter(call, &header, &received.data)?;
    super::inet::write_name(call, socket, header.name_at, header.name_length_at, received.from)?;
    let mut out_flags = if received.length > received.data.len() { MSG_TRUNC as u32 } else { 0 };
    let mut control = Vec::new();
    if let Some(arrival) = &received.arrival {
        for (level, kind, payload) in super::inet_control::arrival_messages(socket.family, arrival) {
            out_flags |= control_messages::put(&mut control, header.control_length as usize, level, kind, &payload)?;
        }
    }
    if !control.is_empty() {
        call.write_out(header.control_at, &control)?;
    }
    call.write_out(header.control_length_at, &(control.len() as u64).to_le_bytes())?;
    call.write_out(header.flags_at, &out_flags.to_le_bytes())?;
    value(if message_flags & MSG_TRUNC != 0 { received.length } else { received.data.len() } as u64)
}

/// What a message's control part passes: descriptors taken into flight,
/// credentials checked (EINVAL for a malformed control message, EBADF for
/// a descriptor the caller does not hold, EPERM/ESRCH for credentials it
/// may not claim).
fn control_to_send(call: &Call<'_>, header: &MessageHeader) -> Result<Control, Errno> {
    if header.control_length == 0 {
        return Ok(Control::default());
    }
    let control = control_messages::read_control(call, header.control_at, header.control_length as usize)?;
    let mut fds: Vec<u32> = Vec::new();
    let mut credentials = None;
    for message in control_messages::messages(&control)? {
        match (message.level, message.kind) {
            (SOL_SOCKET, SCM_RIGHTS) => {
                fds.try_reserve(message.data.len() / 4).map_err(|_| Errno::ENOMEM)?;
                fds.extend(message.words());
            }
            (SOL_SOCKET, SCM_CREDENTIALS) if message.data.len() == 12 => {
                let mut words = message.words();
                let mut word = || words.next().unwrap_or_default();
                credentials = Some(claimed_credentials(call, Credentials { pid: word(), uid: word(), gid: word() })?);
            }
            _ => return Err(Errno::EINVAL),
        }
    }
    let descriptors = if fds.is_empty() { None } else { Some(InFlight::send(call.process.native.space(), call.process.group(), &fds)?) };
    Ok(Control { descriptors, credentials })
}

/// `recvmsg(fd, message, flags)`: into the iovecs in turn; descriptors
/// that came with the bytes as an `SCM_RIGHTS` control message (as many
/// as the control buffer holds, the rest closed and `MSG_CTRUNC` set);
/// `MSG_TRUNC` when a record was cut short; no name.
pub fn recvmsg(call: &mut Call<'_>) -> CallResult {
    if let Some((file, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::recvmsg(call, &file, &socket);
    }
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return inet_recvmsg(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let header = message_header(call, call.argument(1))?;
    let message_flags = call.argument(2);
    let total: u64 = header.vectors.iter().map(|(_, length)| *length).fold(0, u64::saturating_add);
    let (data, mut received) = receive(call, &file, total.min(CHUNK as u64) as usize, message_flags)?;
    scatter(call, &header, &data)?;
    let mut out_flags = 0u32;
    let records = socket_of(&file)?.kind.keeps_records();
    if records && received.length > data.len() {
        out_flags |= MSG_TRUNC as u32;
    }
    let room = header.control_length as usize;
    let mut control = Vec::new();
    if socket_of(&file)?.passes_credentials() {
        let credentials = received.attached.credentials.unwrap_or(Credentials::UNKNOWN);
        let payload: Vec<u8> = [credentials.pid, credentials.uid, credentials.gid].iter().flat_map(|word| word.to_le_bytes()).collect();
        out_flags |= control_messages::put(&mut control, room, SOL_SOCKET, SCM_CREDENTIALS, &payload)?;
    }
    if let Some(descriptors) = received.attached.descriptors.take() {
        let fits = room.saturating_sub(control.len() + CONTROL_HEADER) / 4;
        if fits < descriptors.count() {
            out_flags |= MSG_CTRUNC;
        }
        let sender_group = descriptors.sender_group();
        let fds = descriptors.deliver(call.process.native.space(), fits);
        // From another CPU group: copies through the group kernels first.
        // If they cannot be made, the descriptors are dropped and the data
        // still delivered, with MSG_CTRUNC (as Linux does when it cannot
        // install received descriptors).
        let fds = if carry_received(call, sender_group, &fds).is_err() {
            for &fd in &fds {
                if let Ok(removed) = kernel_objects::capabilities::caps().with(|database| database.drop_capability(call.process.native.space(), fd)) {
                    kernel_objects::capabilities::undo(&removed);
                }
            }
            out_flags |= MSG_CTRUNC;
            Vec::new()
        } else {
            fds
        };
        for fd in &fds {
            call.process.state().set_close_on_exec(*fd, message_flags & MSG_CMSG_CLOEXEC != 0)?;
        }
        if !fds.is_empty() {
            let payload: Vec<u8> = fds.iter().flat_map(|fd| fd.to_le_bytes()).collect();
            out_flags |= control_messages::put(&mut control, room, SOL_SOCKET, SCM_RIGHTS, &payload)?;
        }
    }
    if !control.is_empty() {
        call.write_out(header.control_at, &control)?;
    }
    if header.name_at != 0 {
        write_sender(call, header.name_at, header.name_length_at, &received)?;
    } else {
        call.write_out(header.name_length_at, &0u32.to_le_bytes())?;
    }
    call.write_out(header.control_length_at, &(control.len() as u64).to_le_bytes())?;
    call.write_out(header.flags_at, &out_flags.to_le_bytes())?;
    let length = if records && message_flags & MSG_TRUNC != 0 { received.length } else { data.len() };
    value(length as u64)
}

/// A received datagram's sender, as `recvfrom` and `recvmsg` give it: its
/// name, or nothing (length 0) for an unnamed sender or a pair's end.
fn write_sender(call: &Call<'_>, address: u64, length_at: u64, received: &Received) -> Result<(), Errno> {
    match &received.attached.sender {
        Some(name) => write_address(call, address, length_at, Some(name)),
        None => call.write_out(length_at, &0u32.to_le_bytes()),
    }
}

/// `getsockopt(fd, level, name, value, length)`: the `SOL_SOCKET` options
/// a Unix stream socket answers.
pub fn getsockopt(call: &mut Call<'_>) -> CallResult {
    if let Some((_, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::getsockopt(call, &socket);
    }
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::getsockopt(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    const SO_TYPE: u64 = 3;
    const SO_ERROR: u64 = 4;
    const SO_SNDBUF: u64 = 7;
    const SO_RCVBUF: u64 = 8;
    const SO_ACCEPTCONN: u64 = 30;
    const SO_PROTOCOL: u64 = 38;
    const SO_DOMAIN: u64 = 39;
    if call.argument(1) != SOL_SOCKET {
        // A Unix socket has no other level's options.
        return Err(Errno::EOPNOTSUPP);
    }
    let socket = socket_of(&file)?;
    match call.argument(2) {
        SO_RCVTIMEO => return write_option_value(call, &timeval(socket.receive_timeout.get())),
        SO_SNDTIMEO => return write_option_value(call, &timeval(socket.send_timeout.get())),
        _ => {}
    }
    let answer: u32 = match call.argument(2) {
        SO_TYPE => socket.kind as u32,
        SO_ACCEPTCONN => u32::from(socket.is_listening()),
        SO_PASSCRED => u32::from(socket.passes_credentials()),
        SO_ERROR | SO_PROTOCOL => 0,
        SO_SNDBUF | SO_RCVBUF => BUFFER_BYTES,
        SO_DOMAIN => AF_UNIX as u32,
        _ => return Err(Errno::ENOPROTOOPT),
    };
    write_option_value(call, &answer.to_le_bytes())
}

const NANOSECONDS_PER_SECOND: u64 = 1_000_000_000;

/// A timeout as the `struct timeval` `getsockopt` gives (`{0, 0}` for none).
pub(super) fn timeval(timeout: Timeout) -> [u8; 16] {
    let nanoseconds = match timeout {
        Timeout::Forever | Timeout::Immediate => 0,
        Timeout::After(nanoseconds) => nanoseconds,
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&(nanoseconds / NANOSECONDS_PER_SECOND).to_le_bytes());
    bytes[8..].copy_from_slice(&(nanoseconds % NANOSECONDS_PER_SECOND / 1000).to_le_bytes());
    bytes
}

/// The `struct timeval` at the call's value argument as a timeout: `{0,
/// 0}` none, seconds below zero no waiting at all, microseconds out of
/// range EDOM (Linux's rules).
pub(super) fn read_timeval(call: &Call<'_>) -> Result<Timeout, Errno> {
    if call.argument(4) < 16 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 16];
    call.read_in(call.argument(3), &mut bytes)?;
    let [seconds, microseconds] = [0, 8].map(|at| i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default()));
    if !(0..1_000_000).contains(&microseconds) {
        return Err(Errno::EDOM);
    }
    Ok(match (seconds, microseconds) {
        (..0, _) => Timeout::Immediate,
        (0, 0) => Timeout::Forever,
        _ => Timeout::After((seconds as u64).saturating_mul(NANOSECONDS_PER_SECOND).saturating_add(microseconds as u64 * 1000)),
    })
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

/// `setsockopt(fd, level, name, value, length)`: `SO_PASSCRED`, the
/// timeouts; buffer sizes are accepted (nothing changes); other
/// `SOL_SOCKET` options ENOPROTOOPT, other levels EOPNOTSUPP (as for
/// Linux's Unix sockets).
pub fn setsockopt(call: &mut Call<'_>) -> CallResult {
    if super::netlink::netlink_file(call, call.argument(0))?.is_some() {
        return super::netlink::setsockopt(call);
    }
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::setsockopt(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let socket = socket_of(&file)?;
    match (call.argument(1), call.argument(2)) {
        (SOL_SOCKET, SO_RCVTIMEO) => {
            socket.receive_timeout.set(read_timeval(call)?);
            value(0)
        }
        (SOL_SOCKET, SO_SNDTIMEO) => {
            socket.send_timeout.set(read_timeval(call)?);
            value(0)
        }
        (SOL_SOCKET, 7 | 8 | 16 | 32 | 33) => {
            if call.argument(4) < 4 {
                return Err(Errno::EINVAL);
            }
            let mut option = [0u8; 4];
            call.read_in(call.argument(3), &mut option)?;
            if call.argument(2) == SO_PASSCRED {
                socket.set_pass_credentials(u32::from_le_bytes(option) != 0);
            }
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
    if let Some((_, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::socket_name(call, &socket, peer);
    }
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
/// (up to its first NUL), an abstract name, or — the family alone —
/// nothing (`bind` then picks an abstract name). EINVAL for a short or
/// long address, or another family.
fn read_address(call: &Call<'_>, address: u64, length: u64) -> Result<AddressName, Errno> {
    const SUN_PATH: usize = 108;
    let length = length as usize;
    if !(2..=2 + SUN_PATH).contains(&length) {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 2 + SUN_PATH];
    call.read_in(address, &mut bytes[..length])?;
    if u16::from_le_bytes([bytes[0], bytes[1]]) != AF_UNIX as u16 {
        return Err(Errno::EINVAL);
    }
    if length == 2 {
        return Ok(AddressName::Unnamed);
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
    /// The family alone.
    Unnamed,
}

/// `socket(domain, type, protocol)`: a fresh Unix socket, or an Internet
/// one (`inet.rs`); other families are EAFNOSUPPORT.
pub fn socket_call(call: &mut Call<'_>) -> CallResult {
    let (domain, kind, protocol) = (call.argument(0), call.argument(1), call.argument(2));
    if let Some(family) = net::Family::of_domain(domain) {
        return super::inet::socket(call, family);
    }
    if domain == super::netlink::AF_NETLINK {
        return super::netlink::socket(call, kind, protocol);
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
    if let Some((_, socket)) = super::netlink::netlink_file(call, call.argument(0))? {
        return super::netlink::bind(call, &socket);
    }
    if let Some((_, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::bind(call, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let socket = socket_of(&file)?;
    let name = match read_address(call, call.argument(1), call.argument(2))? {
        AddressName::Unnamed => return autobind(socket).and_then(|()| value(0)),
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

/// The next abstract name `autobind` tries (five hex digits, as Linux's).
static AUTOBIND_NEXT: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
const AUTOBIND_NAMES: u32 = 1 << 20;

/// `bind` with the family alone: an abstract name of five hex digits no
/// socket holds (Linux's autobind; nothing to do for a bound socket).
fn autobind(socket: &Arc<UnixSocket>) -> Result<(), Errno> {
    if socket.name().is_some() {
        return Ok(());
    }
    for _ in 0..AUTOBIND_NAMES {
        let number = AUTOBIND_NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed) % AUTOBIND_NAMES;
        let name: Vec<u8> = (0..5).rev().map(|digit| b"0123456789abcdef"[((number >> (4 * digit)) & 0xf) as usize]).collect();
        match socket.bind(SocketName::Abstract(name)) {
            Err(Errno::EADDRINUSE) => continue,
            other => return other,
        }
    }
    Err(Errno::ENOSPC)
}

/// `listen(fd, backlog)`.
pub fn listen(call: &mut Call<'_>) -> CallResult {
    if super::netlink::netlink_file(call, call.argument(0))?.is_some() {
        return Err(Errno::EOPNOTSUPP);
    }
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
    if super::netlink::netlink_file(call, call.argument(0))?.is_some() {
        return super::netlink::connect(call);
    }
    if let Some((file, socket)) = inet_file(call, call.argument(0))? {
        return super::inet::connect(call, &file, &socket);
    }
    let file = socket(call, call.argument(0))?;
    let name = resolve_name(call, read_address(call, call.argument(1), call.argument(2))?)?;
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
    if let Backing::Netlink(_) = &file.backing {
        return Err(Errno::EOPNOTSUPP);
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

/// Descriptors `fds` just received from a sender in CPU group
/// `sender_group`: the receiver obtains, through its group's kernel, a
/// copy of each description held in another group (issue 20; nothing to
/// do without groups).
fn carry_received(call: &Call<'_>, sender_group: usize, fds: &[u32]) -> Result<(), Errno> {
    if kernel_objects::groups::count() < 2 || fds.is_empty() {
        return Ok(());
    }
    let handles = crate::group_descriptors::descriptions_of(call.process.native.space(), fds)?;
    crate::group_descriptors::carry_into_group(call.process.pid, call.process.group(), sender_group, &handles)
}
