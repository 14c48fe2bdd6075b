//! The network device's configuration (virtio 1.2 §5.1.4): its hardware
//! address, link status and MTU, read once after feature negotiation.
//!
//! Must never: trust a field whose feature was not negotiated.

use super::NetFeatures;
use crate::transport::{read_config_consistently, Features, Transport, TransportError};

const MAC: u32 = 0;
const STATUS: u32 = 6;
const MTU: u32 = 10;
/// `VIRTIO_NET_S_LINK_UP`.
const LINK_UP: u16 = 1;
/// Ethernet's MTU, when the device names none.
const ETHERNET_MTU: u16 = 1500;

/// What the driver knows about the network device.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NetConfig {
    /// Its hardware address (a locally administered one of ours without `MAC`).
    pub mac: [u8; 6],
    /// Whether the link is up (up when the device cannot say).
    pub link_up: bool,
    /// The largest IP packet it carries (at most 1500: one receive buffer).
    pub mtu: u16,
}

impl NetConfig {
    /// Reads the configuration the `negotiated` features make meaningful.
    pub fn read<T: Transport + ?Sized>(transport: &T, negotiated: Features) -> Result<Self, TransportError> {
        read_config_consistently(transport, |transport| {
            let mut mac = [0x02, 0x4c, 0x41, 0x4d, 0x49, 0x4e];
            if negotiated.contains(NetFeatures::MAC) {
                for (index, byte) in mac.iter_mut().enumerate() {
                    *byte = transport.read_config_u8(MAC + index as u32)?;
                }
            }
            let link_up = !negotiated.contains(NetFeatures::STATUS) || transport.read_config_u16(STATUS)? & LINK_UP != 0;
            let mtu = if negotiated.contains(NetFeatures::MTU) { transport.read_config_u16(MTU)?.clamp(68, ETHERNET_MTU) } else { ETHERNET_MTU };
            Ok(NetConfig { mac, link_up, mtu })
        })
    }
}
