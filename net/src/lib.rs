//! TCP/IP with Linux's socket semantics, as host-tested logic.
//!
//! **Provides** [`Network`]: the interfaces (a loopback lane with
//! 127.0.0.1/8 and ::1, and a NIC's lane whose frames come and go through
//! [`FrameQueue`]s) and the Internet sockets on them, stream and
//! datagram, with the rules Linux programs rely on: `bind` conflicts and
//! `SO_REUSEADDR`/`SO_REUSEPORT`, ephemeral ports, a listen backlog,
//! non-blocking `connect`, half-close, `ECONNREFUSED`/`ECONNRESET`/`EPIPE`,
//! `MSG_PEEK`, readiness for `poll`/`epoll`. [`addresses`] reads and
//! writes `sockaddr_in`/`sockaddr_in6`.
//!
//! **Relies on** `smoltcp` (pinned) for the protocols themselves — IPv4,
//! IPv6, TCP, UDP, ICMP, ARP/NDP, DHCP — a well-kept `no_std` stack that
//! drops malformed packets instead of panicking. Its TCP socket serves one
//! connection; a listening socket here is a pool of them (docs/network.md).
//! Time comes from the caller ([`Network::poll`] takes the uptime).
//!
//! **Must never** block, touch hardware, or panic on anything a packet or
//! a system call's arguments can say: every failure is an [`Errno`]. The
//! kernel holds the whole [`Network`] under one lock and waits outside it.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod addresses;
mod accounts;
mod frame_queue;
mod ip_marks;
mod lanes;
mod network;
mod ports;
mod stream;
mod datagram;
mod demux;
mod ethernet;
pub mod netlink;
mod socket_table;
#[cfg(test)]
mod tests;

pub use accounts::{BufferAccount, Owner};
pub use ethernet::DhcpNews;
pub use socket_table::{proc_text, TableRow};
pub use frame_queue::FrameQueue;
pub use ip_marks::{HeaderMarks, IpMarks};
pub use datagram::Arrival;
pub use linux_abi::Errno;
pub use addresses::{Family, SocketAddress};
pub use stream::BUFFER_BYTES as STREAM_BUFFER_BYTES;
pub use network::{DatagramProtocol, Network, Options, Readiness, ReceiveOptions, Received, SendControl, Shutdown, SocketId, SocketKind};
pub use smoltcp::wire::{IpAddress, IpEndpoint, Ipv4Address, Ipv6Address};
