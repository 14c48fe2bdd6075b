//! Route netlink socket calls (`AF_NETLINK`, `NETLINK_ROUTE`): `socket`,
//! `bind`, `connect`, names, options, and requests and answers by
//! `send*`/`write` and `recv*`/`read` (`linux_objects::netlink_sockets`
//! keeps the socket, `net::netlink` makes the answers). Addresses are
//! `struct sockaddr_nl` (family, pad, port, groups); the kernel's port is
//! 0. Calls netlink sockets do not have (`listen`, `accept`, `shutdown`,
//! `socketpair`) are EOPNOTSUPP, as on Linux.

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::Placement;

use super::files::{descriptor, install_descriptor, wait_ready};
use super::sockets::{buffer_length, gather, message_header, scatter, MSG_DONTWAIT, MSG_PEEK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_NONBLOCK, SOL_SOCKET};
use super::{value, Call, CallResult};
use crate::netlink_sockets::NetlinkSocket;
use crate::open_files::{flags, Backing, OpenFile};
use linux_abi::Errno;

/// `AF_NETLINK`.
pub const AF_NETLINK: u64 = 16;
const NETLINK_ROUTE: u64 = 0;
const SOCK_RAW: u64 = 3;
/// `sizeof(struct sockaddr_nl)`.
const ADDRESS_BYTES: usize = 12;
/// `SOL_NETLINK` and the options programs set on it (accepted; they change nothing here).
const SOL_NETLINK: u64 = 270;
const NETLINK_OPTIONS: [u64; 6] = [1, 2, 3, 10, 11, 12];

/// The description descriptor `fd` is open on and its netlink socket, if
/// it is one (EBADF for no descriptor).
pub fn netlink_file(call: &Call<'_>, fd: u64) -> Result<Option<(Arc<OpenFile>, Arc<NetlinkSocket>)>, Errno> {
    let file = descriptor(call, fd)?;
    let Backing::Netlink(socket) = &file.backing else { return Ok(None) };
    let socket = socket.clone();
    Ok(Some((file, socket)))
}

