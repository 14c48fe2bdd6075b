use super::{local, network, open, settle};
use crate::{Errno, Network, Options, Shutdown, SocketId, SocketKind};

/// A listener on 127.0.0.1:`port` and a client connected to it, accepted.
pub(super) fn connected_pair(network: &mut Network, port: u16) -> (SocketId, SocketId, SocketId) {
    let listener = open(network, SocketKind::Stream);
    network.bind(listener, local(port)).unwrap();
    network.listen(listener, 8).unwrap();
    let client = open(network, SocketKind::Stream);
    network.connect(client, local(port)).unwrap();
    settle(network);
    assert_eq!(network.connect_outcome(client), Ok(true));
    let server = network.accept(listener).expect("a connection waits");
    (listener, client, server)
}

#[test]
fn bytes_cross_a_loopback_connection_both_ways() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7000);
    assert_eq!(network.send(client, b"ping", None), Ok(4));
    settle(&mut network);
    let mut buffer = [0u8; 16];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(4));
    assert_eq!(&buffer[..4], b"ping");
    assert_eq!(network.send(server, b"pong!", None), Ok(5));
    settle(&mut network);
    let received = network.receive(client, &mut buffer, false).unwrap();
    assert_eq!((received.copied, &buffer[..5]), (5, &b"pong!"[..]));
    assert_eq!(received.from, local(7000));
    assert_eq!(network.peer_name(server).map(|peer| peer.addr), Ok(local(0).addr));
    assert_eq!(network.local_name(server), Ok(local(7000)));
}

#[test]
fn nothing_to_read_is_eagain_and_peek_leaves_the_bytes() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7001);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(server, &mut buffer, false), Err(Errno::EAGAIN));
    network.send(client, b"abc", None).unwrap();
    settle(&mut network);
    assert_eq!(network.receive(server, &mut buffer, true).map(|r| r.copied), Ok(3));
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(3));
    assert_eq!(network.receive(server, &mut buffer, false), Err(Errno::EAGAIN));
}

#[test]
fn a_megabyte_arrives_whole_and_in_order() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7002);
    let data: std::vec::Vec<u8> = (0..1 << 20).map(|index: u32| (index.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let (mut sent, mut received) = (0, std::vec::Vec::new());
    let mut buffer = [0u8; 4096];
    for _ in 0..10_000 {
        if sent < data.len() {
            match network.send(client, &data[sent..], None) {
                Ok(count) => sent += count,
                Err(Errno::EAGAIN) => {}
                Err(other) => panic!("send: {other:?}"),
            }
        }
        settle(&mut network);
        while let Ok(got) = network.receive(server, &mut buffer, false) {
            received.extend_from_slice(&buffer[..got.copied]);
        }
        if received.len() == data.len() {
            break;
        }
    }
    assert!(received == data, "{} of {} bytes, in order: {}", received.len(), data.len(), data.starts_with(&received));
}

#[test]
fn a_connection_to_a_port_nobody_listens_on_is_refused() {
    let mut network = network();
    let client = open(&mut network, SocketKind::Stream);
    network.connect(client, local(7003)).unwrap();
    settle(&mut network);
    assert_eq!(network.connect_outcome(client), Err(Errno::ECONNREFUSED));
    assert_eq!(network.send(client, b"x", None), Err(Errno::EPIPE));
}

#[test]
fn half_close_delivers_end_of_file_and_the_other_way_still_works() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7004);
    network.send(client, b"last", None).unwrap();
    network.shutdown(client, Shutdown::Write).unwrap();
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(4));
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(0), "end of file");
    assert!(network.readiness(server).unwrap().readable);
    assert_eq!(network.send(client, b"y", None), Err(Errno::EPIPE));
    network.send(server, b"reply", None).unwrap();
    settle(&mut network);
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Ok(5));
}

#[test]
fn closing_with_unread_data_resets_the_peer() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7005);
    network.send(client, b"unread", None).unwrap();
    settle(&mut network);
    network.close(server);
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(client, &mut buffer, false), Err(Errno::ECONNRESET));
    assert!(network.readiness(client).unwrap().hangup);
}

#[test]
fn data_sent_after_the_peer_closed_resets_the_sender() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7006);
    network.send(client, b"read", None).unwrap();
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(server, &mut buffer, false).map(|r| r.copied), Ok(4));
    network.close(server);
    settle(&mut network);
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Ok(0), "end of file: a graceful close");
    network.send(client, b"more", None).unwrap();
    settle(&mut network);
    assert_eq!(network.send(client, b"again", None), Err(Errno::EPIPE), "reset: nobody reads it");
}

