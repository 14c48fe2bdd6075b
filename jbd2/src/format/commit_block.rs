//! Commit blocks: the record that makes a transaction count.
//!
//! Kernel `struct commit_header`, big-endian: the 12-byte header, then
//! `h_chksum_type` (u8) @0x0C, `h_chksum_size` (u8) @0x0D, two pad bytes,
//! `h_chksum[8]` (u32 each) @0x10, `h_commit_sec` (u64) @0x30 and
//! `h_commit_nsec` (u32) @0x38; the rest of the block is zero. With v1
//! checksums, type 1 (crc32), size 4 and `h_chksum[0]` the transaction's
//! big-endian CRC-32; with v2/v3, type and size 0 and `h_chksum[0]` the
//! crc32c of the block. **Must never** carry both (opening refuses
//! journals with both features).

use alloc::vec;
use alloc::vec::Vec;

use crate::big_endian::{be32, be64, byte, put_be32, put_be64};
use crate::format::checksums::{Checksummer, COMMIT_CHECKSUM_OFFSET};
use crate::format::header::{BlockHeader, BlockType};

/// `h_chksum_type` of a v1 CRC-32 (JBD2_CRC32_CHKSUM).
pub const CHECKSUM_TYPE_CRC32: u8 = 1;
/// `h_chksum_size` of a v1 CRC-32 (JBD2_CRC32_CHKSUM_SIZE).
pub const CHECKSUM_SIZE_CRC32: u8 = 4;

const CHECKSUM_TYPE_OFFSET: usize = 0x0C;
const CHECKSUM_SIZE_OFFSET: usize = 0x0D;
const COMMIT_SECONDS_OFFSET: usize = 0x30;
const COMMIT_NANOSECONDS_OFFSET: usize = 0x38;

/// When a transaction committed (wall-clock time, as the kernel stores).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub struct CommitTime {
    /// Seconds since the Unix epoch.
    pub seconds: u64,
    /// Nanoseconds within the second.
    pub nanoseconds: u32,
}

/// The fields of a commit block after its header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CommitFields {
    /// `h_chksum_type`.
    pub checksum_type: u8,
    /// `h_chksum_size`.
    pub checksum_size: u8,
    /// `h_chksum[0]`.
    pub first_checksum: u32,
    /// `h_commit_sec` and `h_commit_nsec`.
    pub time: CommitTime,
}

impl CommitFields {
    /// The fields of commit block `block`.
    pub fn decode(block: &[u8]) -> CommitFields {
        CommitFields {
            checksum_type: byte(block, CHECKSUM_TYPE_OFFSET),
            checksum_size: byte(block, CHECKSUM_SIZE_OFFSET),
            first_checksum: be32(block, COMMIT_CHECKSUM_OFFSET),
            time: CommitTime {
                seconds: be64(block, COMMIT_SECONDS_OFFSET),
                nanoseconds: be32(block, COMMIT_NANOSECONDS_OFFSET),
            },
        }
    }
}

/// Which checksum a commit block carries besides the v2/v3 one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TransactionCrc {
    /// None (journals without the v1 `CHECKSUM` feature).
    Absent,
    /// The v1 big-endian CRC-32 over the transaction's descriptor and
    /// data blocks.
    Crc32(u32),
}

/// The commit block of transaction `sequence`, sealed with its checksum.
pub fn encode_commit(
    block_size: usize,
    sequence: u32,
    time: CommitTime,
    transaction_crc: TransactionCrc,
    checksummer: &Checksummer,
) -> Vec<u8> {
    let mut block = vec![0u8; block_size];
    BlockHeader {
        block_type: BlockType::Commit,
        sequence,
    }
    .encode(&mut block);
    if let TransactionCrc::Crc32(crc) = transaction_crc {
        block[CHECKSUM_TYPE_OFFSET] = CHECKSUM_TYPE_CRC32;
        block[CHECKSUM_SIZE_OFFSET] = CHECKSUM_SIZE_CRC32;
        put_be32(&mut block, COMMIT_CHECKSUM_OFFSET, crc);
    }
    put_be64(&mut block, COMMIT_SECONDS_OFFSET, time.seconds);
    put_be32(&mut block, COMMIT_NANOSECONDS_OFFSET, time.nanoseconds);
    checksummer.seal_commit(&mut block);
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::features::BlockChecksums;

    #[test]
    fn commit_block_round_trips() {
        let checksummer = Checksummer::new(BlockChecksums::Version3, &[1; 16]);
        let time = CommitTime {
            seconds: 0x6b07_8a40,
            nanoseconds: 0x1f3a_3f58,
        };
        let block = encode_commit(1024, 5, time, TransactionCrc::Absent, &checksummer);
        assert_eq!(
            BlockHeader::decode(&block),
            Some(BlockHeader {
                block_type: BlockType::Commit,
                sequence: 5
            })
        );
        assert!(checksummer.commit_is_valid(&block));
        let fields = CommitFields::decode(&block);
        assert_eq!(
            (fields.checksum_type, fields.checksum_size, fields.time),
            (0, 0, time)
        );
    }

    #[test]
    fn v1_commit_carries_type_size_and_crc() {
        let none = Checksummer::new(BlockChecksums::Absent, &[0; 16]);
        let block = encode_commit(
            1024,
            5,
            CommitTime::default(),
            TransactionCrc::Crc32(0x1234),
            &none,
        );
        let fields = CommitFields::decode(&block);
        assert_eq!(fields.checksum_type, CHECKSUM_TYPE_CRC32);
        assert_eq!(fields.checksum_size, CHECKSUM_SIZE_CRC32);
        assert_eq!(fields.first_checksum, 0x1234);
    }
}
