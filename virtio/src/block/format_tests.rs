//! Host tests of the block device's formats: the request header and
//! status byte, the configuration read by negotiated features, and the
//! features the driver asks for.

use super::tests::{config, device_config_bytes, DISK_SECTORS};
use super::*;
use crate::transport::fake_modern::{fake_modern, modern_state};
use crate::transport::Features;
#[test]
fn the_header_is_type_reserved_sector_little_endian() {
    let header = RequestHeader {
        request_type: RequestType::Out,
        sector: 0x0102_0304_0506_0708,
    };
    assert_eq!(header.to_bytes(), [1, 0, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1]);
    let numbers = [
        RequestType::In,
        RequestType::Flush,
        RequestType::GetId,
        RequestType::Discard,
        RequestType::WriteZeroes,
    ];
    assert_eq!(numbers.map(RequestType::number), [0, 4, 8, 11, 13]);
    assert_eq!(
        [0, 1, 2, 9].map(Status::from_byte),
        [Status::Ok, Status::IoError, Status::Unsupported, Status::Unknown(9)]
    );
}

#[test]
fn the_configuration_holds_only_what_was_negotiated() {
    let mut device = modern_state(Features::VERSION_1, 1, 64);
    device.device_config = device_config_bytes();
    let (transport, _state) = fake_modern(device, 4);
    let everything = BlockFeatures::SIZE_MAX
        | BlockFeatures::SEG_MAX
        | BlockFeatures::BLK_SIZE
        | BlockFeatures::MQ
        | BlockFeatures::READ_ONLY;
    let full = BlockConfig::read(&transport, everything).unwrap();
    assert_eq!(full.capacity_sectors, DISK_SECTORS as u64);
    assert_eq!(
        (
            full.segment_size_limit,
            full.segment_limit,
            full.block_size,
            full.queue_count
        ),
        (Some(4096), Some(126), Some(4096), Some(4))
    );
    assert!(full.is_read_only());
    assert_eq!(full.flush, Flush::NotNegotiated);
    let bare = BlockConfig::read(&transport, BlockFeatures::FLUSH).unwrap();
    assert_eq!(bare, config(DISK_SECTORS as u64));
}

#[test]
fn wanted_features_ask_for_flush_and_limits_but_not_multiqueue() {
    let wanted = wanted_block_features();
    assert!(wanted.contains(BlockFeatures::FLUSH | BlockFeatures::READ_ONLY | BlockFeatures::SEG_MAX));
    assert!(!wanted.contains(BlockFeatures::MQ));
}
