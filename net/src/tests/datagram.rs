use super::{local, network, open, settle};
use crate::{Errno, SocketKind};

#[test]
fn a_datagram_arrives_whole_with_its_sender() {
    let mut network = network();
    let (server, client) = (open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram));
    network.bind(server, local(9000)).unwrap();
    network.bound(server).unwrap();
    assert_eq!(network.send(client, b"hello", Some(local(9000))), Ok(5));
    settle(&mut network);
    let mut buffer = [0u8; 3];
    let received = network.receive(server, &mut buffer, true).unwrap();
    assert_eq!((received.copied, received.length), (3, 5), "cut short, whole length told");
    assert_eq!(received.from, network.local_name(client).map(|name| crate::IpEndpoint::new(local(0).addr, name.port)).unwrap());
    let mut buffer = [0u8; 16];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(5), "peek left it");
    assert_eq!(network.receive(server, &mut buffer, false), Err(Errno::EAGAIN));
}

#[test]
fn a_connected_datagram_socket_hears_only_its_peer() {
    let mut network = network();
    let (server, peer, stranger) = (open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram));
    network.bind(server, local(9001)).unwrap();
    network.bind(peer, local(9002)).unwrap();
    network.connect_datagram(server, Some(local(9002))).unwrap();
    network.send(stranger, b"no", Some(local(9001))).unwrap();
    network.send(peer, b"yes", Some(local(9001))).unwrap();
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(3));
    assert_eq!(&buffer[..3], b"yes");
    assert_eq!(network.send(server, b"to peer", None), Ok(7));
    assert_eq!(network.peer_name(server), Ok(local(9002)));
}

#[test]
fn datagrams_without_a_destination_or_too_large_are_refused() {
    let mut network = network();
    let socket = open(&mut network, SocketKind::Datagram);
    assert_eq!(network.send(socket, b"x", None), Err(Errno::EDESTADDRREQ));
    let huge = std::vec![0u8; 70_000];
    assert_eq!(network.send(socket, &huge, Some(local(9003))), Err(Errno::EMSGSIZE));
}

#[test]
fn a_connected_socket_hears_that_nobody_listens_on_the_loopback() {
    let mut network = network();
    let (client, listener, unconnected) = (open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram));
    network.connect_datagram(client, Some(local(53))).unwrap();
    assert_eq!(network.send(client, b"query", None), Ok(5));
    settle(&mut network);
    assert!(network.readiness(client).unwrap().error, "POLLERR");
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Err(Errno::ECONNREFUSED));
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Err(Errno::EAGAIN), "reported once");
    assert!(!network.readiness(client).unwrap().error);
    // Again, through SO_ERROR this time, then through a send.
    network.send(client, b"query", None).unwrap();
    assert_eq!(network.take_error(client), Ok(Some(Errno::ECONNREFUSED)));
    assert_eq!(network.take_error(client), Ok(None));
    network.send(client, b"query", None).unwrap();
    assert_eq!(network.send(client, b"query", None), Err(Errno::ECONNREFUSED), "the send fails, nothing sent");
    assert_eq!(network.take_error(client), Ok(None));
    // An unconnected sender hears nothing; a bound port refuses nothing.
    network.send(unconnected, b"x", Some(local(53))).unwrap();
    assert!(!network.readiness(unconnected).unwrap().error);
    network.bind(listener, local(53)).unwrap();
    network.bound(listener).unwrap();
    network.send(client, b"query", None).unwrap();
    settle(&mut network);
    assert!(!network.readiness(client).unwrap().error);
    assert_eq!(network.receive(listener, &mut buffer, false).map(|r| r.copied), Ok(5));
}
