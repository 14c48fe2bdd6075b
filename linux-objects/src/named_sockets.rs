//! Unix-domain sockets made by `socket(AF_UNIX, …)`: one object through
//! its life — fresh (maybe bound to a name), listening (a queue of
//! connections waiting for `accept`), or connected (a [`SocketEnd`] of a
//! pair) — and the names sockets are bound to: a socket file in the tree
//! (its inode) or an abstract name (`sun_path` starting with a NUL byte).
//! `connect` finds the listener by name, makes a pair, keeps one end and
//! queues the other for the listener's `accept`. Pairs from `socketpair`
//! are born connected.
//!
//! A datagram socket made by `socket` has a queue of its own (its inbox):
//! others send to its name (`sendto`), or `connect` to it and `send`; each
//! datagram carries the sender's name. It also keeps what a socket keeps
//! whatever its state: `SO_RCVTIMEO`/`SO_SNDTIMEO` and `SO_PASSCRED`
//! (inherited by the sockets a listener accepts, as on Linux).
//!
//! Lock order: a socket's lock may be held while taking the name table
//! ([`NAMES_LEVEL`]); never two sockets' locks at once (`connect` marks
//! its socket `Connecting`, lets go, then queues on the listener); waits
//! on a socket's condition variable hold nothing else.

use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking};
use vfs::InodeId;

use crate::pipes::Pipe;
use crate::socket_waits::{Timeout, TimeoutCell};
use crate::unix_sockets::{SocketEnd, SocketKind};

/// A socket's lock (above the name table's and the pipes' locks).
const SOCKET_LEVEL: Level = Level::new(9);
/// The name table's lock, taken alone or under a socket's.
const NAMES_LEVEL: Level = Level::new(5);
/// The most connections one listener queues (Linux's `somaxconn`).
pub const MOST_PENDING: usize = 4096;

/// What a socket is bound to.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SocketName {
    /// A socket file: its inode and the path it was bound with (what
    /// `getsockname` gives back).
    Path(InodeId, Vec<u8>),
    /// An abstract name: the bytes after the leading NUL.
    Abstract(Vec<u8>),
}

impl SocketName {
    fn same_place(&self, other: &SocketName) -> bool {
        match (self, other) {
            (SocketName::Path(one, _), SocketName::Path(other, _)) => one == other,
            (SocketName::Abstract(one), SocketName::Abstract(other)) => one == other,
            _ => false,
        }
    }
}

/// A connection waiting for `accept`: the listener's end, and the name
/// of the socket that connected (if it was bound).
struct Pending {
    end: SocketEnd,
    peer: Option<SocketName>,
}

enum State {
    Fresh,
    /// A `connect` is under way (its thread holds no lock meanwhile).
    Connecting,
    Listening { backlog: usize, pending: VecDeque<Pending> },
    Connected { end: Arc<SocketEnd>, peer: Option<SocketName> },
    /// A datagram socket's default destination (`connect`).
    Addressed { peer: Weak<UnixSocket>, name: SocketName },
}

struct Inner {
    state: State,
    name: Option<SocketName>,
}

/// One Unix-domain socket.
pub struct UnixSocket {
    /// What it carries.
    pub kind: SocketKind,
    inner: KernelTicketLock<Inner>,
    changed: Condvar<KernelBlocking>,
    /// A datagram socket's own queue (not one of a `socketpair`).
    inbox: Option<Arc<Pipe>>,
    /// `SO_RCVTIMEO` (also bounds `accept`).
    pub receive_timeout: TimeoutCell,
    /// `SO_SNDTIMEO` (also bounds `connect`).
    pub send_timeout: TimeoutCell,
    /// `SO_PASSCRED`.
    pass_credentials: AtomicBool,
}

static NAMES: KernelTicketLock<Vec<(SocketName, Weak<UnixSocket>)>> = KernelTicketLock::new(NAMES_LEVEL, Vec::new());

impl UnixSocket {
    /// A fresh, unnamed, unconnected socket of `kind` (a datagram socket
    /// with its inbox).
    pub fn new(kind: SocketKind) -> UnixSocket {
        let mut socket = Self::with_state(kind, State::Fresh);
        if kind == SocketKind::Datagram {
            socket.inbox = Some(Arc::new(Pipe::for_socket(true)));
        }
        socket
    }

    /// One end of a `socketpair`, already connected.
    pub fn connected(end: SocketEnd) -> UnixSocket {
        Self::with_state(end.kind, State::Connected { end: Arc::new(end), peer: None })
    }

    fn with_state(kind: SocketKind, state: State) -> UnixSocket {
        UnixSocket {
            kind,
            inner: KernelTicketLock::new(SOCKET_LEVEL, Inner { state, name: None }),
            changed: Condvar::new(),
            inbox: None,
            receive_timeout: TimeoutCell::new(Timeout::Forever),
            send_timeout: TimeoutCell::new(Timeout::Forever),
            pass_credentials: AtomicBool::new(false),
        }
    }

