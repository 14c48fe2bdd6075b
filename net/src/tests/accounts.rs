//! Socket buffers charged to their owners: a spent quota refuses the one
//! connection that needs more (ENOBUFS), a listener's pool and its
//! connections are its owner's, other owners go on, and every charge comes
//! back once its socket is gone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{local, network, settle};
use crate::{BufferAccount, Errno, Family, Network, Owner, SocketId, SocketKind};

/// Quotas in bytes per owner (no entry: unlimited) and what is charged.
#[derive(Default)]
struct Ledger {
    quotas: BTreeMap<Owner, usize>,
    charged: BTreeMap<Owner, usize>,
}

#[derive(Clone, Default)]
struct SharedLedger(Arc<Mutex<Ledger>>);

impl BufferAccount for SharedLedger {
    fn take(&mut self, owner: Owner, bytes: usize) -> bool {
        let mut ledger = self.0.lock().unwrap();
        let charged = ledger.charged.get(&owner).copied().unwrap_or(0);
        if ledger.quotas.get(&owner).is_some_and(|quota| charged + bytes > *quota) {
            return false;
        }
        ledger.charged.insert(owner, charged + bytes);
        true
    }

    fn give_back(&mut self, owner: Owner, bytes: usize) {
        let mut ledger = self.0.lock().unwrap();
        let charged = ledger.charged.entry(owner).or_default();
        assert!(*charged >= bytes, "{owner} gave back more than it was charged");
        *charged -= bytes;
    }
}

impl SharedLedger {
    fn charged(&self, owner: Owner) -> usize {
        self.0.lock().unwrap().charged.get(&owner).copied().unwrap_or(0)
    }
}

const TCP: usize = crate::stream::TCP_SOCKET_BYTES;
const SERVER: Owner = 1;
const CLIENT: Owner = 2;
const OTHER: Owner = 3;

fn accounted(quotas: &[(Owner, usize)]) -> (Network, SharedLedger) {
    let ledger = SharedLedger::default();
    ledger.0.lock().unwrap().quotas = quotas.iter().copied().collect();
    let mut network = network();
    network.set_account(std::boxed::Box::new(ledger.clone()));
    (network, ledger)
}

fn listener(network: &mut Network, owner: Owner, port: u16, backlog: usize) -> SocketId {
    let listener = network.open_for(Family::V4, SocketKind::Stream, owner).unwrap();
    network.bind(listener, local(port)).unwrap();
    network.listen(listener, backlog).unwrap();
    settle(network);
    listener
}

#[test]
fn a_spent_quota_refuses_the_connection_that_needs_more_and_closing_gives_it_back() {
    let (mut network, ledger) = accounted(&[(CLIENT, 3 * TCP)]);
    let server = listener(&mut network, SERVER, 7200, 16);
    let mut pairs = std::vec::Vec::new();
    for _ in 0..3 {
        let client = network.open_for(Family::V4, SocketKind::Stream, CLIENT).unwrap();
        network.connect(client, local(7200)).unwrap();
        settle(&mut network);
        pairs.push((client, network.accept(server).expect("accepted")));
    }
    assert_eq!(ledger.charged(CLIENT), 3 * TCP);
    let fourth = network.open_for(Family::V4, SocketKind::Stream, CLIENT).unwrap();
    assert_eq!(network.connect(fourth, local(7200)), Err(Errno::ENOBUFS));
    // Another owner is not held back by the spent one.
    let other = network.open_for(Family::V4, SocketKind::Stream, OTHER).unwrap();
    assert_eq!(network.connect(other, local(7200)), Ok(()));
    settle(&mut network);
    assert_eq!(network.connect_outcome(other), Ok(true));
    // Both ends closed: the connection's buffers go, its charge comes back.
    let (client, accepted) = pairs.pop().unwrap();
    network.close(client);
    network.close(accepted);
    for _ in 0..4 {
        settle(&mut network);
    }
    assert_eq!(ledger.charged(CLIENT), 2 * TCP);
    assert_eq!(network.connect(fourth, local(7200)), Ok(()));
}

#[test]
fn a_listeners_pool_and_its_connections_are_its_owners_and_stay_within_its_quota() {
    let (mut network, ledger) = accounted(&[(SERVER, 6 * TCP)]);
    let server = listener(&mut network, SERVER, 7201, 64);
    let mut established = 0;
    for _ in 0..20 {
        let client = network.open_for(Family::V4, SocketKind::Stream, CLIENT).unwrap();
        network.connect(client, local(7201)).unwrap();
        settle(&mut network);
        settle(&mut network);
        established += usize::from(network.connect_outcome(client) == Ok(true));
        assert!(ledger.charged(SERVER) <= 6 * TCP, "the listener's owner charged past its quota");
    }
    let mut accepted = 0;
    while network.accept(server).is_ok() {
        accepted += 1;
    }
    assert!(accepted <= 6 && accepted == established, "{accepted} accepted, {established} established");
    assert!(accepted >= 1);
}

#[test]
fn every_charge_comes_back_once_every_socket_is_gone() {
    let (mut network, ledger) = accounted(&[]);
    let server = listener(&mut network, SERVER, 7202, 8);
    let mut open = std::vec::Vec::new();
    for index in 0..10 {
        let client = network.open_for(Family::V4, SocketKind::Stream, CLIENT).unwrap();
        network.connect(client, local(7202)).unwrap();
        settle(&mut network);
        if let Ok(accepted) = network.accept(server) {
            network.send(client, b"some bytes", None).unwrap();
            open.push(accepted);
        }
        // Every other client leaves with unread data (a reset), the rest gracefully.
        if index % 2 == 0 {
            network.close(client);
        } else {
            open.push(client);
        }
        settle(&mut network);
    }
    let datagram = network.open_for(Family::V4, SocketKind::Datagram, OTHER).unwrap();
    network.bind(datagram, local(7203)).unwrap();
    network.bound(datagram).unwrap();
    assert!(ledger.charged(OTHER) > 0);
    for id in open.into_iter().chain([server, datagram]) {
        network.close(id);
    }
    for _ in 0..8 {
        settle(&mut network);
    }
    for owner in [SERVER, CLIENT, OTHER] {
        assert_eq!(ledger.charged(owner), 0, "owner {owner} still charged");
    }
}
