//! The network device's feature bits (virtio 1.2 §5.1.3) and the set this
//! driver asks for.

use crate::transport::Features;

/// Names for the network device's feature bits.
pub struct NetFeatures;

impl NetFeatures {
    /// `VIRTIO_NET_F_CSUM`: the device takes frames with partial checksums.
    pub const CSUM: Features = Features::bit(0);
    /// `VIRTIO_NET_F_GUEST_CSUM`: the driver takes frames with partial checksums.
    pub const GUEST_CSUM: Features = Features::bit(1);
    /// `VIRTIO_NET_F_MTU`: `mtu` in the configuration is the device's.
    pub const MTU: Features = Features::bit(3);
    /// `VIRTIO_NET_F_MAC`: `mac` in the configuration is the device's address.
    pub const MAC: Features = Features::bit(5);
    /// `VIRTIO_NET_F_MRG_RXBUF`: received frames may span buffers.
    pub const MRG_RXBUF: Features = Features::bit(15);
    /// `VIRTIO_NET_F_STATUS`: `status` says whether the link is up.
    pub const STATUS: Features = Features::bit(16);
}

/// What the driver asks a network device for: its address, MTU and link
/// status, and used-ring event indices. Every frame fits one receive
/// buffer (no `MRG_RXBUF`); no checksum offload yet (the stack computes
/// and checks every checksum).
pub fn wanted_net_features() -> Features {
    NetFeatures::MAC | NetFeatures::MTU | NetFeatures::STATUS | Features::RING_EVENT_IDX
}
