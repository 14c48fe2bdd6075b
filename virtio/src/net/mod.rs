//! The virtio network device (virtio 1.2 §5.1): feature bits, the device
//! configuration, the packet slots of the receive and transmit queues
//! (each frame behind the 12-byte `virtio_net_hdr`), and the frames that
//! wait for a transmit slot.

mod config;
mod features;
mod packets;
mod transmit;

#[cfg(test)]
mod tests;

pub use config::NetConfig;
pub use features::{wanted_net_features, NetFeatures};
pub use packets::{PacketError, PacketSlots, Received, HEADER_BYTES, LARGEST_FRAME, SLOT_BYTES};
pub use transmit::{TransmitQueue, Transmitted};
