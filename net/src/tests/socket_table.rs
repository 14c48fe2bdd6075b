//! `/proc/net/tcp` and `udp` as Linux lays them out.

use super::stream::connected_pair;
use super::{local, network, open, settle};
use crate::{proc_text, Family, IpAddress, IpEndpoint, Ipv6Address, SocketKind};

/// The (local, remote, state) columns of each line after the header.
fn columns(text: &str) -> std::vec::Vec<(std::string::String, std::string::String, std::string::String)> {
    text.lines()
        .skip(1)
        .map(|line| {
            let fields: std::vec::Vec<&str> = line.split_whitespace().collect();
            (fields[1].into(), fields[2].into(), fields[3].into())
        })
        .collect()
}

#[test]
fn listeners_connections_and_bound_datagram_sockets_are_listed_as_linux_lists_them() {
    let mut network = network();
    let none = |_| 0;
    let empty = proc_text(&network.socket_table(Family::V4, SocketKind::Stream), Family::V4, SocketKind::Stream, &none);
    assert!(empty.starts_with("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"));
    assert_eq!(empty.lines().count(), 1);
    assert_eq!(empty.len(), 150, "the header is padded to 149 columns");

    let (listener, client, server) = connected_pair(&mut network, 0x1C8B);
    let unbound = open(&mut network, SocketKind::Stream);
    let rows = network.socket_table(Family::V4, SocketKind::Stream);
    let text = proc_text(&rows, Family::V4, SocketKind::Stream, &|id| if id == listener { 77 } else { 1 });
    let listed = columns(&text);
    assert_eq!(listed.len(), 3, "the listener and both ends, not the unbound socket: {text}");
    assert_eq!(listed[0], ("0100007F:1C8B".into(), "00000000:0000".into(), "0A".into()));
    assert!(text.lines().nth(1).unwrap().split_whitespace().nth(9) == Some("77"), "the listener's inode: {text}");
    let client_port = network.local_name(client).unwrap().port;
    assert!(listed.contains(&(std::format!("0100007F:{client_port:04X}"), "0100007F:1C8B".into(), "01".into())));
    assert!(listed.contains(&("0100007F:1C8B".into(), std::format!("0100007F:{client_port:04X}"), "01".into())));
    assert!(text.lines().all(|line| line.len() == 149));
    assert!(network.socket_table(Family::V6, SocketKind::Stream).is_empty());
    let _ = (server, unbound);

    // A closed connection still finishing its exchange stays listed.
    network.close(client);
    settle(&mut network);
    let states: std::vec::Vec<std::string::String> = columns(&proc_text(&network.socket_table(Family::V4, SocketKind::Stream), Family::V4, SocketKind::Stream, &none)).into_iter().map(|row| row.2).collect();
    assert!(states.contains(&"05".into()) || states.contains(&"06".into()), "FIN_WAIT2 or TIME_WAIT: {states:?}");

    let datagram = open(&mut network, SocketKind::Datagram);
    assert!(network.socket_table(Family::V4, SocketKind::Datagram).is_empty(), "unbound: not listed");
    network.bind(datagram, local(0x1C8D)).unwrap();
    let udp = proc_text(&network.socket_table(Family::V4, SocketKind::Datagram), Family::V4, SocketKind::Datagram, &none);
    assert!(udp.starts_with("   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops"));
    assert_eq!(columns(&udp), [("0100007F:1C8D".into(), "00000000:0000".into(), "07".into())]);
}

#[test]
fn ipv6_sockets_go_to_the_six_files_with_each_word_as_linux_prints_it() {
    let mut network = network();
    let listener = network.open(Family::V6, SocketKind::Stream).unwrap();
    network.bind(listener, IpEndpoint::new(IpAddress::Ipv6(Ipv6Address::LOCALHOST), 0x1C8C)).unwrap();
    network.listen(listener, 4).unwrap();
    let text = proc_text(&network.socket_table(Family::V6, SocketKind::Stream), Family::V6, SocketKind::Stream, &|_| 0);
    assert!(text.starts_with("  sl  local_address                         remote_address                        st"));
    assert_eq!(columns(&text), [("00000000000000000000000001000000:1C8C".into(), "00000000000000000000000000000000:0000".into(), "0A".into())]);
    assert!(network.socket_table(Family::V4, SocketKind::Stream).is_empty());
}
