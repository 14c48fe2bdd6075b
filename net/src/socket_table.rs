//! The network's sockets as Linux lists them in `/proc/net/tcp`, `tcp6`,
//! `udp` and `udp6` (what `netstat` and `ss` read): which sockets appear
//! there and the text, column for column.
//!
//! Linux lists a TCP socket once it listens or has a connection (also one
//! its owner closed that is still finishing), a UDP socket once it is
//! bound; an IPv6 socket (with IPv4 peers as mapped addresses) in the
//! `6` files. Addresses are printed as Linux prints them: each 32-bit word
//! in network order read as a little-endian number, the port as a number.
//! Timers, retransmits, uid and the kernel pointer are zero here.
//!
//! May not change the network.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use smoltcp::socket::tcp::State;
use smoltcp::wire::{IpAddress, IpEndpoint};

use crate::addresses::Family;
use crate::network::{Body, Network, SocketId, SocketKind};
use crate::stream::StreamRow;

/// One line of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRow {
    /// The socket it belongs to (none for a connection closed by its owner
    /// and still finishing).
    pub socket: Option<SocketId>,
    /// The local end.
    pub local: IpEndpoint,
    /// The far end (unspecified when there is none).
    pub remote: Option<IpEndpoint>,
    /// Linux's state number (`TCP_ESTABLISHED` 1 … `TCP_LISTEN` 10; UDP
    /// uses 7, `TCP_CLOSE`, unless connected).
    pub state: u8,
    /// Bytes queued to send (a listener: none).
    pub send_queue: usize,
    /// Bytes received and not read (a listener: connections not accepted).
    pub receive_queue: usize,
}

/// Linux's number for a TCP state.
pub(crate) fn linux_tcp_state(state: State) -> u8 {
    match state {
        State::Established => 1,
        State::SynSent => 2,
        State::SynReceived => 3,
        State::FinWait1 => 4,
        State::FinWait2 => 5,
        State::TimeWait => 6,
        State::Closed => 7,
        State::CloseWait => 8,
        State::LastAck => 9,
        State::Listen => 10,
        State::Closing => 11,
    }
}

const TCP_CLOSE: u8 = 7;
const TCP_ESTABLISHED: u8 = 1;

impl Network {
    /// The rows of `kind`'s table for `family` (the `6` file for V6).
    pub fn socket_table(&self, family: Family, kind: SocketKind) -> Vec<TableRow> {
        let mut rows = Vec::new();
        for (index, slot) in self.sockets.iter().enumerate() {
            let Some(socket) = slot else { continue };
            if socket.family != family {
                continue;
            }
            let id = SocketId(index);
            match (&socket.body, kind) {
                (Body::Stream(stream), SocketKind::Stream) => {
                    for row in self.stream_rows(stream, socket.local) {
                        rows.push(TableRow { socket: row.owned.then_some(id), ..row.row });
                    }
                }
                // UDP-Lite sockets have a table of their own on Linux
                // (/proc/net/udplite), which Lamina does not list.
                (Body::Datagram(datagram), SocketKind::Datagram) if datagram.protocol == crate::network::DatagramProtocol::Udp => {
                    let Some(local) = socket.local else { continue };
                    let state = if datagram.peer.is_some() { TCP_ESTABLISHED } else { TCP_CLOSE };
                    rows.push(TableRow { socket: Some(id), local, remote: datagram.peer, state, send_queue: 0, receive_queue: 0 });
                }
                _ => {}
            }
        }
        if kind == SocketKind::Stream {
            // Closed by their owners, still finishing: listed by address family.
            for row in self.lingering_rows() {
                let v6 = matches!(row.local.addr, IpAddress::Ipv6(_));
                if v6 == (family == Family::V6) {
                    rows.push(row);
                }
            }
        }
        rows
    }
}

/// `StreamRow`s become table rows; `owned` says whether the socket's own
/// descriptor holds it (an accepted-ready connection does not yet).
pub(crate) fn stream_row(local: IpEndpoint, remote: Option<IpEndpoint>, state: State, send_queue: usize, receive_queue: usize, owned: bool) -> StreamRow {
    StreamRow { row: TableRow { socket: None, local, remote, state: linux_tcp_state(state), send_queue, receive_queue }, owned }
}

/// The 16 bytes of `address` as an IPv6 address (IPv4 mapped).
fn v6_octets(address: IpAddress) -> [u8; 16] {
    match address {
        IpAddress::Ipv6(address) => address.octets(),
        IpAddress::Ipv4(address) => address.to_ipv6_mapped().octets(),
    }
}

fn v4_octets(address: IpAddress) -> [u8; 4] {
    match address {
        IpAddress::Ipv4(address) => address.octets(),
        IpAddress::Ipv6(address) => address.to_ipv4_mapped().map_or([0; 4], |address| address.octets()),
    }
}

/// `address` as Linux prints it: each word in network order read as a
/// little-endian number, in hexadecimal.
fn write_address(text: &mut String, family: Family, address: IpAddress) {
    let words: Vec<[u8; 4]> = match family {
        Family::V4 => alloc::vec![v4_octets(address)],
        Family::V6 => v6_octets(address).chunks_exact(4).map(|word| [word[0], word[1], word[2], word[3]]).collect(),
    };
    for word in words {
        let _ = write!(text, "{:08X}", u32::from_le_bytes(word));
    }
}

fn write_endpoint(text: &mut String, family: Family, endpoint: Option<IpEndpoint>) {
    let endpoint = endpoint.unwrap_or(IpEndpoint::new(family.any(), 0));
    write_address(text, family, endpoint.addr);
    let _ = write!(text, ":{:04X}", endpoint.port);
}

/// The whole file: Linux's header, then one line per row. `inode_of`
/// gives a socket's inode number (what `/proc/PID/fd` links name).
pub fn proc_text(rows: &[TableRow], family: Family, kind: SocketKind, inode_of: &dyn Fn(SocketId) -> u64) -> String {
    let udp = kind == SocketKind::Datagram;
    let mut text = String::new();
    // IPv4 lines are padded to a fixed width (TCP 149, UDP 127); IPv6's are not.
    let width = match (family, udp) {
        (Family::V4, false) => Some(149),
        (Family::V4, true) => Some(127),
        (Family::V6, _) => None,
    };
    let header = match family {
        Family::V4 => "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
        Family::V6 => "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
    };
    let header_udp = if udp && family == Family::V4 { " " } else { "" };
    let start = text.len();
    let _ = write!(text, "{header_udp}{header}{}", if udp { " ref pointer drops" } else { "" });
    end_line(&mut text, start, width);
    for (number, row) in rows.iter().enumerate() {
        let start = text.len();
        if udp {
            let _ = write!(text, "{number:5}: ");
        } else {
            let _ = write!(text, "{number:4}: ");
        }
        write_endpoint(&mut text, family, Some(row.local));
        text.push(' ');
        write_endpoint(&mut text, family, row.remote);
        let inode = row.socket.map_or(0, inode_of);
        let _ = write!(text, " {:02X} {:08X}:{:08X} 00:00000000 00000000 {:5} {:8} {inode} 2 0000000000000000", row.state, row.send_queue, row.receive_queue, 0, 0);
        if udp {
            text.push_str(" 0");
        } else {
            text.push_str(" 20 4 0 10 -1");
        }
        end_line(&mut text, start, width);
    }
    text
}

/// Pads the line begun at `start` with spaces to `width` (when given) and ends it.
fn end_line(text: &mut String, start: usize, width: Option<usize>) {
    if let Some(width) = width {
        while text.len() - start < width {
            text.push(' ');
        }
    }
    text.push('\n');
}
