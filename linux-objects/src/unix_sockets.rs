//! Unix-domain socket pairs made by `socketpair(AF_UNIX, …)`: two
//! connected ends, each reading what the other writes, over two pipes
//! (one each way) with pipe semantics — a read waits for data and sees
//! end of file once the peer has closed or shut down writing; a write
//! waits for room and is `EPIPE` once the peer can no longer read.
//! `shutdown` closes one direction early. `SOCK_STREAM` pairs carry
//! bytes; `SOCK_DGRAM` and `SOCK_SEQPACKET` pairs carry records, kept
//! whole (the pipes' packet mode). Descriptors and credentials travel
//! with records (`descriptor_passing.rs`, `pipes::Attached`). Named
//! sockets are in `named_sockets.rs`.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::pipes::Pipe;

/// What a socket carries (`SOCK_*`, as `SO_TYPE` gives it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SocketKind {
    Stream = 1,
    Datagram = 2,
    SeqPacket = 5,
}

impl SocketKind {
    /// Whether records are kept whole.
    pub fn keeps_records(self) -> bool {
        self != SocketKind::Stream
    }
}

/// One end of a connected pair.
pub struct SocketEnd {
    /// What it carries.
    pub kind: SocketKind,
    /// What the peer writes, read here.
    incoming: Arc<Pipe>,
    /// What this end writes, read by the peer.
    outgoing: Arc<Pipe>,
    /// Reading was shut down (`SHUT_RD`).
    read_shut: AtomicBool,
    /// Writing was shut down (`SHUT_WR`).
    write_shut: AtomicBool,
}

/// `shutdown`'s `how`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shutdown {
    Read,
    Write,
    Both,
}

impl SocketEnd {
    /// A connected pair of `kind`.
    pub fn pair(kind: SocketKind) -> (SocketEnd, SocketEnd) {
        let packets = kind.keeps_records();
        let (one_way, other_way) = (Arc::new(Pipe::for_socket(packets)), Arc::new(Pipe::for_socket(packets)));
        let end = |incoming: &Arc<Pipe>, outgoing: &Arc<Pipe>| SocketEnd {
            kind,
            incoming: incoming.clone(),
            outgoing: outgoing.clone(),
            read_shut: AtomicBool::new(false),
            write_shut: AtomicBool::new(false),
        };
        (end(&other_way, &one_way), end(&one_way, &other_way))
    }

    /// The pipe this end reads.
    pub fn incoming(&self) -> &Pipe {
        &self.incoming
    }

    /// The pipe this end reads, shared.
    pub fn incoming_pipe(&self) -> Arc<Pipe> {
        self.incoming.clone()
    }

    /// The pipe this end writes.
    pub fn outgoing(&self) -> &Pipe {
        &self.outgoing
    }

    /// Whether this end may still write (a write after `SHUT_WR` is EPIPE).
    pub fn can_write(&self) -> bool {
        !self.write_shut.load(Ordering::Relaxed)
    }

    /// Shuts one direction or both; each only once.
    pub fn shut_down(&self, how: Shutdown) {
        if matches!(how, Shutdown::Read | Shutdown::Both) && !self.read_shut.swap(true, Ordering::Relaxed) {
            self.incoming.end_closed(true);
        }
        if matches!(how, Shutdown::Write | Shutdown::Both) && !self.write_shut.swap(true, Ordering::Relaxed) {
            self.outgoing.end_closed(false);
        }
    }

    /// Whether a read would not wait, a write would not wait, and the
    /// peer has gone both ways (`POLLHUP`).
    pub fn readiness(&self) -> (bool, bool, bool) {
        let (readable, _) = self.incoming.readiness();
        let (_, writable) = self.outgoing.readiness();
        let read_shut = self.read_shut.load(Ordering::Relaxed);
        let hung_up = self.incoming.writers_gone() && self.outgoing.readers_gone();
        (readable || read_shut, writable && self.can_write(), hung_up)
    }
}

impl Drop for SocketEnd {
    fn drop(&mut self) {
        self.shut_down(Shutdown::Both);
    }
}
