//! The interface `ioctl`s on any socket (`struct ifreq`: a 16-byte name,
//! then a 24-byte union): `SIOCGIFINDEX`, `SIOCGIFNAME`, `SIOCGIFFLAGS`,
//! `SIOCGIFMTU`, `SIOCGIFTXQLEN`, `SIOCGIFHWADDR`, `SIOCGIFADDR`,
//! `SIOCGIFNETMASK`, read
//! from the network's interfaces as route netlink reports them (musl's
//! `if_nametoindex` and `if_indextoname` use the first two). Changing an
//! interface is refused (EPERM: the interfaces are the kernel's).

use super::{value, Call, CallResult};
use linux_abi::Errno;
use net::netlink::InterfaceInfo;
use net::IpAddress;

const SIOCGIFNAME: u64 = 0x8910;
const SIOCGIFFLAGS: u64 = 0x8913;
const SIOCSIFFLAGS: u64 = 0x8914;
const SIOCGIFADDR: u64 = 0x8915;
const SIOCSIFADDR: u64 = 0x8916;
const SIOCGIFNETMASK: u64 = 0x891b;
const SIOCSIFNETMASK: u64 = 0x891c;
const SIOCGIFMTU: u64 = 0x8921;
const SIOCSIFMTU: u64 = 0x8922;
const SIOCGIFHWADDR: u64 = 0x8927;
const SIOCGIFINDEX: u64 = 0x8933;
const SIOCGIFTXQLEN: u64 = 0x8942;
/// `sizeof(struct ifreq)`.
const REQUEST_BYTES: usize = 40;
const NAME_BYTES: usize = 16;
const AF_INET: u16 = 2;

/// Whether `request` is one of these (the caller has a socket).
pub fn is_interface_request(request: u64) -> bool {
    matches!(
        request,
        SIOCGIFNAME | SIOCGIFFLAGS | SIOCSIFFLAGS | SIOCGIFADDR | SIOCSIFADDR | SIOCGIFNETMASK | SIOCSIFNETMASK | SIOCGIFMTU | SIOCSIFMTU | SIOCGIFHWADDR | SIOCGIFINDEX | SIOCGIFTXQLEN
    )
}

/// Answers `request` on the `struct ifreq` at `address`, for a socket
/// (`inet`: an Internet one; the address requests are the Internet
/// family's, ENOTTY on other sockets, as on Linux).
pub fn ioctl(call: &mut Call<'_>, request: u64, address: u64, inet: bool) -> CallResult {
    if matches!(request, SIOCGIFADDR | SIOCSIFADDR | SIOCGIFNETMASK | SIOCSIFNETMASK) && !inet {
        return Err(Errno::ENOTTY);
    }
    if matches!(request, SIOCSIFFLAGS | SIOCSIFADDR | SIOCSIFNETMASK | SIOCSIFMTU) {
        return Err(Errno::EPERM);
    }
    let mut bytes = [0u8; REQUEST_BYTES];
    call.read_in(address, &mut bytes)?;
    let interfaces = crate::inet_sockets::look(|network| Ok(network.interfaces()))?;
    let interface = if request == SIOCGIFNAME {
        let index = i32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
        interfaces.iter().find(|interface| i64::from(interface.index) == i64::from(index))
    } else {
        let name = bytes[..NAME_BYTES].split(|byte| *byte == 0).next().unwrap_or_default();
        interfaces.iter().find(|interface| interface.name.as_bytes() == name)
    }
    .ok_or(Errno::ENODEV)?;
    let union = &mut bytes[NAME_BYTES..];
    match request {
        SIOCGIFNAME => {
            bytes[..NAME_BYTES].fill(0);
            bytes[..interface.name.len()].copy_from_slice(interface.name.as_bytes());
        }
        SIOCGIFINDEX => union[..4].copy_from_slice(&interface.index.to_le_bytes()),
        SIOCGIFFLAGS => union[..2].copy_from_slice(&(interface.flags() as u16).to_le_bytes()),
        SIOCGIFMTU => union[..4].copy_from_slice(&interface.mtu.to_le_bytes()),
        SIOCGIFTXQLEN => union[..4].copy_from_slice(&net::netlink::TRANSMIT_QUEUE_LENGTH.to_le_bytes()),
        SIOCGIFHWADDR => {
            union.fill(0);
            union[..2].copy_from_slice(&interface.hardware_type().to_le_bytes());
            union[2..8].copy_from_slice(&interface.hardware);
        }
        _ => {
            let (address, prefix) = first_ipv4(interface).ok_or(Errno::EADDRNOTAVAIL)?;
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            let value = if request == SIOCGIFADDR { address } else { mask.to_be_bytes() };
            union.fill(0);
            union[..2].copy_from_slice(&AF_INET.to_le_bytes());
            union[4..8].copy_from_slice(&value);
        }
    }
    call.write_out(address, &bytes)?;
    value(0)
}

fn first_ipv4(interface: &InterfaceInfo) -> Option<([u8; 4], u8)> {
    interface.addresses.iter().find_map(|(address, prefix)| match address {
        IpAddress::Ipv4(v4) => Some((v4.octets(), *prefix)),
        _ => None,
    })
}
