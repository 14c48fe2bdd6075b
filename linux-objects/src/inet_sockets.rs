//! Internet sockets (`AF_INET`, `AF_INET6`; TCP and UDP): the `net`
//! crate's [`Network`] under one lock, and the waiting its operations
//! leave to the kernel.
//!
//! Every operation runs under the lock and ends with a poll of the
//! network (on the loopback lane a segment sent is received at once);
//! then pollers are woken ([`crate::poll_wakeups`]), which is also how a
//! blocked socket call learns that it may try again. A blocked call also
//! wakes for the network's next timer (retransmission, keep-alive), so
//! timers run while anyone waits.
//!
//! With a network card, a thread of its own ([`start`]) moves the card's
//! frames in and out and runs the timers; a socket call sends its own
//! frames to the card as it leaves the lock.
//!
//! **Lock order**: the network's lock is a spinlock at [`NETWORK_LEVEL`],
//! taken alone (never around the tree or a pipe); nothing under it sleeps.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use containers::ContainerId;
use machine::set_once::SetOnce;
use net::{Errno, Family, Network, SocketId, SocketKind};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use crate::poll_wakeups::Registration;
use crate::socket_waits::{Patience, Timeout, TimeoutCell};

/// Taken alone, outside the pollers' lock (5).
const NETWORK_LEVEL: Level = Level::new(8);
/// The longest a blocked call sleeps before it looks again (nanoseconds).
const LONGEST_WAIT: u64 = 100_000_000;

static NETWORK: KernelTicketLock<Option<Network>> = KernelTicketLock::new(NETWORK_LEVEL, None);

fn uptime() -> u64 {
    machine::timer::uptime_nanoseconds()
}

/// The network, its socket buffers charged to the kernel's containers.
fn new_network() -> Network {
    let mut network = Network::new(uptime());
    network.set_account(Box::new(ContainerAccount));
    network
}

/// Socket buffers charged to containers, in pages (the network's owner
/// is a container's id): a socket's are its maker's container's, a
/// listener's pool and the connections it accepts the listener's.
struct ContainerAccount;

impl net::BufferAccount for ContainerAccount {
    fn take(&mut self, owner: net::Owner, bytes: usize) -> bool {
        kernel_objects::kernel_containers::charge(container_of(owner), pages(bytes))
    }

    fn give_back(&mut self, owner: net::Owner, bytes: usize) {
        kernel_objects::kernel_containers::release(container_of(owner), pages(bytes));
    }
}

fn pages(bytes: usize) -> u64 {
    bytes.div_ceil(kernel_objects::kernel_memory::PAGE_BYTES) as u64
}

/// The network's name for `container`.
fn owner_of(container: ContainerId) -> net::Owner {
    (u64::from(container.index()) << 32) | u64::from(container.generation())
}

fn container_of(owner: net::Owner) -> ContainerId {
    ContainerId::from_parts((owner >> 32) as u32, owner as u32)
}

/// What an operation that succeeds may do for pollers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// It may make something ready (a send, a connect, a close, an
    /// option): pollers are woken.
    MayReady,
    /// It only takes what was there (a receive): nothing becomes ready by
    /// it, so pollers are woken only if packets moved in the poll after it
    /// (a stream's window update does, and reaches the peer that way).
    Takes,
}

/// Runs `operation` on the network, then moves its packets; wakes
/// pollers unless nothing changed (an operation that would block changes
/// nothing by itself).
pub fn with<R>(operation: impl FnOnce(&mut Network) -> Result<R, Errno>) -> Result<R, Errno> {
    with_effect(Effect::MayReady, operation)
}

/// [`with`] for an operation whose success has `effect`.
pub fn with_effect<R>(effect: Effect, operation: impl FnOnce(&mut Network) -> Result<R, Errno>) -> Result<R, Errno> {
    let mut outgoing = Vec::new();
    let (result, changed) = {
        let mut slot = NETWORK.lock();
        let network = slot.get_or_insert_with(new_network);
        let result = operation(network);
        // An operation that would block changed nothing: no packet to
        // move unless some arrived (timers run when a waiter's sleep ends).
        let idle = result.as_ref().err() == Some(&Errno::EAGAIN) && !network.has_received();
        let changed = !idle && network.poll(uptime());
        network.take_outgoing(&mut outgoing);
        (result, changed)
    };
    transmit(&outgoing);
    let may_ready = effect == Effect::MayReady && result.as_ref().err() != Some(&Errno::EAGAIN);
    if changed || may_ready {
        crate::poll_wakeups::changed_in(crate::poll_wakeups::Source::Network);
    }
    result
}

