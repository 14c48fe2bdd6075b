//! The journal superblock (journal block 0): geometry, where the log
//! starts, features and checksum.
//!
//! Kernel `journal_superblock_t`, big-endian: header @0 (type 3 = v1,
//! 4 = v2), `s_blocksize` @0x0C, `s_maxlen` @0x10, `s_first` @0x14,
//! `s_sequence` @0x18, `s_start` @0x1C (0: the log is empty), `s_errno`
//! @0x20, features @0x24/0x28/0x2C, `s_uuid` @0x30, `s_nr_users` @0x40,
//! `s_checksum_type` (u8) @0x50, `s_checksum` @0xFC. The 1024 bytes are
//! kept, so fields this crate does not interpret are written back
//! unchanged. A v1 superblock has no features (the kernel ignores the
//! words). Checks follow the kernel's `journal_check_superblock`.
//! **Must never** accept a journal whose checksum or geometry is wrong:
//! every later position is trusted only because these checks passed.

use alloc::vec::Vec;

use crate::big_endian::{array, be32, byte, put_be32};
use crate::error::SuperblockError;
use crate::format::checksums::{superblock_checksum, SUPERBLOCK_CHECKSUM_OFFSET};
use crate::format::features::{BlockChecksums, Features};
use crate::format::header::{BlockHeader, BlockType};
use crate::log_geometry::LogGeometry;

/// Bytes of the journal superblock.
pub const SUPERBLOCK_BYTES: usize = 1024;
/// `s_checksum_type` for crc32c.
pub const CHECKSUM_TYPE_CRC32C: u8 = 4;
/// The smallest journal the kernel accepts (JBD2_MIN_JOURNAL_BLOCKS).
pub const MIN_JOURNAL_BLOCKS: u32 = 1024;

const BLOCK_SIZE_OFFSET: usize = 0x0C;
const MAX_LENGTH_OFFSET: usize = 0x10;
const FIRST_OFFSET: usize = 0x14;
const SEQUENCE_OFFSET: usize = 0x18;
const START_OFFSET: usize = 0x1C;
const ERRNO_OFFSET: usize = 0x20;
const COMPAT_OFFSET: usize = 0x24;
const INCOMPAT_OFFSET: usize = 0x28;
const RO_COMPAT_OFFSET: usize = 0x2C;
const UUID_OFFSET: usize = 0x30;
const CHECKSUM_TYPE_OFFSET: usize = 0x50;

/// Which superblock format the journal has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SuperblockVersion {
    /// Version 1: no features.
    Version1,
    /// Version 2: features, UUID, checksums.
    Version2,
}

/// A decoded journal superblock.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JournalSuperblock {
    /// Its format version.
    pub version: SuperblockVersion,
    /// `s_blocksize`.
    pub block_size: u32,
    /// `s_maxlen`: blocks in the journal, superblock included.
    pub max_length: u32,
    /// `s_first`: the first block of the log.
    pub first: u32,
    /// `s_sequence`: the first transaction expected in the log.
    pub sequence: u32,
    /// `s_start`: where the log starts (0: empty, nothing to recover).
    pub start: u32,
    /// `s_errno`: an error the file system recorded in its journal.
    pub errno: i32,
    /// The feature words (all zero for a v1 superblock).
    pub features: Features,
    /// `s_uuid`.
    pub uuid: [u8; 16],
    /// `s_checksum_type`.
    pub checksum_type: u8,
    raw: Vec<u8>,
}