/// `socket(AF_NETLINK, type, protocol)`.
pub fn socket(call: &mut Call<'_>, kind: u64, protocol: u64) -> CallResult {
    if kind & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let raw = match kind & 0xf {
        SOCK_RAW => true,
        SOCK_DGRAM => false,
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    if protocol != NETLINK_ROUTE {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let socket = NetlinkSocket::new(call.process.pid, raw);
    let status = flags::O_RDWR | if kind & SOCK_NONBLOCK != 0 { flags::O_NONBLOCK } else { 0 };
    let fd = install_descriptor(call, OpenFile::new(Backing::Netlink(Arc::new(socket)), status), Placement::LowestFrom(0), kind & SOCK_CLOEXEC != 0)?;
    value(u64::from(fd))
}

/// The (port, groups) of the `sockaddr_nl` at `address` (EINVAL when too
/// short or of another family).
fn read_address(call: &Call<'_>, address: u64, length: u64) -> Result<(u32, u32), Errno> {
    if (length as usize) < ADDRESS_BYTES {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; ADDRESS_BYTES];
    call.read_in(address, &mut bytes)?;
    if u16::from_le_bytes([bytes[0], bytes[1]]) != AF_NETLINK as u16 {
        return Err(Errno::EINVAL);
    }
    let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Ok((word(4), word(8)))
}

/// Writes a `sockaddr_nl` for (`port`, `groups`) to `address`, no more
/// than the length at `length_at` allows, and its full length there.
fn write_address(call: &Call<'_>, address: u64, length_at: u64, port: u32, groups: u32) -> Result<(), Errno> {
    let room = buffer_length(call, length_at)?;
    let mut bytes = [0u8; ADDRESS_BYTES];
    bytes[..2].copy_from_slice(&(AF_NETLINK as u16).to_le_bytes());
    bytes[4..8].copy_from_slice(&port.to_le_bytes());
    bytes[8..].copy_from_slice(&groups.to_le_bytes());
    call.write_out(address, &bytes[..room.min(ADDRESS_BYTES)])?;
    call.write_out(length_at, &(ADDRESS_BYTES as u32).to_le_bytes())
}

/// `bind(fd, sockaddr_nl, length)`.
pub fn bind(call: &mut Call<'_>, socket: &NetlinkSocket) -> CallResult {
    let (port, groups) = read_address(call, call.argument(1), call.argument(2))?;
    socket.bind(port, groups)?;
    value(0)
}

/// `connect(fd, sockaddr_nl, length)`: only the kernel (port 0) answers,
/// so the address is checked and nothing else changes.
pub fn connect(call: &mut Call<'_>) -> CallResult {
    read_address(call, call.argument(1), call.argument(2))?;
    value(0)
}

/// `getsockname` (the socket's port and groups), `getpeername` (the kernel).
pub fn socket_name(call: &mut Call<'_>, socket: &NetlinkSocket, peer: bool) -> CallResult {
    let (port, groups) = if peer { (0, 0) } else { (socket.port(), socket.groups()) };
    write_address(call, call.argument(1), call.argument(2), port, groups)?;
    value(0)
}

/// A request to the kernel: answered into the socket's queue. A
/// destination other than the kernel is ECONNREFUSED (no other sockets
/// are reachable here).
pub fn send(socket: &NetlinkSocket, data: &[u8], to: Option<(u32, u32)>) -> Result<usize, Errno> {
    if to.is_some_and(|(port, _)| port != 0) {
        return Err(Errno::ECONNREFUSED);
    }
    socket.request(data)?;
    Ok(data.len())
}

/// The next answer, at most `length` bytes of it, and its whole length;
/// waits for one unless the file or `message_flags` say not to.
fn receive(call: &Call<'_>, file: &OpenFile, socket: &NetlinkSocket, length: usize, message_flags: u64) -> Result<(Vec<u8>, usize), Errno> {
    let nonblocking = file.status() & flags::O_NONBLOCK != 0 || message_flags & MSG_DONTWAIT != 0;
    let peek = message_flags & MSG_PEEK != 0;
    loop {
        if let Some(mut datagram) = socket.take(peek)? {
            let whole = datagram.len();
            datagram.truncate(length);
            return Ok((datagram, whole));
        }
        if nonblocking {
            return Err(Errno::EAGAIN);
        }
        wait_ready(call, None, false, || Ok(usize::from(socket.readiness().0)))?;
    }
}

/// `read(fd, buffer, length)`: the next answer, cut to `length`.
pub fn read(call: &Call<'_>, file: &OpenFile, socket: &NetlinkSocket, length: usize) -> Result<Vec<u8>, Errno> {
    receive(call, file, socket, length, 0).map(|(data, _)| data)
}

/// `sendto(fd, buffer, length, flags, sockaddr_nl, length)`.
pub fn sendto(call: &mut Call<'_>, socket: &NetlinkSocket) -> CallResult {
    let length = (call.argument(2) as usize).min(super::files::CHUNK);
    let mut data = Vec::new();
    data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    data.resize(length, 0);
    call.read_in(call.argument(1), &mut data)?;
    let to = if call.argument(4) != 0 { Some(read_address(call, call.argument(4), call.argument(5))?) } else { None };
    value(send(socket, &data, to)? as u64)
}

/// `recvfrom(fd, buffer, length, flags, sockaddr_nl, length)`: the
/// sender is the kernel; `MSG_TRUNC` gives the answer's whole length.
pub fn recvfrom(call: &mut Call<'_>, file: &OpenFile, socket: &NetlinkSocket) -> CallResult {
    let message_flags = call.argument(3);
    let (data, whole) = receive(call, file, socket, call.argument(2) as usize, message_flags)?;
    call.write_out(call.argument(1), &data)?;
    if call.argument(4) != 0 && call.argument(5) != 0 {
        write_address(call, call.argument(4), call.argument(5), 0, 0)?;
    }
    value(if message_flags & MSG_TRUNC != 0 { whole } else { data.len() } as u64)
}

/// `sendmsg(fd, message, flags)`: the iovecs' bytes as one request.
pub fn sendmsg(call: &mut Call<'_>, socket: &NetlinkSocket) -> CallResult {
    let header = message_header(call, call.argument(1))?;
    let to = if header.name_at != 0 { Some(read_address(call, header.name_at, header.name_length)?) } else { None };
    let data = gather(call, &header)?;
    value(send(socket, &data, to)? as u64)
}

/// `recvmsg(fd, message, flags)`: the next answer into the iovecs, the
/// kernel as the name, no control messages, `MSG_TRUNC` when cut short.
pub fn recvmsg(call: &mut Call<'_>, file: &OpenFile, socket: &NetlinkSocket) -> CallResult {
    let header = message_header(call, call.argument(1))?;
    let message_flags = call.argument(2);
    let total: u64 = header.vectors.iter().map(|(_, length)| *length).fold(0, u64::saturating_add);
    let (data, whole) = receive(call, file, socket, total.min(super::files::CHUNK as u64) as usize, message_flags)?;
    scatter(call, &header, &data)?;
    if header.name_at != 0 {
        write_address(call, header.name_at, header.name_length_at, 0, 0)?;
    }
    call.write_out(header.control_length_at, &0u64.to_le_bytes())?;
    let out_flags = if whole > data.len() { MSG_TRUNC as u32 } else { 0 };
    call.write_out(header.flags_at, &out_flags.to_le_bytes())?;
    value(if message_flags & MSG_TRUNC != 0 { whole } else { data.len() } as u64)
}

/// `getsockopt`: the `SOL_SOCKET` options a netlink socket answers, and
/// the `SOL_NETLINK` flags (all off).
pub fn getsockopt(call: &mut Call<'_>, socket: &NetlinkSocket) -> CallResult {
    const SO_TYPE: u64 = 3;
    const SO_ERROR: u64 = 4;
    const SO_SNDBUF: u64 = 7;
    const SO_RCVBUF: u64 = 8;
    const SO_PROTOCOL: u64 = 38;
    const SO_DOMAIN: u64 = 39;
    let answer: u32 = match (call.argument(1), call.argument(2)) {
        (SOL_SOCKET, SO_TYPE) => if socket.raw { SOCK_RAW as u32 } else { SOCK_DGRAM as u32 },
        (SOL_SOCKET, SO_ERROR) => 0,
        // The queue's limit: what the socket holds unread.
        (SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) => crate::netlink_sockets::QUEUE_BYTES as u32,
        (SOL_SOCKET, SO_PROTOCOL) => NETLINK_ROUTE as u32,
        (SOL_SOCKET, SO_DOMAIN) => AF_NETLINK as u32,
        (SOL_SOCKET, _) => return Err(Errno::ENOPROTOOPT),
        (SOL_NETLINK, option) if NETLINK_OPTIONS.contains(&option) => 0,
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let room = buffer_length(call, call.argument(4))?;
    let bytes = answer.to_le_bytes();
    call.write_out(call.argument(3), &bytes[..room.min(4)])?;
    call.write_out(call.argument(4), &(room.min(4) as u32).to_le_bytes())?;
    value(0)
}

/// `setsockopt`: buffer sizes, timeouts and the `SOL_NETLINK` flags are
/// accepted (nothing here depends on them); others ENOPROTOOPT.
pub fn setsockopt(call: &mut Call<'_>) -> CallResult {
    match (call.argument(1), call.argument(2)) {
        // SO_SNDBUF, SO_RCVBUF, SO_PASSCRED, SO_RCVTIMEO, SO_SNDTIMEO, SO_SNDBUFFORCE, SO_RCVBUFFORCE.
        (SOL_SOCKET, 7 | 8 | 16 | 20 | 21 | 32 | 33) | (SOL_NETLINK, 1 | 2 | 3 | 10 | 11 | 12) => {
            if call.argument(4) < 4 {
                return Err(Errno::EINVAL);
            }
            value(0)
        }
        _ => Err(Errno::ENOPROTOOPT),
    }
}