/// Before the machine powers off: the frames already handed to the card
/// go out (waiting at most 200 ms of uptime).
pub fn flush_card() {
    if let Some(card) = drivers::network_card() {
        let deadline = uptime().saturating_add(200_000_000);
        card.flush_transmit(|| uptime() >= deadline);
    }
}

/// Hands `frames` to the network card (outside the network's lock).
fn transmit(frames: &[Vec<u8>]) {
    if let Some(card) = drivers::network_card() {
        for frame in frames {
            card.transmit(frame);
        }
    }
}

/// The network thread, once started.
static NETWORK_THREAD: SetOnce<Arc<sched::Thread>> = SetOnce::new();
/// Set by the card's interrupt, taken by the network thread.
static CARD_SIGNALLED: AtomicBool = AtomicBool::new(false);
/// The longest the network thread sleeps: DHCP renewals and timers of
/// sockets nobody waits on are looked at this often at least.
const NETWORK_THREAD_NAP: u64 = 1_000_000_000;

/// With a network card: its lane added (asking DHCP for an address) and
/// the thread that moves its frames started. Once, at boot.
pub fn start() -> Result<(), sched::SpawnError> {
    let Some(card) = drivers::network_card() else { return Ok(()) };
    let _ = with(|network| {
        network.add_ethernet(card.mac, usize::from(card.mtu));
        Ok(())
    });
    let thread = sched::spawn("net", serve_card)?;
    let _ = NETWORK_THREAD.set(Box::leak(Box::new(thread)));
    drivers::set_waker(card_signalled);
    Ok(())
}

/// The card's interrupt handler's call: wake the network thread.
fn card_signalled() {
    CARD_SIGNALLED.store(true, Ordering::Release);
    if let Some(thread) = NETWORK_THREAD.get() {
        sched::unpark(thread);
    }
}

/// The network thread: frames from the card into the network, the
/// network's timers run, its frames out to the card; then asleep until
/// the card signals or the next timer.
fn serve_card() {
    let Some(card) = drivers::network_card() else { return };
    let mut received = Vec::new();
    loop {
        CARD_SIGNALLED.store(false, Ordering::Release);
        card.take_received(&mut received);
        let frames = core::mem::take(&mut received);
        let mut news = None;
        let delay = with(|network| {
            for frame in frames {
                network.deliver(frame);
            }
            news = network.take_dhcp_news();
            Ok(network.poll_delay())
        })
        .ok()
        .flatten();
        if let Some(news) = news {
            report(&news);
        }
        let nap = delay.unwrap_or(NETWORK_THREAD_NAP).clamp(1, NETWORK_THREAD_NAP);
        sched::sleep_until(uptime().saturating_add(nap), || CARD_SIGNALLED.load(Ordering::Acquire));
    }
}

/// Logs what DHCP gave (`dmesg`; the console too unless booted quiet).
fn report(news: &net::DhcpNews) {
    use crate::kernel_log::note;
    match news {
        net::DhcpNews::Configured { address, router: Some(router), .. } => note(format_args!("eth0: {address} by DHCP, gateway {router}")),
        net::DhcpNews::Configured { address, router: None, .. } => note(format_args!("eth0: {address} by DHCP")),
        net::DhcpNews::Deconfigured => note(format_args!("eth0: DHCP lease lost")),
    }
}

/// Looks at the network without moving packets (readiness for `poll`).
pub fn look<R>(question: impl FnOnce(&mut Network) -> Result<R, Errno>) -> Result<R, Errno> {
    let mut slot = NETWORK.lock();
    question(slot.get_or_insert_with(new_network))
}

/// The inode number Internet socket `id` shows (`fstat`, `/proc/PID/fd`
/// links, `/proc/net/tcp`'s inode column, which `netstat -p` matches).
pub fn inode_number(id: SocketId) -> u64 {
    0x10_0000 + id.number() as u64
}

/// `/proc/net`'s socket tables: `tcp`, `tcp6`, `udp`, `udp6` and their text.
pub fn proc_net_files() -> Vec<(&'static str, alloc::string::String)> {
    let tables = [("tcp", Family::V4, SocketKind::Stream), ("tcp6", Family::V6, SocketKind::Stream), ("udp", Family::V4, SocketKind::Datagram), ("udp6", Family::V6, SocketKind::Datagram)];
    // Rows copied under the lock, text written outside it.
    let rows = look(|network| Ok(tables.map(|(_, family, kind)| network.socket_table(family, kind)))).unwrap_or_default();
    tables.iter().zip(rows).map(|((name, family, kind), rows)| (*name, net::proc_text(&rows, *family, *kind, &inode_number))).collect()
}

