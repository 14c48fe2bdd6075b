//! Part of tier 4: malformed frames into the guest's network card while a
//! server in the guest keeps answering, on both kernels (issue 19's "bad
//! packets"). The card's frames travel as UDP datagrams between QEMU and
//! this program on 127.0.0.1 (QEMU's `dgram` backend): this program is the
//! guest's whole network — it answers ARP and DHCP as the gateway
//! 10.0.2.2, and nothing else exists.
//!
//! The guest runs `user/tools/packet_target.c` (UDP echo on 7, TCP echo on
//! 80). Once it answers, every family of `packet_frames::FAMILIES` is sent
//! 300 times, each family followed by a UDP echo and an ICMP echo that
//! must come back; then an established TCP connection gets segments out
//! of its window, stray resets and a SYN, and must still echo; then 2,000
//! SYNs from ports that never answer, after which a new connection must
//! still be served. A UDP "bye" ends the guest.

use super::packet_frames::{self, FromGuest, Noise, FAMILIES};
use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, GuestKernel, Input, Output};
use crate::failure::{Failure, Outcome};
use crate::machine_options::MachineOptions;
use crate::network::GuestNetwork;
use parser_fuzz::targets::packets::frames::{self, DontFragment, Segment, PEER_IP, TCP_ACK, TCP_PSH, TCP_RST, TCP_SYN};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// How long the guest may take from boot to its first answer.
const BOOT_LIMIT: Duration = Duration::from_secs(200);
/// How long one answer may take once the guest is up.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);
/// Frames of each family.
const FRAMES_PER_FAMILY: usize = 300;
/// SYNs in the flood.
const FLOOD: usize = 2_000;
/// Frames sent between short pauses.
const PACE_EVERY: usize = 10;

/// A TCP segment from the peer's `port` to the guest's echo server on 80.
fn to_port_80(port: u16, sequence: u32, acknowledgement: u32, flags: u8, data: &[u8]) -> Vec<u8> {
    frames::tcp_to_guest(DontFragment::Clear, Segment { ports: (port, 80), sequence, acknowledgement, flags }, &[], data)
}

pub fn run_bad_packet_checks(tally: &mut Tally) {
    use crate::network::free_udp_ports;
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        let outcome = free_udp_ports().and_then(|[qemu_port, peer_port]| serve_through_bad_frames(kernel, qemu_port, peer_port));
        tally.record(&format!("network: the guest keeps answering while malformed frames hit its card ({kernel:?})"), outcome.map_err(|failure| failure.to_string()));
    }
}

fn serve_through_bad_frames(kernel: GuestKernel, qemu_port: u16, peer_port: u16) -> Outcome {
    let socket = UdpSocket::bind(("127.0.0.1", peer_port)).map_err(|error| Failure::failed(format!("binding 127.0.0.1:{peer_port}: {error}")))?;
    socket.set_read_timeout(Some(Duration::from_millis(20))).map_err(|error| Failure::failed(error.to_string()))?;
    let target = crate::guest_programs::compile_c("user/tools/packet_target.c", "packet_target")?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: Vec::new(),
        program: target,
        program_arguments: Vec::new(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: Some(GuestNetwork::Datagrams { qemu_port, peer_port }),
    };
    let peer = std::thread::spawn(move || Peer { socket, qemu_port, dhcp_answers: 0, seen: Default::default() }.exercise_then_end());
    let guest = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(BOOT_LIMIT + Duration::from_secs(400)));
    let peer = peer.join().map_err(|_| Failure::failed("the host peer panicked"))?;
    let guest = match (guest, peer) {
        (Ok(guest), Ok(())) => guest,
        (Ok(guest), Err(failure)) => return Err(Failure::failed(format!("{failure}; the guest said:\n{}{}", String::from_utf8_lossy(&guest.output), String::from_utf8_lossy(&guest.errors)))),
        (Err(guest_failure), Err(failure)) => return Err(Failure::failed(format!("{failure}; and {guest_failure}"))),
        (Err(guest_failure), Ok(())) => return Err(guest_failure),
    };
    let said = || format!("{}{}", String::from_utf8_lossy(&guest.output), String::from_utf8_lossy(&guest.errors));
    if guest.exit_code != 0 || !said().contains("served ") {
        return Err(Failure::failed(format!("the guest exited {}:\n{}", guest.exit_code, said())));
    }
    Ok(())
}

/// The guest's network: QEMU's datagrams in and out.
struct Peer {
    socket: UdpSocket,
    qemu_port: u16,
    dhcp_answers: usize,
    /// Frames from the guest by kind (for a failure's message).
    seen: std::collections::BTreeMap<&'static str, usize>,
}

impl Peer {
    fn send(&self, frame: &[u8]) -> Outcome {
        loop {
            match self.socket.send_to(frame, ("127.0.0.1", self.qemu_port)) {
                Ok(_) => return Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(Failure::failed(format!("sending a frame to QEMU: {error}"))),
            }
        }
    }