#[test]
fn linger_of_zero_seconds_closes_by_reset_and_other_values_gracefully() {
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7015);
    let options = network.options(server).unwrap();
    network.set_options(server, Options { linger: Some(0), ..options }).unwrap();
    network.close(server);
    settle(&mut network);
    let mut buffer = [0u8; 8];
    assert_eq!(network.receive(client, &mut buffer, false), Err(Errno::ECONNRESET));

    let (_, client, server) = connected_pair(&mut network, 7016);
    network.set_options(server, Options { linger: Some(5), ..options }).unwrap();
    network.send(server, b"kept", None).unwrap();
    network.close(server);
    settle(&mut network);
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Ok(4));
    assert_eq!(network.receive(client, &mut buffer, false).map(|r| r.copied), Ok(0), "end of file");
}

#[test]
fn a_listener_queues_up_to_its_backlog_and_accepts_each_once() {
    let mut network = network();
    let listener = open(&mut network, SocketKind::Stream);
    network.bind(listener, local(7006)).unwrap();
    network.listen(listener, 3).unwrap();
    let clients: std::vec::Vec<SocketId> = (0..3).map(|_| open(&mut network, SocketKind::Stream)).collect();
    for &client in &clients {
        network.connect(client, local(7006)).unwrap();
        settle(&mut network);
    }
    assert!(network.readiness(listener).unwrap().readable);
    let mut ports = std::vec::Vec::new();
    for _ in 0..3 {
        let server = network.accept(listener).expect("queued");
        ports.push(network.peer_name(server).unwrap().port);
    }
    ports.sort();
    let mut expected: std::vec::Vec<u16> = clients.iter().map(|&client| network.local_name(client).unwrap().port).collect();
    expected.sort();
    assert_eq!(ports, expected);
    assert_eq!(network.accept(listener), Err(Errno::EAGAIN));
    assert!(!network.readiness(listener).unwrap().readable);
}

#[test]
fn a_syn_flood_holds_a_bounded_number_of_sockets() {
    let mut network = network();
    let listener = open(&mut network, SocketKind::Stream);
    network.bind(listener, local(7007)).unwrap();
    network.listen(listener, 2).unwrap();
    for _ in 0..50 {
        let client = open(&mut network, SocketKind::Stream);
        network.connect(client, local(7007)).unwrap();
        settle(&mut network);
    }
    let held = network.lanes[0].sockets.iter().count() + network.lanes[0].connection_count();
    // 50 clients, plus the listener's at most backlog + slots (+ what the
    // queue holds), not one per client.
    assert!(held <= 50 + 2 + 2 * crate::stream::LISTEN_SLOTS, "{held} smoltcp sockets");
}

#[test]
fn connect_twice_says_already_connected_and_listen_after_connect_is_einval() {
    let mut network = network();
    let (_, client, _) = connected_pair(&mut network, 7008);
    assert_eq!(network.connect(client, local(7008)), Err(Errno::EISCONN));
    assert_eq!(network.listen(client, 1), Err(Errno::EINVAL));
    let idle = open(&mut network, SocketKind::Stream);
    assert_eq!(network.peer_name(idle), Err(Errno::ENOTCONN));
    assert_eq!(network.send(idle, b"x", None), Err(Errno::ENOTCONN));
}

#[test]
fn a_burst_of_connections_in_one_poll_is_accepted_up_to_the_backlog() {
    let mut network = network();
    let listener = open(&mut network, SocketKind::Stream);
    network.bind(listener, local(7009)).unwrap();
    network.listen(listener, 64).unwrap();
    let clients: std::vec::Vec<SocketId> = (0..30).map(|_| open(&mut network, SocketKind::Stream)).collect();
    // Every SYN leaves in the same poll, more than the listening slots.
    for &client in &clients {
        network.connect(client, local(7009)).unwrap();
    }
    settle(&mut network);
    settle(&mut network);
    let established = clients.iter().filter(|&&client| network.connect_outcome(client) == Ok(true)).count();
    let mut accepted = 0;
    while network.accept(listener).is_ok() {
        accepted += 1;
    }
    assert_eq!((established, accepted), (30, 30));
}

#[test]
fn closed_connections_do_not_pile_up() {
    let mut network = network();
    let listener = open(&mut network, SocketKind::Stream);
    network.bind(listener, local(7010)).unwrap();
    network.listen(listener, 8).unwrap();
    for _ in 0..300 {
        let client = open(&mut network, SocketKind::Stream);
        network.connect(client, local(7010)).unwrap();
        settle(&mut network);
        let server = network.accept(listener).expect("accepted");
        network.close(client);
        settle(&mut network);
        network.close(server);
        settle(&mut network);
    }
    let held = network.lanes[0].sockets.iter().count() + network.lanes[0].connection_count();
    assert!(held <= crate::stream::LISTEN_SLOTS + 2, "{held} smoltcp sockets after 300 closed connections");
}