/// Runs `operation` until it does not say EAGAIN: at once under
/// [`Patience::Never`], else waiting for a change in the network (or its
/// next timer) and giving EAGAIN when the patience runs out. A signal ends
/// the wait: restarted under `SA_RESTART` unless the socket has a timeout
/// (then EINTR, as Linux does).
pub fn wait<R>(patience: Patience, interrupted: &dyn Fn() -> bool, operation: impl FnMut(&mut Network) -> Result<R, Errno>) -> Result<R, Errno> {
    wait_with_effect(Effect::MayReady, patience, interrupted, operation)
}

/// [`wait`] for an operation whose success has `effect`.
pub fn wait_with_effect<R>(effect: Effect, patience: Patience, interrupted: &dyn Fn() -> bool, mut operation: impl FnMut(&mut Network) -> Result<R, Errno>) -> Result<R, Errno> {
    loop {
        let registration = Registration::only(crate::poll_wakeups::Source::Network);
        match with_effect(effect, &mut operation) {
            Err(Errno::EAGAIN) if patience != Patience::Never => {}
            other => return other,
        }
        if interrupted() {
            return Err(match patience {
                Patience::Until(_) => Errno::EINTR,
                _ => linux_abi::restart::ERESTARTSYS,
            });
        }
        let now = uptime();
        let delay = look(|network| Ok(network.poll_delay())).ok().flatten().unwrap_or(LONGEST_WAIT).clamp(1, LONGEST_WAIT);
        let mut until = now.saturating_add(delay);
        if let Patience::Until(deadline) = patience {
            if now >= deadline {
                return Err(Errno::EAGAIN);
            }
            until = until.min(deadline);
        }
        let woken = sched::sleep_until(until, || registration.changed() || interrupted());
        if woken == sched::Woken::Deadline {
            // A timer of the network's may be due: run it before trying again.
            let _ = with(|_| Ok(()));
        }
    }
}

/// An open Internet socket: the network's socket, closed when the last
/// descriptor goes.
pub struct InetSocket {
    /// The network's number for it.
    pub id: SocketId,
    /// `AF_INET` or `AF_INET6`.
    pub family: Family,
    /// Stream or datagram.
    pub kind: SocketKind,
    /// `SO_RCVTIMEO` (also bounds `accept`).
    pub receive_timeout: TimeoutCell,
    /// `SO_SNDTIMEO` (also bounds `connect`).
    pub send_timeout: TimeoutCell,
}

impl InetSocket {
    /// A new socket (ENOMEM when the table cannot grow).
    pub fn open(family: Family, kind: SocketKind) -> Result<InetSocket, Errno> {
        // Its buffers are charged to the caller's container.
        let owner = owner_of(sched::current().container());
        let id = with(|network| network.open_for(family, kind, owner))?;
        Ok(Self::fresh(id, family, kind))
    }

    /// A new datagram socket of `protocol` (UDP or UDP-Lite).
    pub fn open_datagram(family: Family, protocol: net::DatagramProtocol) -> Result<InetSocket, Errno> {
        let owner = owner_of(sched::current().container());
        let id = with(|network| network.open_datagram_for(family, protocol, owner))?;
        Ok(Self::fresh(id, family, SocketKind::Datagram))
    }

    /// The network's new socket `id`, with no timeouts.
    fn fresh(id: SocketId, family: Family, kind: SocketKind) -> InetSocket {
        InetSocket { id, family, kind, receive_timeout: TimeoutCell::new(Timeout::Forever), send_timeout: TimeoutCell::new(Timeout::Forever) }
    }

    /// The connection `id` this listener accepted: of its family and kind,
    /// with its timeouts (as Linux copies them).
    pub fn accepted(&self, id: SocketId) -> InetSocket {
        InetSocket {
            id,
            family: self.family,
            kind: self.kind,
            receive_timeout: TimeoutCell::new(self.receive_timeout.get()),
            send_timeout: TimeoutCell::new(self.send_timeout.get()),
        }
    }

    /// A count that moves with everything arriving or leaving (edge-triggered epoll).
    pub fn activity(&self) -> u64 {
        look(|network| Ok(network.activity(self.id))).unwrap_or(0)
    }

    /// Readable, writable, hung up (with an error counted as both).
    pub fn readiness(&self) -> (bool, bool, bool) {
        look(|network| network.readiness(self.id)).map_or((true, true, true), |ready| (ready.readable || ready.error, ready.writable || ready.error, ready.hangup))
    }
}

impl Drop for InetSocket {
    fn drop(&mut self) {
        let id = self.id;
        let _ = with(|network| {
            network.close(id);
            Ok(())
        });
    }
}
