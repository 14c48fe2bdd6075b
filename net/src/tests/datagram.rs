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
fn a_datagram_to_the_unspecified_address_reaches_this_host() {
    let mut network = network();
    let (server, client) = (open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram));
    network.bind(server, local(9003)).unwrap();
    network.bound(server).unwrap();
    let any = crate::IpEndpoint::new(crate::IpAddress::Ipv4(smoltcp::wire::Ipv4Address::UNSPECIFIED), 9003);
    assert_eq!(network.send(client, b"to any", Some(any)), Ok(6));
    network.connect_datagram(client, Some(any)).unwrap();
    assert_eq!(network.peer_name(client), Ok(local(9003)), "the peer is the loopback address");
    assert_eq!(network.send(client, b"again", None), Ok(5));
    settle(&mut network);
    let mut buffer = [0u8; 16];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(6));
    assert_eq!(&buffer[..6], b"to any");
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(5));
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

/// ::1:`port`.
fn local6(port: u16) -> crate::IpEndpoint {
    crate::IpEndpoint::new(crate::IpAddress::Ipv6(crate::Ipv6Address::LOCALHOST), port)
}

/// The hop limit and traffic class a datagram arrived with.
fn marks_of_next(network: &mut crate::Network, socket: crate::SocketId) -> crate::HeaderMarks {
    let mut buffer = [0u8; 16];
    let arrival = network.receive(socket, &mut buffer, false).unwrap().arrival.expect("a datagram's arrival");
    assert_eq!(arrival.interface, 1, "the loopback");
    arrival.marks.expect("its header was read")
}

#[test]
fn a_datagram_carries_the_hop_limit_and_traffic_class_asked_for() {
    use crate::{Family, HeaderMarks, IpMarks, SendControl};
    let mut network = network();
    let server = network.open(Family::V6, SocketKind::Datagram).unwrap();
    let client = network.open(Family::V6, SocketKind::Datagram).unwrap();
    network.bind(server, local6(9010)).unwrap();
    network.bound(server).unwrap();
    // Defaults: 64 hops, class 0.
    network.send(client, b"a", Some(local6(9010))).unwrap();
    settle(&mut network);
    assert_eq!(marks_of_next(&mut network, server), HeaderMarks { hop_limit: 64, traffic_class: 0 });
    // Named by the send (sendmsg's IPV6_HOPLIMIT and IPV6_TCLASS).
    network.send_with(client, b"b", Some(local6(9010)), SendControl { marks: IpMarks { hop_limit: Some(2), traffic_class: Some(0xb8) }, source: None }).unwrap();
    settle(&mut network);
    assert_eq!(marks_of_next(&mut network, server), HeaderMarks { hop_limit: 2, traffic_class: 0xb8 });
    // Set as options; a send's own value wins over them.
    let mut options = network.options(client).unwrap();
    (options.unicast_hops, options.traffic_class) = (Some(7), 0x20);
    network.set_options(client, options).unwrap();
    network.send(client, b"c", Some(local6(9010))).unwrap();
    network.send_with(client, b"d", Some(local6(9010)), SendControl { marks: IpMarks { hop_limit: Some(255), traffic_class: None }, source: None }).unwrap();
    settle(&mut network);
    assert_eq!(marks_of_next(&mut network, server), HeaderMarks { hop_limit: 7, traffic_class: 0x20 });
    assert_eq!(marks_of_next(&mut network, server), HeaderMarks { hop_limit: 255, traffic_class: 0x20 });
}

#[test]
fn an_ipv4_datagram_carries_its_ttl_and_tos_and_says_where_it_went() {
    let mut network = network();
    let (server, client) = (open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram));
    network.bind(server, crate::IpEndpoint::new(crate::IpAddress::Ipv4(crate::Ipv4Address::UNSPECIFIED), 9011)).unwrap();
    network.bound(server).unwrap();
    let mut options = network.options(client).unwrap();
    (options.ttl, options.tos, options.unicast_hops) = (Some(3), 0x10, Some(9));
    network.set_options(client, options).unwrap();
    let to = local(9011);
    network.send(client, b"v4", Some(to)).unwrap();
    settle(&mut network);
    let mut buffer = [0u8; 4];
    let arrival = network.receive(server, &mut buffer, false).unwrap().arrival.unwrap();
    assert_eq!(arrival.to, to.addr, "the address it was sent to, not the one bound");
    assert_eq!(arrival.marks, Some(crate::HeaderMarks { hop_limit: 3, traffic_class: 0x10 }), "IP_TTL, not IPV6_UNICAST_HOPS");
}

