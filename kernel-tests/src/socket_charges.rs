//! Socket buffers are charged to containers: a process's Internet sockets
//! to the container its thread runs in, so a container at its quota gets
//! ENOBUFS for the connection that needs more buffers, while the listener
//! (another container's) goes on serving; and once the sockets are gone
//! nothing stays charged.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use containers::ContainerId;
use linux_objects::inet_sockets::{self, InetSocket};
use net::{Family, IpAddress, IpEndpoint, Ipv4Address, Options, SocketKind};
use sched::{Pinning, THREAD_PAGES};

use super::runner::{check, Outcome};
use super::waiting::wait_until;
use kernel_objects::kernel_containers::containers;
use kernel_objects::SystemFacts;

/// Pages one TCP connection's buffers are charged (64 KiB each way).
const CONNECTION_PAGES: u64 = 32;
const PORT: u16 = 7_300;

fn loopback(port: u16) -> IpEndpoint {
    IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::LOCALHOST), port)
}

fn charged(container: ContainerId) -> Result<u64, String> {
    containers().ok_or("no container tree")?.charged(container).map_err(|error| format!("{error:?}"))
}

/// In `container`: connects until refused; how many connected and the
/// refusal's errno. Every socket is closed by reset before it returns.
fn connect_until_refused(limit: usize) -> (usize, Option<net::Errno>) {
    let mut open = Vec::new();
    let mut refusal = None;
    for _ in 0..limit {
        let socket = match InetSocket::open(Family::V4, SocketKind::Stream) {
            Ok(socket) => socket,
            Err(errno) => {
                refusal = Some(errno);
                break;
            }
        };
        match inet_sockets::with(|network| network.connect(socket.id, loopback(PORT))) {
            Ok(()) => {
                let _ = inet_sockets::with(|network| {
                    let options = network.options(socket.id)?;
                    network.set_options(socket.id, Options { linger: Some(0), ..options })
                });
                open.push(socket);
            }
            Err(errno) => {
                refusal = Some(errno);
                break;
            }
        }
    }
    (open.len(), refusal)
}

pub fn a_containers_sockets_stay_within_its_quota_and_give_it_back(_facts: &SystemFacts) -> Outcome {
    let tree = containers().ok_or("no container tree")?;
    let root = sched::current().container();
    // A thread and three connections' buffers.
    let small = tree.create_child(root, THREAD_PAGES + 3 * CONNECTION_PAGES + 4).map_err(|error| format!("{error:?}"))?;
    let listener = InetSocket::open(Family::V4, SocketKind::Stream).map_err(|errno| format!("socket: {errno:?}"))?;
    inet_sockets::with(|network| {
        network.bind(listener.id, loopback(PORT))?;
        network.listen(listener.id, 16)
    })
    .map_err(|errno| format!("listen: {errno:?}"))?;

    let outcome = Arc::new(machine::irq_lock::IrqLock::new(None));
    let written = outcome.clone();
    let thread = sched::spawn_in(small, 0, Pinning::Free, "sockets", move || {
        let result = connect_until_refused(10);
        *written.lock() = Some(result);
    })
    .map_err(|error| format!("spawn in the small container: {error:?}"))?;
    check(wait_until(30_000, || thread.has_exited()), || "the connecting thread did not finish".into())?;
    let (connected, refusal) = outcome.lock().take().ok_or("the connecting thread said nothing")?;
    check(connected == 3 && refusal == Some(net::Errno::ENOBUFS), || format!("{connected} connections, then {refusal:?}; expected 3, then ENOBUFS"))?;

    // The listener's side is root's: it still accepts what connected.
    let mut accepted = Vec::new();
    while let Ok(id) = inet_sockets::with(|network| network.accept(listener.id)) {
        accepted.push(listener.accepted(id));
    }
    check(accepted.len() == 3, || format!("{} connections accepted", accepted.len()))?;
    drop(accepted);
    drop(listener);
    // The connections were reset on close: their buffers go at the next poll.
    let released = wait_until(10_000, || {
        let _ = inet_sockets::with(|_| Ok(()));
        charged(small).is_ok_and(|pages| pages == 0)
    });
    check(released, || format!("{:?} pages still charged to the container", charged(small)))?;
    let destroyed = tree.destroy(small).map_err(|error| format!("destroy: {error:?}"))?;
    check(destroyed.still_charged == 0, || format!("{} pages charged at destroy", destroyed.still_charged))
}

crate::kernel_tests! {
    "socket_charges" => [
        a_containers_sockets_stay_within_its_quota_and_give_it_back,
    ],
}