impl JournalSuperblock {
    /// Decodes the superblock at the start of `block`, checking its magic,
    /// type and (v2/v3) checksum type and checksum.
    pub fn decode(block: &[u8]) -> Result<JournalSuperblock, SuperblockError> {
        let raw = block
            .get(..SUPERBLOCK_BYTES)
            .ok_or(SuperblockError::BadMagic)?
            .to_vec();
        let header = BlockHeader::decode(&raw).ok_or(SuperblockError::BadMagic)?;
        let version = match header.block_type {
            BlockType::SuperblockVersion1 => SuperblockVersion::Version1,
            BlockType::SuperblockVersion2 => SuperblockVersion::Version2,
            other => return Err(SuperblockError::NotASuperblock(other.value())),
        };
        let features = match version {
            SuperblockVersion::Version1 => Features::default(),
            SuperblockVersion::Version2 => Features {
                compat: be32(&raw, COMPAT_OFFSET),
                incompat: be32(&raw, INCOMPAT_OFFSET),
                ro_compat: be32(&raw, RO_COMPAT_OFFSET),
            },
        };
        let superblock = JournalSuperblock {
            version,
            block_size: be32(&raw, BLOCK_SIZE_OFFSET),
            max_length: be32(&raw, MAX_LENGTH_OFFSET),
            first: be32(&raw, FIRST_OFFSET),
            sequence: be32(&raw, SEQUENCE_OFFSET),
            start: be32(&raw, START_OFFSET),
            errno: be32(&raw, ERRNO_OFFSET) as i32,
            features,
            uuid: array(&raw, UUID_OFFSET).unwrap_or([0; 16]),
            checksum_type: byte(&raw, CHECKSUM_TYPE_OFFSET),
            raw,
        };
        superblock.check_features()?;
        Ok(superblock)
    }

    fn check_features(&self) -> Result<(), SuperblockError> {
        let features = &self.features;
        if features.unknown_incompat() != 0 || features.ro_compat != 0 {
            return Err(SuperblockError::UnsupportedFeatures(*features));
        }
        let v2_and_v3 = Features::INCOMPAT_CSUM_V2 | Features::INCOMPAT_CSUM_V3;
        let block_checksums = features.block_checksums() != BlockChecksums::Absent;
        if features.incompat & v2_and_v3 == v2_and_v3
            || (block_checksums && features.has_transaction_crc32())
        {
            return Err(SuperblockError::ChecksumVersionsConflict);
        }
        if block_checksums {
            if self.checksum_type != CHECKSUM_TYPE_CRC32C {
                return Err(SuperblockError::UnknownChecksumType(self.checksum_type));
            }
            let stored = be32(&self.raw, SUPERBLOCK_CHECKSUM_OFFSET);
            let computed = superblock_checksum(&self.raw);
            if stored != computed {
                return Err(SuperblockError::ChecksumMismatch { stored, computed });
            }
        }
        Ok(())
    }

    /// The log's geometry inside an area of `area_blocks` blocks of
    /// `area_block_size` bytes, after the kernel's geometry checks.
    pub fn geometry(
        &self,
        area_block_size: u32,
        area_blocks: u64,
    ) -> Result<LogGeometry, SuperblockError> {
        if self.block_size != area_block_size {
            return Err(SuperblockError::BlockSizeMismatch {
                journal: self.block_size,
                area: area_block_size,
            });
        }
        if u64::from(self.max_length) > area_blocks {
            return Err(SuperblockError::LongerThanArea {
                max_length: self.max_length,
                area_blocks,
            });
        }
        if self.first == 0 || self.first >= self.max_length {
            return Err(SuperblockError::FirstOutOfRange {
                first: self.first,
                max_length: self.max_length,
            });
        }
        if self.max_length < MIN_JOURNAL_BLOCKS {
            return Err(SuperblockError::TooShort(self.max_length));
        }
        Ok(LogGeometry::new(self.first, self.max_length))
    }

    /// This superblock with `wanted` features added, as the kernel's
    /// `jbd2_journal_set_features` does: turning on checksum v3 (or v2)
    /// turns off the other versions and sets the crc32c checksum type.
    /// The result still has to pass [`JournalSuperblock::decode`].
    pub fn with_features(&self, wanted: Features) -> JournalSuperblock {
        let mut features = self.features.union(wanted);
        let v3 = wanted.incompat & Features::INCOMPAT_CSUM_V3 != 0;
        let v2 = wanted.incompat & Features::INCOMPAT_CSUM_V2 != 0;
        if v3 || v2 {
            let other = if v3 {
                Features::INCOMPAT_CSUM_V2
            } else {
                Features::INCOMPAT_CSUM_V3
            };
            features.incompat &= !other;
            features.compat &= !Features::COMPAT_CHECKSUM;
        }
        let mut changed = self.clone();
        changed.features = features;
        if v3 || v2 {
            changed.checksum_type = CHECKSUM_TYPE_CRC32C;
        }
        changed
    }

