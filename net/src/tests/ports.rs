use super::{local, network, open};
use crate::{Errno, Family, IpAddress, IpEndpoint, Ipv4Address, Options, SocketKind};

fn any(port: u16) -> IpEndpoint {
    IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::UNSPECIFIED), port)
}

#[test]
fn a_port_is_taken_once_and_free_again_after_close() {
    let mut network = network();
    let (one, two) = (open(&mut network, SocketKind::Stream), open(&mut network, SocketKind::Stream));
    network.bind(one, local(8000)).unwrap();
    assert_eq!(network.bind(two, any(8000)), Err(Errno::EADDRINUSE), "the wildcard covers 127.0.0.1");
    assert_eq!(network.bind(one, local(8001)), Err(Errno::EINVAL), "bound already");
    network.close(one);
    assert_eq!(network.bind(two, any(8000)), Ok(()));
}

#[test]
fn tcp_and_udp_ports_are_apart() {
    let mut network = network();
    let (stream, datagram) = (open(&mut network, SocketKind::Stream), open(&mut network, SocketKind::Datagram));
    network.bind(stream, local(8002)).unwrap();
    assert_eq!(network.bind(datagram, local(8002)), Ok(()));
}

#[test]
fn reuse_address_lets_a_second_socket_bind_but_not_listen_beside_a_listener() {
    let mut network = network();
    let reuse = Options { reuse_address: true, ..Options::default() };
    let (one, two) = (open(&mut network, SocketKind::Stream), open(&mut network, SocketKind::Stream));
    network.set_options(one, reuse).unwrap();
    network.set_options(two, reuse).unwrap();
    network.bind(one, local(8003)).unwrap();
    network.bind(two, local(8003)).unwrap();
    network.listen(one, 4).unwrap();
    assert_eq!(network.listen(two, 4), Err(Errno::EADDRINUSE));
    let late = open(&mut network, SocketKind::Stream);
    network.set_options(late, reuse).unwrap();
    assert_eq!(network.bind(late, local(8003)), Err(Errno::EADDRINUSE), "a listener holds its port");
}

#[test]
fn reuse_port_lets_two_listeners_share() {
    let mut network = network();
    let shared = Options { reuse_port: true, ..Options::default() };
    let (one, two) = (open(&mut network, SocketKind::Stream), open(&mut network, SocketKind::Stream));
    for socket in [one, two] {
        network.set_options(socket, shared).unwrap();
        network.bind(socket, local(8004)).unwrap();
        network.listen(socket, 4).unwrap();
    }
}

#[test]
fn ephemeral_ports_come_from_linux_range_and_differ() {
    let mut network = network();
    let ports: std::vec::Vec<u16> = (0..3)
        .map(|_| {
            let socket = open(&mut network, SocketKind::Datagram);
            network.bind(socket, any(0)).unwrap();
            network.local_name(socket).unwrap().port
        })
        .collect();
    assert!(ports.iter().all(|port| crate::ports::EPHEMERAL.contains(port)), "{ports:?}");
    assert!(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]);
}

#[test]
fn an_address_this_host_does_not_have_is_not_available() {
    let mut network = network();
    let socket = open(&mut network, SocketKind::Stream);
    let elsewhere = IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::new(10, 9, 8, 7)), 80);
    assert_eq!(network.bind(socket, elsewhere), Err(Errno::EADDRNOTAVAIL));
    let v6 = network.open(Family::V6, SocketKind::Stream).unwrap();
    assert_eq!(network.bind(v6, local(8005)), Ok(()), "an IPv6 socket binds a mapped IPv4 address");
}

#[test]
fn sockaddr_in_and_in6_read_and_write_as_linux_lays_them_out() {
    use crate::addresses::{encode, parse};
    let v4 = [2u8, 0, 0x1f, 0x90, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(parse(Family::V4, &v4), Ok(crate::SocketAddress::Ip(local(8080))));
    assert_eq!(encode(Family::V4, local(8080)), v4.to_vec());
    assert_eq!(parse(Family::V4, &v4[..15]), Err(Errno::EINVAL));
    assert_eq!(parse(Family::V4, &[1, 0, 0, 0]), Err(Errno::EAFNOSUPPORT));
    let mut mapped = [0u8; 28];
    mapped[0] = 10;
    mapped[2..4].copy_from_slice(&8080u16.to_be_bytes());
    mapped[18..20].copy_from_slice(&[0xff, 0xff]);
    mapped[20..24].copy_from_slice(&[127, 0, 0, 1]);
    assert_eq!(parse(Family::V6, &mapped), Ok(crate::SocketAddress::Ip(local(8080))));
    assert_eq!(encode(Family::V6, local(8080)), mapped.to_vec());
}