    /// Takes frames from the guest until `deadline`, answering ARP for the
    /// gateway and DHCP; the first that `wanted` accepts ends the wait.
    fn wait_for<T>(&mut self, deadline: Instant, mut wanted: impl FnMut(&FromGuest) -> Option<T>) -> Outcome<Option<T>> {
        let mut buffer = vec![0u8; 65_536];
        while Instant::now() < deadline {
            let length = match self.socket.recv(&mut buffer) {
                Ok(length) => length,
                // A signal to this process (a child's SIGCHLD) interrupts
                // the wait: try again.
                Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => continue,
                Err(error) => return Err(Failure::failed(format!("receiving from QEMU: {error}"))),
            };
            let frame = packet_frames::parse(&buffer[..length]);
            let kind = match &frame {
                FromGuest::ArpRequest { .. } => "ARP requests",
                FromGuest::Dhcp { .. } => "DHCP requests",
                FromGuest::Udp { .. } => "UDP datagrams",
                FromGuest::Tcp { .. } => "TCP segments",
                FromGuest::EchoReply { .. } => "ICMP echo replies",
                FromGuest::Other => "other frames",
            };
            *self.seen.entry(kind).or_default() += 1;
            match &frame {
                FromGuest::ArpRequest { target, sender_mac, sender_ip } if *target == PEER_IP => self.send(&packet_frames::arp_reply(*sender_mac, *sender_ip))?,
                FromGuest::Dhcp { kind: kind @ (1 | 3), transaction } => {
                    self.dhcp_answers += 1;
                    self.send(&packet_frames::dhcp_answer(*kind, *transaction))?;
                }
                _ => {}
            }
            if let Some(found) = wanted(&frame) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Takes whatever has arrived (answering ARP and DHCP) for a moment:
    /// the pause that keeps QEMU's socket buffer on this host from
    /// overflowing (a host that drops our probes would say nothing of the
    /// guest).
    fn drain(&mut self) -> Outcome {
        self.wait_for(Instant::now() + Duration::from_millis(10), |_| None::<()>).map(|_| ())
    }

    /// A UDP datagram to the guest's echo port comes back.
    fn udp_echo(&mut self, label: &str, limit: Duration) -> Outcome<bool> {
        let port = 40_000 + (label.len() as u16 % 1000);
        let payload = label.as_bytes().to_vec();
        self.send(&frames::udp_to_guest(DontFragment::Clear, (port, 7), &payload))?;
        let deadline = Instant::now() + limit;
        let back = self.wait_for(deadline, |frame| matches!(frame, FromGuest::Udp { ports: (7, to), payload: echoed } if *to == port && *echoed == payload).then_some(()))?;
        Ok(back.is_some())
    }

    /// An ICMP echo request is answered.
    fn ping(&mut self, sequence: u16) -> Outcome<bool> {
        self.send(&frames::to_guest(DontFragment::Clear, frames::PROTOCOL_ICMP, &frames::icmp_echo(0x4c41, sequence, b"lamina")))?;
        let back = self.wait_for(Instant::now() + ANSWER_LIMIT, |frame| matches!(frame, FromGuest::EchoReply { identifier: 0x4c41, sequence: answered } if *answered == sequence).then_some(()))?;
        Ok(back.is_some())
    }

    /// Both echoes answer (each asked up to three times: a network may
    /// drop one), or a failure naming `after`.
    fn still_answering(&mut self, after: &str, sequence: u16) -> Outcome {
        let mut udp = false;
        for _ in 0..3 {
            udp = udp || self.udp_echo(&format!("after {after}"), ANSWER_LIMIT / 2)?;
        }
        if !udp {
            return Err(Failure::failed(format!("no UDP echo after {after}")));
        }
        let mut icmp = false;
        for _ in 0..3 {
            icmp = icmp || self.ping(sequence)?;
        }
        if !icmp {
            return Err(Failure::failed(format!("no ICMP echo reply after {after}")));
        }
        Ok(())
    }

    /// A TCP handshake with the guest's port 80 from `port`: the
    /// connection's next sequence numbers (ours, theirs).
    fn connect(&mut self, port: u16, limit: Duration) -> Outcome<Option<(u32, u32)>> {
        let ours = 0x1000_0000u32.wrapping_add(u32::from(port) << 8);
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            self.send(&to_port_80(port, ours, 0, TCP_SYN, b""))?;
            let answer = self.wait_for((Instant::now() + Duration::from_secs(2)).min(deadline), |frame| match frame {
                FromGuest::Tcp { ports: (80, to), sequence, acknowledgement, flags, .. } if *to == port && *flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK && *acknowledgement == ours.wrapping_add(1) => Some(*sequence),
                _ => None,
            })?;
            if let Some(theirs) = answer {
                let (ours, theirs) = (ours.wrapping_add(1), theirs.wrapping_add(1));
                self.send(&to_port_80(port, ours, theirs, TCP_ACK, b""))?;
                return Ok(Some((ours, theirs)));
            }
        }
        Ok(None)
    }

    /// Sends `data` on the connection and waits for its echo; the new
    /// sequence numbers.
    fn echo(&mut self, port: u16, (ours, theirs): (u32, u32), data: &[u8]) -> Outcome<Option<(u32, u32)>> {
        self.send(&to_port_80(port, ours, theirs, TCP_ACK | TCP_PSH, data))?;
        let echoed = self.wait_for(Instant::now() + ANSWER_LIMIT, |frame| match frame {
            FromGuest::Tcp { ports: (80, to), payload, sequence, .. } if *to == port && payload == data => Some(*sequence),
            _ => None,
        })?;
        let Some(sequence) = echoed else { return Ok(None) };
        let next = (ours.wrapping_add(data.len() as u32), sequence.wrapping_add(data.len() as u32));
        self.send(&to_port_80(port, next.0, next.1, TCP_ACK, b""))?;
        Ok(Some(next))
    }

    /// Runs [`exercise`](Self::exercise), then says "bye" whatever came
    /// of it (the guest ends only then); a failure says what the guest sent.
    fn exercise_then_end(mut self) -> Outcome {
        let outcome = self.exercise();
        let bye = if outcome.is_ok() { self.udp_echo("bye", ANSWER_LIMIT) } else { (0..3).map(|_| self.udp_echo("bye", Duration::from_secs(2))).find(|answered| !matches!(answered, Ok(false))).unwrap_or(Ok(false)) };
        let outcome = outcome.and_then(|()| match bye? {
            true => Ok(()),
            false => Err(Failure::failed("the guest did not answer \"bye\"")),
        });
        outcome.map_err(|failure| Failure::failed(format!("{failure} (from the guest: {:?}; DHCP answers sent: {})", self.seen, self.dhcp_answers)))
    }

    fn exercise(&mut self) -> Outcome {
        // The guest boots, gets its address, starts serving.
        let booted = Instant::now() + BOOT_LIMIT;
        let mut up = false;
        while !up && Instant::now() < booted {
            up = self.udp_echo("hello", Duration::from_secs(1))?;
        }
        if !up {
            return Err(Failure::failed("the guest never echoed a UDP datagram"));
        }
        let mut noise = Noise::new(0x1a31_2026);
        for (index, family) in FAMILIES.iter().enumerate() {
            for count in 0..FRAMES_PER_FAMILY {
                self.send(&(family.make)(&mut noise))?;
                if count % PACE_EVERY == PACE_EVERY - 1 {
                    self.drain()?;
                }
            }
            self.still_answering(family.name, index as u16)?;
        }
        self.abuse_a_connection()?;
        self.flood_with_syns()
    }

    /// Out-of-window segments, stray resets and a SYN on an established
    /// connection: it must go on echoing.
    fn abuse_a_connection(&mut self) -> Outcome {
        let port = 50_001;
        let open = self.connect(port, ANSWER_LIMIT)?.ok_or_else(|| Failure::failed("no TCP handshake with port 80"))?;
        let open = self.echo(port, open, b"first")?.ok_or_else(|| Failure::failed("no TCP echo on a fresh connection"))?;
        let (ours, theirs) = open;
        let abuse: [(u32, u32, u8, &[u8]); 6] = [
            (ours.wrapping_add(1 << 30), theirs, TCP_ACK | TCP_PSH, b"far ahead"),
            (ours.wrapping_sub(1 << 20), theirs, TCP_ACK | TCP_PSH, b"long ago"),
            (ours, theirs.wrapping_add(1 << 30), TCP_ACK | TCP_PSH, b""),
            (ours.wrapping_add(100_000), theirs, TCP_RST, b""),
            (ours.wrapping_sub(100_000), 0, TCP_RST, b""),
            (ours.wrapping_add(7), 0, TCP_SYN, b""),
        ];
        for (sequence, acknowledgement, flags, data) in abuse {
            self.send(&to_port_80(port, sequence, acknowledgement, flags, data))?;
            self.drain()?;
        }
        if self.echo(port, open, b"still here")?.is_none() {
            return Err(Failure::failed("an established connection stopped echoing after out-of-window segments and stray resets"));
        }
        self.send(&to_port_80(port, ours.wrapping_add(10), 0, TCP_RST, b""))
    }

    /// SYNs from 2,000 ports that never complete their handshakes: the
    /// guest must still answer echoes and take a new connection.
    fn flood_with_syns(&mut self) -> Outcome {
        for index in 0..FLOOD {
            let port = 20_000 + index as u16;
            self.send(&to_port_80(port, (index as u32).wrapping_mul(2_654_435_761), 0, TCP_SYN, b""))?;
            if index % PACE_EVERY == PACE_EVERY - 1 {
                self.drain()?;
            }
        }
        self.still_answering("a SYN flood", 9_999)?;
        let open = self.connect(60_001, Duration::from_secs(60))?.ok_or_else(|| Failure::failed("no new TCP connection within 60 s of a SYN flood"))?;
        if self.echo(60_001, open, b"after the flood")?.is_none() {
            return Err(Failure::failed("a connection made after a SYN flood did not echo"));
        }
        Ok(())
    }
}