    /// The 1024 bytes of this superblock, with the decoded fields written
    /// over the kept ones and, with v2/v3 checksums, a fresh checksum.
    pub fn encode(&self) -> Vec<u8> {
        let mut raw = self.raw.clone();
        put_be32(&mut raw, BLOCK_SIZE_OFFSET, self.block_size);
        put_be32(&mut raw, MAX_LENGTH_OFFSET, self.max_length);
        put_be32(&mut raw, FIRST_OFFSET, self.first);
        put_be32(&mut raw, SEQUENCE_OFFSET, self.sequence);
        put_be32(&mut raw, START_OFFSET, self.start);
        put_be32(&mut raw, ERRNO_OFFSET, self.errno as u32);
        if self.version == SuperblockVersion::Version2 {
            put_be32(&mut raw, COMPAT_OFFSET, self.features.compat);
            put_be32(&mut raw, INCOMPAT_OFFSET, self.features.incompat);
            put_be32(&mut raw, RO_COMPAT_OFFSET, self.features.ro_compat);
            raw[UUID_OFFSET..UUID_OFFSET + 16].copy_from_slice(&self.uuid);
            raw[CHECKSUM_TYPE_OFFSET] = self.checksum_type;
        }
        if self.features.block_checksums() != BlockChecksums::Absent {
            let checksum = superblock_checksum(&raw);
            put_be32(&mut raw, SUPERBLOCK_CHECKSUM_OFFSET, checksum);
        }
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::big_endian::put;
    use alloc::vec;

    /// The superblock debugfs 1.47 left after `jo -c` (1 KiB blocks).
    fn real_superblock() -> Vec<u8> {
        let mut block = vec![0u8; 1024];
        let words: [(usize, u32); 15] = [
            (0x0, 0xc03b3998),
            (0x4, 4),
            (0xc, 0x400),
            (0x10, 0x1000),
            (0x14, 1),
            (0x18, 1),
            (0x1c, 1),
            (0x28, 0x12),
            (0x30, 0xc23fdd47),
            (0x34, 0x02084bc3),
            (0x38, 0xad87928e),
            (0x3c, 0xedbb7b8d),
            (0x40, 1),
            (0x50, 0x04000000),
            (0xfc, 0xc94e89bd),
        ];
        for (offset, word) in words {
            put(&mut block, offset, &word.to_be_bytes());
        }
        block
    }

    #[test]
    fn real_superblock_decodes_and_encodes_to_the_same_bytes() {
        let block = real_superblock();
        let superblock = JournalSuperblock::decode(&block).unwrap();
        assert_eq!(superblock.version, SuperblockVersion::Version2);
        assert_eq!(
            (
                superblock.block_size,
                superblock.max_length,
                superblock.first
            ),
            (1024, 4096, 1)
        );
        assert_eq!((superblock.sequence, superblock.start), (1, 1));
        assert_eq!(
            superblock.features.block_checksums(),
            BlockChecksums::Version3
        );
        assert!(superblock.features.has_64bit());
        assert_eq!(superblock.encode(), block);
        let geometry = superblock.geometry(1024, 4096).unwrap();
        assert_eq!((geometry.first(), geometry.end()), (1, 4096));
    }

    #[test]
    fn flipped_byte_fails_the_checksum() {
        let mut block = real_superblock();
        block[0x18] ^= 1;
        assert!(matches!(
            JournalSuperblock::decode(&block),
            Err(SuperblockError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn geometry_checks_follow_the_kernel() {
        let superblock = JournalSuperblock::decode(&real_superblock()).unwrap();
        assert!(matches!(
            superblock.geometry(4096, 4096),
            Err(SuperblockError::BlockSizeMismatch { .. })
        ));
        assert!(matches!(
            superblock.geometry(1024, 4095),
            Err(SuperblockError::LongerThanArea { .. })
        ));
        let mut moved = superblock.clone();
        moved.first = 4096;
        assert!(matches!(
            moved.geometry(1024, 4096),
            Err(SuperblockError::FirstOutOfRange { .. })
        ));
        let reencoded = JournalSuperblock::decode(&moved.encode()).unwrap();
        assert_eq!(reencoded.first, 4096);
        assert_eq!(reencoded.encode(), moved.encode());
    }
}
