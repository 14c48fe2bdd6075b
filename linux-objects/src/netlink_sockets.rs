//! Route netlink sockets (`AF_NETLINK`, `NETLINK_ROUTE`): a program sends
//! requests and reads the kernel's answers, datagram by datagram. The
//! answers are `net::netlink`'s (host-tested) over the network's
//! interfaces at the moment of the request; they wait in the socket's
//! queue until read.
//!
//! Each socket gets a port number (`nl_pid`) when it binds or first sends
//! (0 before, as `getsockname` shows on Linux): the process's id for its
//! first, then numbers counted down from `u32::MAX - 4095`, as Linux does;
//! `bind` may choose another free one. Multicast groups may be joined but
//! no event is announced (interface and address changes are not sent).
//! Must never hold its queue lock while it asks the network.

use alloc::collections::{BTreeSet, VecDeque};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use linux_abi::Errno;

/// The queue's and the port table's level (as a pipe's).
const NETLINK_LEVEL: Level = Level::new(8);
/// What a socket keeps unread before it drops answers (Linux's default
/// receive buffer); the next read then reports ENOBUFS, as Linux does.
pub const QUEUE_BYTES: usize = 212_992;
/// Where counted-down port numbers start (Linux: -4096).
const FIRST_COUNTED_PORT: u32 = u32::MAX - 4095;

static PORTS: KernelTicketLock<BTreeSet<u32>> = KernelTicketLock::new(NETLINK_LEVEL, BTreeSet::new());
static NEXT_PORT: AtomicU32 = AtomicU32::new(FIRST_COUNTED_PORT);

/// One route netlink socket.
pub struct NetlinkSocket {
    /// `SOCK_RAW` (true) or `SOCK_DGRAM`: the same socket, told apart only by `SO_TYPE`.
    pub raw: bool,
    /// The process that made it (its first port number, if free).
    process: u32,
    port: AtomicU32,
    groups: AtomicU32,
    queue: KernelTicketLock<VecDeque<Vec<u8>>>,
    /// Answers were dropped for want of room: the next read says so.
    overrun: AtomicBool,
}

impl NetlinkSocket {
    /// A socket of process `process`, without a port yet.
    pub fn new(process: u32, raw: bool) -> NetlinkSocket {
        NetlinkSocket {
            raw,
            process,
            port: AtomicU32::new(0),
            groups: AtomicU32::new(0),
            queue: KernelTicketLock::new(NETLINK_LEVEL, VecDeque::new()),
            overrun: AtomicBool::new(false),
        }
    }

    /// Its port number (`nl_pid`; 0 until it has one).
    pub fn port(&self) -> u32 {
        self.port.load(Ordering::Relaxed)
    }

    /// Gives it a port if it has none: the process's id when free, else
    /// the next counted-down number (EADDRINUSE if none is free).
    fn autobind(&self) -> Result<u32, Errno> {
        let mut ports = PORTS.lock();
        let current = self.port();
        if current != 0 {
            return Ok(current);
        }
        let port = if self.process != 0 && !ports.contains(&self.process) {
            self.process
        } else {
            (0..1 << 20).map(|_| NEXT_PORT.fetch_sub(1, Ordering::Relaxed)).find(|port| *port != 0 && !ports.contains(port)).ok_or(Errno::EADDRINUSE)?
        };
        ports.insert(port);
        self.port.store(port, Ordering::Relaxed);
        Ok(port)
    }

    /// The multicast groups it joined (`nl_groups`).
    pub fn groups(&self) -> u32 {
        self.groups.load(Ordering::Relaxed)
    }

    /// `bind`: takes port `port` (0 or its own: keeps its own; another:
    /// EADDRINUSE when taken) and joins `groups`.
    pub fn bind(&self, port: u32, groups: u32) -> Result<(), Errno> {
        if port == 0 {
            self.autobind()?;
        } else {
            let mut ports = PORTS.lock();
            let current = self.port();
            if port != current {
                // Linux: a socket that has a port keeps it (EINVAL).
                if current != 0 {
                    return Err(Errno::EINVAL);
                }
                if ports.contains(&port) {
                    return Err(Errno::EADDRINUSE);
                }
                ports.insert(port);
                self.port.store(port, Ordering::Relaxed);
            }
        }
        self.groups.store(groups, Ordering::Relaxed);
        Ok(())
    }

    /// Takes one request datagram and queues the answers (the socket
    /// gets its port first, if it has none).
    pub fn request(&self, bytes: &[u8]) -> Result<(), Errno> {
        let port = self.autobind()?;
        let interfaces = crate::inet_sockets::look(|network| Ok(network.interfaces())).unwrap_or_default();
        let answers = net::netlink::answer(bytes, port, &interfaces);
        if answers.is_empty() {
            return Ok(());
        }
        {
            let mut queue = self.queue.lock();
            let mut held: usize = queue.iter().map(Vec::len).sum();
            for answer in answers {
                if held + answer.len() > QUEUE_BYTES || queue.try_reserve(1).is_err() {
                    self.overrun.store(true, Ordering::Relaxed);
                    break;
                }
                held += answer.len();
                queue.push_back(answer);
            }
        }
        crate::poll_wakeups::changed();
        Ok(())
    }

    /// The next answer datagram (left in place with `peek`); `None` when
    /// none waits; ENOBUFS once after answers were dropped.
    pub fn take(&self, peek: bool) -> Result<Option<Vec<u8>>, Errno> {
        if self.overrun.swap(false, Ordering::Relaxed) {
            return Err(Errno::ENOBUFS);
        }
        let mut queue = self.queue.lock();
        Ok(if peek { queue.front().cloned() } else { queue.pop_front() })
    }

    /// Readable (an answer waits), writable (always), hung up (never).
    pub fn readiness(&self) -> (bool, bool, bool) {
        (!self.queue.lock().is_empty() || self.overrun.load(Ordering::Relaxed), true, false)
    }
}

impl Drop for NetlinkSocket {
    fn drop(&mut self) {
        let port = self.port();
        if port != 0 {
            PORTS.lock().remove(&port);
        }
    }
}