#[test]
fn an_ipv4_connection_goes_to_the_ipv4_listener_beside_a_v6_only_one() {
    use crate::{Family, IpAddress, IpEndpoint, Ipv6Address, Options};
    let mut network = network();
    let v6 = network.open(Family::V6, SocketKind::Stream).unwrap();
    network.set_options(v6, Options { v6_only: true, ..Options::default() }).unwrap();
    network.bind(v6, IpEndpoint::new(IpAddress::Ipv6(Ipv6Address::UNSPECIFIED), 7011)).unwrap();
    network.listen(v6, 8).unwrap();
    let v4 = open(&mut network, SocketKind::Stream);
    network.bind(v4, IpEndpoint::new(IpAddress::Ipv4(crate::Ipv4Address::UNSPECIFIED), 7011)).unwrap();
    network.listen(v4, 8).unwrap();
    for _ in 0..6 {
        let client = open(&mut network, SocketKind::Stream);
        network.connect(client, local(7011)).unwrap();
        settle(&mut network);
    }
    let ipv6_client = network.open(Family::V6, SocketKind::Stream).unwrap();
    network.connect(ipv6_client, IpEndpoint::new(IpAddress::Ipv6(Ipv6Address::LOCALHOST), 7011)).unwrap();
    settle(&mut network);
    let mut on_v4 = 0;
    while let Ok(accepted) = network.accept(v4) {
        assert_eq!(network.peer_name(accepted).map(|peer| peer.addr), Ok(local(0).addr));
        on_v4 += 1;
    }
    let mut on_v6 = 0;
    while let Ok(accepted) = network.accept(v6) {
        assert_eq!(network.peer_name(accepted).map(|peer| peer.addr), Ok(IpAddress::Ipv6(Ipv6Address::LOCALHOST)));
        on_v6 += 1;
    }
    assert_eq!((on_v4, on_v6), (6, 1));
}

#[test]
fn an_ipv4_connection_to_a_v6_only_listener_is_refused() {
    use crate::{Family, IpAddress, IpEndpoint, Ipv6Address, Options};
    let mut network = network();
    let v6 = network.open(Family::V6, SocketKind::Stream).unwrap();
    network.set_options(v6, Options { v6_only: true, ..Options::default() }).unwrap();
    network.bind(v6, IpEndpoint::new(IpAddress::Ipv6(Ipv6Address::UNSPECIFIED), 7012)).unwrap();
    network.listen(v6, 8).unwrap();
    let client = open(&mut network, SocketKind::Stream);
    network.connect(client, local(7012)).unwrap();
    settle(&mut network);
    assert_eq!(network.connect_outcome(client), Err(Errno::ECONNREFUSED));
    assert_eq!(network.accept(v6), Err(Errno::EAGAIN));
}

#[test]
fn an_idle_connection_after_a_receive_that_would_block_sets_no_timer() {
    // A receive with nothing there only looks at the connection: it must
    // not make the network say "poll now" (every blocked reader then
    // woke at once, again and again).
    let mut network = network();
    let (_, client, server) = connected_pair(&mut network, 7099);
    let mut buffer = [0u8; 8];
    network.send(client, b"x", None).unwrap();
    settle(&mut network);
    assert_eq!(network.receive(server, &mut buffer, false).map(|got| got.copied), Ok(1));
    settle(&mut network);
    assert_eq!(network.receive(server, &mut buffer, false).map(|got| got.copied), Err(Errno::EAGAIN));
    assert_eq!(network.poll_delay(), None);
}

#[test]
fn among_many_connections_each_one_sent_to_is_egressed_and_no_timer_outlives_its_connection() {
    // Egress visits only the connections marked since the last one
    // (`Lane::egress`): data sent on a few of twenty must still arrive,
    // answers must come back, and once everything is closed and settled
    // no timer of a gone connection may keep the network polling.
    let mut network = network();
    let pairs: alloc::vec::Vec<_> = (0..20).map(|index| connected_pair(&mut network, 7300 + index)).collect();
    let mut buffer = [0u8; 8];
    for &index in &[3usize, 11, 19] {
        let (_, client, server) = pairs[index];
        network.send(client, b"ping", None).unwrap();
        settle(&mut network);
        assert_eq!(network.receive(server, &mut buffer, false).map(|got| got.copied), Ok(4));
        network.send(server, b"pong!", None).unwrap();
        settle(&mut network);
        assert_eq!(network.receive(client, &mut buffer, false).map(|got| got.copied), Ok(5));
    }
    // A connection nobody touched has nothing.
    assert_eq!(network.receive(pairs[7].2, &mut buffer, false).map(|got| got.copied), Err(Errno::EAGAIN));
    for (listener, client, server) in pairs {
        network.close(client);
        network.close(server);
        network.close(listener);
    }
    for _ in 0..20 {
        settle(&mut network);
    }
    assert_eq!(network.poll_delay(), None);
}
