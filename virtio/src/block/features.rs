//! The block device's feature bits (virtio 1.2 §5.2.3) and the set this
//! driver asks for.

use crate::transport::Features;

/// Names for the block device's feature bits.
pub struct BlockFeatures;

impl BlockFeatures {
    /// `VIRTIO_BLK_F_SIZE_MAX`: `size_max` bounds each segment.
    pub const SIZE_MAX: Features = Features::bit(1);
    /// `VIRTIO_BLK_F_SEG_MAX`: `seg_max` bounds segments per request.
    pub const SEG_MAX: Features = Features::bit(2);
    /// `VIRTIO_BLK_F_GEOMETRY`: legacy cylinder/head/sector geometry.
    pub const GEOMETRY: Features = Features::bit(4);
    /// `VIRTIO_BLK_F_RO`: the disk is read-only.
    pub const READ_ONLY: Features = Features::bit(5);
    /// `VIRTIO_BLK_F_BLK_SIZE`: `blk_size` gives the logical block size.
    pub const BLK_SIZE: Features = Features::bit(6);
    /// `VIRTIO_BLK_F_FLUSH`: the device has a write cache and takes
    /// `VIRTIO_BLK_T_FLUSH`.
    pub const FLUSH: Features = Features::bit(9);
    /// `VIRTIO_BLK_F_TOPOLOGY`: alignment hints.
    pub const TOPOLOGY: Features = Features::bit(10);
    /// `VIRTIO_BLK_F_CONFIG_WCE`: the cache mode can be switched.
    pub const CONFIG_WCE: Features = Features::bit(11);
    /// `VIRTIO_BLK_F_MQ`: more than one request queue.
    pub const MQ: Features = Features::bit(12);
    /// `VIRTIO_BLK_F_DISCARD`.
    pub const DISCARD: Features = Features::bit(13);
    /// `VIRTIO_BLK_F_WRITE_ZEROES`.
    pub const WRITE_ZEROES: Features = Features::bit(14);
}

/// What the driver asks a block device for: flush whenever offered (so
/// writes are durable only after a flush the driver can ask for), the
/// read-only flag, and the limits it honours. One queue: no `MQ`.
pub fn wanted_block_features() -> Features {
    BlockFeatures::FLUSH
        | BlockFeatures::READ_ONLY
        | BlockFeatures::BLK_SIZE
        | BlockFeatures::SEG_MAX
        | BlockFeatures::SIZE_MAX
        | Features::RING_EVENT_IDX
}
