//! Who holds which port: Linux's rules for `bind` (a port and address
//! taken by one socket, unless `SO_REUSEPORT` on both, or for TCP
//! `SO_REUSEADDR` on both with neither listening, or for UDP
//! `SO_REUSEADDR` on both) and ephemeral ports for sockets that send or
//! connect before binding (32768–60999, Linux's default range).
//!
//! Must never hand out a port that conflicts with a binding.

use alloc::vec::Vec;

use smoltcp::wire::IpAddress;

use crate::Errno;

/// Linux's `ip_local_port_range` default.
pub const EPHEMERAL: core::ops::RangeInclusive<u16> = 32768..=60999;

/// The protocol a binding is for (TCP and UDP ports are apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// UDP-Lite (its own ports, UDP's rules).
    UdpLite,
}

/// What a socket asks for when it binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Which socket (the network's number for it).
    pub owner: usize,
    /// The protocol.
    pub protocol: Protocol,
    /// The address (unspecified: every address of its family).
    pub address: IpAddress,
    /// Whether an unspecified IPv6 address leaves IPv4 alone (`IPV6_V6ONLY`).
    pub v6_only: bool,
    /// `SO_REUSEADDR`.
    pub reuse_address: bool,
    /// `SO_REUSEPORT`.
    pub reuse_port: bool,
}

struct Binding {
    claim: Claim,
    port: u16,
    listening: bool,
}

/// Every binding.
pub struct PortTable {
    bindings: Vec<Binding>,
    next_ephemeral: u16,
}

impl PortTable {
    /// No port taken.
    pub const fn new() -> PortTable {
        PortTable { bindings: Vec::new(), next_ephemeral: *EPHEMERAL.start() }
    }

    /// Binds `claim` to `port` (0: an ephemeral one); the port. EADDRINUSE
    /// when taken, EAGAIN when no ephemeral port is free.
    pub fn bind(&mut self, claim: Claim, port: u16) -> Result<u16, Errno> {
        self.bindings.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        let port = if port == 0 { self.free_ephemeral(&claim)? } else { port };
        if self.bindings.iter().any(|held| held.port == port && conflicts(held, &claim)) {
            return Err(Errno::EADDRINUSE);
        }
        self.bindings.push(Binding { claim, port, listening: false });
        Ok(port)
    }

    /// Marks `owner`'s binding listening: EADDRINUSE if another socket
    /// shares its port in a way a listener may not.
    pub fn listen(&mut self, owner: usize) -> Result<(), Errno> {
        let Some(index) = self.bindings.iter().position(|held| held.claim.owner == owner) else { return Err(Errno::EINVAL) };
        let (claim, port) = (self.bindings[index].claim, self.bindings[index].port);
        if self.bindings.iter().any(|held| held.claim.owner != owner && held.port == port && conflicts(held, &claim)) {
            return Err(Errno::EADDRINUSE);
        }
        self.bindings[index].listening = true;
        Ok(())
    }

    /// Whether some socket's binding takes a `protocol` packet sent to
    /// `address`:`port` (its address or an unspecified one that covers it).
    pub fn receives(&self, protocol: Protocol, address: IpAddress, port: u16) -> bool {
        let probe = Claim { owner: usize::MAX, protocol, address, v6_only: false, reuse_address: false, reuse_port: false };
        self.bindings.iter().any(|held| held.port == port && held.claim.protocol == protocol && overlap(&held.claim, &probe))
    }

    /// Lets go of `owner`'s binding.
    pub fn release(&mut self, owner: usize) {
        self.bindings.retain(|held| held.claim.owner != owner);
    }

    fn free_ephemeral(&mut self, claim: &Claim) -> Result<u16, Errno> {
        let span = EPHEMERAL.end() - EPHEMERAL.start() + 1;
        for _ in 0..span {
            let port = self.next_ephemeral;
            self.next_ephemeral = if port == *EPHEMERAL.end() { *EPHEMERAL.start() } else { port + 1 };
            // An ephemeral port is the socket's alone, whatever its options.
            if !self.bindings.iter().any(|held| held.port == port && held.claim.protocol == claim.protocol) {
                return Ok(port);
            }
        }
        Err(Errno::EAGAIN)
    }
}

/// Whether `claim` may not share a port with `held` (Linux: with
/// `SO_REUSEADDR` on both, only a listener holds its port alone).
fn conflicts(held: &Binding, claim: &Claim) -> bool {
    let other = &held.claim;
    if other.protocol != claim.protocol || !overlap(other, claim) {
        return false;
    }
    if other.reuse_port && claim.reuse_port {
        return false;
    }
    let both_reuse = other.reuse_address && claim.reuse_address;
    match claim.protocol {
        Protocol::Udp | Protocol::UdpLite => !both_reuse,
        Protocol::Tcp => !(both_reuse && !held.listening),
    }
}

/// Whether two bindings' addresses meet.
fn overlap(one: &Claim, other: &Claim) -> bool {
    let covers = |wide: &Claim, narrow: &Claim| {
        wide.address.is_unspecified()
            && match (wide.address, narrow.address) {
                (IpAddress::Ipv4(_), IpAddress::Ipv4(_)) | (IpAddress::Ipv6(_), IpAddress::Ipv6(_)) => true,
                // `::` covers IPv4 too, unless IPV6_V6ONLY.
                (IpAddress::Ipv6(_), IpAddress::Ipv4(_)) => !wide.v6_only,
                (IpAddress::Ipv4(_), IpAddress::Ipv6(_)) => false,
            }
    };
    one.address == other.address || covers(one, other) || covers(other, one)
}