    /// Whether it asked for its senders' credentials (`SO_PASSCRED`).
    pub fn passes_credentials(&self) -> bool {
        self.pass_credentials.load(Ordering::Relaxed)
    }

    /// `SO_PASSCRED`: from now on senders attach their credentials to what
    /// they send here.
    pub fn set_pass_credentials(&self, on: bool) {
        let inner = self.inner.lock();
        self.pass_credentials.store(on, Ordering::Relaxed);
        if let Ok(pipe) = self.reading_pipe_of(&inner.state) {
            pipe.set_wants_credentials(on);
        }
    }

    /// The pipe a read takes from: a connected end's, or a datagram
    /// socket's inbox (ENOTCONN otherwise; EINVAL for a stream socket, as
    /// Linux's `read` says).
    pub fn reading_pipe(&self) -> Result<Arc<Pipe>, Errno> {
        self.reading_pipe_of(&self.inner.lock().state)
    }

    fn reading_pipe_of(&self, state: &State) -> Result<Arc<Pipe>, Errno> {
        match (state, &self.inbox) {
            (State::Connected { end, .. }, _) => Ok(end.incoming_pipe()),
            (_, Some(inbox)) => Ok(inbox.clone()),
            _ if self.kind == SocketKind::Stream => Err(Errno::EINVAL),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// Whether it is a datagram socket with an inbox (sends go by name).
    pub fn is_addressable(&self) -> bool {
        self.inbox.is_some()
    }

    /// Its name, if bound.
    pub fn name(&self) -> Option<SocketName> {
        self.inner.lock().name.clone()
    }

    /// Where a datagram goes: the inbox of the socket bound to `to`, or of
    /// the socket it is connected to. ECONNREFUSED when nobody is there
    /// any more, EPROTOTYPE for a socket of another kind, ENOTCONN with
    /// neither a name nor a peer.
    pub fn datagram_destination(&self, to: Option<&SocketName>) -> Result<Arc<Pipe>, Errno> {
        let target = match to {
            Some(name) => find_bound(name),
            None => match &self.inner.lock().state {
                State::Addressed { peer, .. } => peer.upgrade(),
                _ => return Err(Errno::ENOTCONN),
            },
        }
        .ok_or(Errno::ECONNREFUSED)?;
        if target.kind != self.kind {
            return Err(Errno::EPROTOTYPE);
        }
        target.inbox.clone().ok_or(Errno::ECONNREFUSED)
    }

    /// A connection made here gets this socket's `SO_PASSCRED`.
    fn connected_end(&self, end: SocketEnd) -> Arc<SocketEnd> {
        end.incoming().set_wants_credentials(self.passes_credentials());
        Arc::new(end)
    }

    /// Its connected end (ENOTCONN before `connect`, on a listener or a
    /// datagram socket with an inbox).
    pub fn end(&self) -> Result<Arc<SocketEnd>, Errno> {
        match &self.inner.lock().state {
            State::Connected { end, .. } => Ok(end.clone()),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// Its name and its peer's (`getsockname`, `getpeername`; ENOTCONN
    /// for the peer of an unconnected socket).
    pub fn names(&self) -> (Option<SocketName>, Result<Option<SocketName>, Errno>) {
        let inner = self.inner.lock();
        let peer = match &inner.state {
            State::Connected { peer, .. } => Ok(peer.clone()),
            State::Addressed { name, .. } => Ok(Some(name.clone())),
            _ => Err(Errno::ENOTCONN),
        };
        (inner.name.clone(), peer)
    }

    /// Binds it to `name` (EINVAL when already bound, EADDRINUSE when the
    /// name is taken by a live socket). A path's socket file must have
    /// been made by the caller first.
    pub fn bind(self: &Arc<Self>, name: SocketName) -> Result<(), Errno> {
        let mut inner = self.inner.lock();
        if inner.name.is_some() {
            return Err(Errno::EINVAL);
        }
        let mut names = NAMES.lock();
        names.retain(|(_, socket)| socket.strong_count() > 0);
        if names.iter().any(|(taken, _)| taken.same_place(&name)) {
            return Err(Errno::EADDRINUSE);
        }
        names.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        names.push((name.clone(), Arc::downgrade(self)));
        inner.name = Some(name);
        Ok(())
    }

    /// Starts listening with room for `backlog` waiting connections (a
    /// listener only changes its backlog). EINVAL when not bound (Linux
    /// would bind an abstract name: not here) or connected.
    pub fn listen(&self, backlog: usize) -> Result<(), Errno> {
        if self.kind == SocketKind::Datagram {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut inner = self.inner.lock();
        if inner.name.is_none() {
            return Err(Errno::EINVAL);
        }
        let backlog = backlog.clamp(1, MOST_PENDING);
        match &mut inner.state {
            State::Fresh => inner.state = State::Listening { backlog, pending: VecDeque::new() },
            State::Listening { backlog: current, .. } => *current = backlog,
            State::Connected { .. } | State::Connecting | State::Addressed { .. } => return Err(Errno::EINVAL),
        }
        Ok(())
    }

    /// Connects to the listener bound to `name`: ECONNREFUSED when none
    /// listens there, EPROTOTYPE for another kind, EISCONN when already
    /// connected; waits while its queue is full (EAGAIN when
    /// `nonblocking`, ERESTARTSYS when `interrupted`).
    pub fn connect(&self, name: &SocketName, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<(), Errno> {
        let listener = find_bound(name).ok_or(Errno::ECONNREFUSED)?;
        if listener.kind != self.kind {
            return Err(Errno::EPROTOTYPE);
        }
        if self.is_addressable() {
            // A datagram socket only takes a default destination (again and again).
            self.inner.lock().state = State::Addressed { peer: Arc::downgrade(&listener), name: name.clone() };
            return Ok(());
        }
        if core::ptr::eq(Arc::as_ptr(&listener), self) {
            return Err(Errno::ECONNREFUSED);
        }
        let my_name = {
            let mut inner = self.inner.lock();
            match inner.state {
                State::Connected { .. } | State::Addressed { .. } => return Err(Errno::EISCONN),
                State::Listening { .. } => return Err(Errno::EINVAL),
                State::Connecting => return Err(Errno::EALREADY),
                State::Fresh => inner.state = State::Connecting,
            }
            inner.name.clone()
        };
        let (mine, theirs) = SocketEnd::pair(self.kind);
        let queued = listener.queue(Pending { end: theirs, peer: my_name }, nonblocking, interrupted);
        let mut inner = self.inner.lock();
        match queued {
            Ok(listener_name) => {
                inner.state = State::Connected { end: self.connected_end(mine), peer: listener_name };
                Ok(())
            }
            Err(errno) => {
                inner.state = State::Fresh;
                Err(errno)
            }
        }
    }

    /// Queues `connection` on this listener (waiting for room); its name.
    fn queue(&self, connection: Pending, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<Option<SocketName>, Errno> {
        let mut inner = self.inner.lock();
        loop {
            let name = inner.name.clone();
            let State::Listening { backlog, pending } = &mut inner.state else { return Err(Errno::ECONNREFUSED) };
            if pending.len() < *backlog {
                pending.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                pending.push_back(connection);
                drop(inner);
                self.changed.broadcast();
                crate::poll_wakeups::changed();
                return Ok(name);
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            inner = self.changed.wait_interruptible(inner, &self.inner, interrupted).0;
        }
    }

    /// The next connection a listener has, as a connected socket named as
    /// the listener with the connecting socket's name as its peer; waits
    /// for one unless `nonblocking` (EAGAIN). EINVAL when not listening.
    pub fn accept(&self, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<UnixSocket, Errno> {
        let mut inner = self.inner.lock();
        loop {
            let name = inner.name.clone();
            let State::Listening { pending, .. } = &mut inner.state else { return Err(Errno::EINVAL) };
            if let Some(connection) = pending.pop_front() {
                drop(inner);
                // Room in the queue for a waiting connect.
                self.changed.broadcast();
                let accepted = UnixSocket::with_state(self.kind, State::Connected { end: self.connected_end(connection.end), peer: connection.peer });
                accepted.inner.lock().name = name;
                accepted.pass_credentials.store(self.passes_credentials(), Ordering::Relaxed);
                accepted.receive_timeout.set(self.receive_timeout.get());
                accepted.send_timeout.set(self.send_timeout.get());
                return Ok(accepted);
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            inner = self.changed.wait_interruptible(inner, &self.inner, interrupted).0;
        }
    }

    /// `shutdown`: ENOTCONN unless connected.
    pub fn shut_down(&self, how: crate::unix_sockets::Shutdown) -> Result<(), Errno> {
        self.end()?.shut_down(how);
        Ok(())
    }

    /// Whether a read (or an `accept`) would not wait, a write would not
    /// wait, and the peer has gone both ways.
    pub fn readiness(&self) -> (bool, bool, bool) {
        let inner = self.inner.lock();
        match &inner.state {
            State::Connected { end, .. } => end.readiness(),
            State::Listening { pending, .. } => (!pending.is_empty(), false, false),
            State::Fresh | State::Addressed { .. } if self.inbox.is_some() => (self.inbox.as_ref().is_some_and(|inbox| inbox.readiness().0), true, false),
            // An unconnected stream socket: nothing to read or write, hung up.
            State::Fresh | State::Connecting | State::Addressed { .. } => (false, false, true),
        }
    }

    /// Whether it is listening (`SO_ACCEPTCONN`).
    pub fn is_listening(&self) -> bool {
        matches!(self.inner.lock().state, State::Listening { .. })
    }
}

/// The live socket bound to `name`.
fn find_bound(name: &SocketName) -> Option<Arc<UnixSocket>> {
    let mut names = NAMES.lock();
    names.retain(|(_, socket)| socket.strong_count() > 0);
    names.iter().find(|(bound, _)| bound.same_place(name)).and_then(|(_, socket)| socket.upgrade())
}
