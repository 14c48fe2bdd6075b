//! The block device's configuration (virtio 1.2 §5.2.4), read once after
//! feature negotiation, with only the fields the negotiated features make
//! meaningful.
//!
//! Must never: trust a limit whose feature was not negotiated, or read the
//! configuration across a generation change.

use super::BlockFeatures;
use crate::transport::{read_config_consistently, read_config_u64, Features, Transport, TransportError};

const CAPACITY: u32 = 0;
const SIZE_MAX: u32 = 8;
const SEG_MAX: u32 = 12;
const BLK_SIZE: u32 = 20;
const NUM_QUEUES: u32 = 34;

/// Whether the device takes writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    /// Reads and writes.
    ReadWrite,
    /// `VIRTIO_BLK_F_RO`: reads only.
    ReadOnly,
}

/// Whether the device has a write cache the driver can flush.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flush {
    /// `VIRTIO_BLK_F_FLUSH` negotiated: writes are durable after a flush.
    Negotiated,
    /// Not offered: there is nothing to flush.
    NotNegotiated,
}

/// What the driver knows about the disk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BlockConfig {
    /// The size in 512-byte sectors.
    pub capacity_sectors: u64,
    /// The largest data buffer (`size_max`), if limited.
    pub segment_size_limit: Option<u32>,
    /// The most data buffers per request (`seg_max`), if limited.
    pub segment_limit: Option<u32>,
    /// The logical block size (`blk_size`), if given.
    pub block_size: Option<u32>,
    /// The number of request queues (`num_queues`), with `MQ`.
    pub queue_count: Option<u16>,
    /// Read-write or read-only.
    pub access: Access,
    /// Whether flush is available.
    pub flush: Flush,
}

impl BlockConfig {
    /// Reads the configuration as of one generation. A limit of 0 counts
    /// as no limit given.
    pub fn read<T: Transport + ?Sized>(transport: &T, negotiated: Features) -> Result<Self, TransportError> {
        read_config_consistently(transport, |transport| {
            let optional = |feature, offset| read_optional(transport, negotiated, feature, offset);
            Ok(BlockConfig {
                capacity_sectors: read_config_u64(transport, CAPACITY)?,
                segment_size_limit: optional(BlockFeatures::SIZE_MAX, SIZE_MAX)?,
                segment_limit: optional(BlockFeatures::SEG_MAX, SEG_MAX)?,
                block_size: optional(BlockFeatures::BLK_SIZE, BLK_SIZE)?,
                queue_count: match negotiated.contains(BlockFeatures::MQ) {
                    true => Some(transport.read_config_u16(NUM_QUEUES)?),
                    false => None,
                },
                access: match negotiated.contains(BlockFeatures::READ_ONLY) {
                    true => Access::ReadOnly,
                    false => Access::ReadWrite,
                },
                flush: match negotiated.contains(BlockFeatures::FLUSH) {
                    true => Flush::Negotiated,
                    false => Flush::NotNegotiated,
                },
            })
        })
    }

    /// Whether the device refuses writes.
    pub fn is_read_only(&self) -> bool {
        self.access == Access::ReadOnly
    }
}

fn read_optional<T: Transport + ?Sized>(
    transport: &T,
    negotiated: Features,
    feature: Features,
    offset: u32,
) -> Result<Option<u32>, TransportError> {
    if !negotiated.contains(feature) {
        return Ok(None);
    }
    match transport.read_config_u32(offset)? {
        0 => Ok(None),
        limit => Ok(Some(limit)),
    }
}