#[test]
fn marks_pass_smoltcp_only_through_the_device() {
    use crate::ip_marks::{HeaderMarks, IpMarks};
    let asked = IpMarks { hop_limit: Some(1), traffic_class: Some(0xff) };
    assert_eq!(IpMarks::of_send(asked.to_meta()), asked);
    assert_eq!(IpMarks::of_send(IpMarks::default().to_meta()), IpMarks::default());
    // A reception's id asks nothing of a send (smoltcp could reuse it).
    let read = HeaderMarks { hop_limit: 9, traffic_class: 4 };
    assert_eq!(HeaderMarks::of_reception(read.to_meta()), Some(read));
    assert_eq!(IpMarks::of_send(read.to_meta()), IpMarks::default());
    assert_eq!(HeaderMarks::of_reception(asked.to_meta()), None);
    // Short or foreign packets are left alone, never read past their end.
    let mut short = [0x45u8, 0, 0];
    asked.write(&mut short, true);
    assert_eq!(short, [0x45, 0, 0]);
    assert_eq!(HeaderMarks::read(&short), None);
    assert_eq!(HeaderMarks::read(&[0x15; 40]), None);
}

/// A fresh IPv4 UDP-Lite socket.
fn open_lite(network: &mut crate::Network) -> crate::SocketId {
    network.open_datagram_for(crate::Family::V4, crate::DatagramProtocol::UdpLite, 0).expect("a socket")
}

#[test]
fn udp_lite_has_ports_of_its_own() {
    let mut network = network();
    let (lite_server, lite_client) = (open_lite(&mut network), open_lite(&mut network));
    let (udp_server, udp_client) = (open(&mut network, SocketKind::Datagram), open(&mut network, SocketKind::Datagram));
    // One port, bound by a socket of each protocol: no conflict.
    for server in [lite_server, udp_server] {
        network.bind(server, local(9100)).unwrap();
        network.bound(server).unwrap();
    }
    let another = open_lite(&mut network);
    assert_eq!(network.bind(another, local(9100)), Err(Errno::EADDRINUSE), "but twice in one protocol");
    assert_eq!(network.send(lite_client, b"lite", Some(local(9100))), Ok(4));
    assert_eq!(network.send(udp_client, b"plain udp", Some(local(9100))), Ok(9));
    settle(&mut network);
    let mut buffer = [0u8; 16];
    let received = network.receive(lite_server, &mut buffer, false).unwrap();
    assert_eq!(&buffer[..received.copied], b"lite");
    assert_eq!(received.arrival.map(|arrival| arrival.interface), Some(1), "the loopback's index");
    assert_eq!(received.from.port, network.local_name(lite_client).unwrap().port);
    assert_eq!(network.receive(lite_server, &mut buffer, false).map(|r| r.copied), Err(Errno::EAGAIN), "UDP's datagram is not UDP-Lite's");
    assert_eq!(network.receive(udp_server, &mut buffer, false).map(|r| r.copied), Ok(9));
    assert_eq!(network.receive(udp_server, &mut buffer, false).map(|r| r.copied), Err(Errno::EAGAIN));
    assert_eq!((network.protocol_number(lite_server), network.protocol_number(udp_server)), (Ok(136), Ok(17)));
    // Only UDP's sockets are in /proc/net/udp.
    let rows = network.socket_table(crate::Family::V4, SocketKind::Datagram);
    assert!(rows.iter().all(|row| row.socket != Some(lite_server)) && rows.iter().any(|row| row.socket == Some(udp_server)));
}

#[test]
fn udp_lite_is_refused_by_a_port_only_udp_holds_and_stays_on_the_loopback() {
    let mut network = network();
    let (client, udp_holder) = (open_lite(&mut network), open(&mut network, SocketKind::Datagram));
    network.bind(udp_holder, local(9101)).unwrap();
    network.bound(udp_holder).unwrap();
    network.connect_datagram(client, Some(local(9101))).unwrap();
    network.send(client, b"anyone?", None).unwrap();
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Err(Errno::ECONNREFUSED));
    let far = crate::IpEndpoint::new(crate::IpAddress::Ipv4(crate::Ipv4Address::new(10, 0, 2, 2)), 53);
    network.add_ethernet([2, 0, 0, 0, 0, 1], 1500);
    let lonely = open_lite(&mut network);
    assert_eq!(network.send(lonely, b"x", Some(far)), Err(Errno::ENETUNREACH));
    assert_eq!(network.interfaces().len(), 2, "UDP-Lite's loopback is not an interface of its own");
}

#[test]
fn udp_lite_over_ipv6() {
    let mut network = network();
    let server = network.open_datagram_for(crate::Family::V6, crate::DatagramProtocol::UdpLite, 0).unwrap();
    let client = network.open_datagram_for(crate::Family::V6, crate::DatagramProtocol::UdpLite, 0).unwrap();
    network.bind(server, local6(9102)).unwrap();
    network.bound(server).unwrap();
    assert_eq!(network.send(client, b"six", Some(local6(9102))), Ok(3));
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(3));
}
