//! The crc32c checksums of journal checksum v2/v3, in one place.
//!
//! Verified against journals written by debugfs 1.47 (the tests below
//! hold blocks copied from one):
//! - seed = crc32c(!0, s_uuid) (`j_csum_seed`);
//! - superblock: crc32c(!0, the 1024 bytes with `s_checksum` zeroed) — not
//!   seeded from the UUID;
//! - descriptor and revoke tails: crc32c(seed, the block with its last 4
//!   bytes zeroed);
//! - commit block: crc32c(seed, the block with `h_chksum[0]` zeroed), with
//!   `h_chksum_type` and `h_chksum_size` 0;
//! - data-block tag: crc32c(crc32c(seed, big-endian sequence), the block as
//!   written in the log, i.e. escaped); v3 stores 32 bits, v2 the low 16.
//!
//! All are the raw update of [`crate::crc32c_update`]. **Must never**
//! copy a block to zero a field: the zeroed field is fed as zeros.

use crate::big_endian::{be16, be32, put_be32};
use crate::crc32c::crc32c_update;
use crate::format::features::BlockChecksums;

/// Offset of `s_checksum` in the journal superblock.
pub const SUPERBLOCK_CHECKSUM_OFFSET: usize = 0xFC;
/// Offset of `h_chksum[0]` in a commit block.
pub const COMMIT_CHECKSUM_OFFSET: usize = 0x10;

/// The checksums a journal carries, with its seed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Checksummer {
    scheme: BlockChecksums,
    seed: u32,
}

/// crc32c over `bytes` with the 4 bytes at `field` taken as zeros.
fn crc_with_zeroed_field(crc: u32, bytes: &[u8], field: usize) -> u32 {
    let field = field.min(bytes.len());
    let after = field.saturating_add(4).min(bytes.len());
    let crc = crc32c_update(crc, &bytes[..field]);
    let crc = crc32c_update(crc, &[0u8; 4][..after - field]);
    crc32c_update(crc, &bytes[after..])
}

/// The superblock checksum of `superblock` (its 1024 bytes).
pub fn superblock_checksum(superblock: &[u8]) -> u32 {
    crc_with_zeroed_field(!0, superblock, SUPERBLOCK_CHECKSUM_OFFSET)
}

impl Checksummer {
    /// The checksums of a journal using `scheme`, seeded from `uuid`.
    pub fn new(scheme: BlockChecksums, uuid: &[u8; 16]) -> Checksummer {
        Checksummer {
            scheme,
            seed: crc32c_update(!0, uuid),
        }
    }

    /// Which per-block checksums are in use.
    pub fn scheme(&self) -> BlockChecksums {
        self.scheme
    }

    fn enabled(&self) -> bool {
        self.scheme != BlockChecksums::Absent
    }

    fn tail_offset(block: &[u8]) -> usize {
        block.len().saturating_sub(4)
    }

    /// The tail checksum a descriptor or revoke block should carry.
    pub fn tail_checksum(&self, block: &[u8]) -> u32 {
        crc_with_zeroed_field(self.seed, block, Self::tail_offset(block))
    }

    /// Whether the tail of a descriptor or revoke block is right (always
    /// when the journal has no v2/v3 checksums).
    pub fn tail_is_valid(&self, block: &[u8]) -> bool {
        !self.enabled() || be32(block, Self::tail_offset(block)) == self.tail_checksum(block)
    }

    /// Stores the tail checksum (nothing without v2/v3).
    pub fn seal_tail(&self, block: &mut [u8]) {
        if self.enabled() {
            let checksum = self.tail_checksum(block);
            put_be32(block, Self::tail_offset(block), checksum);
        }
    }

    /// The checksum a commit block should carry.
    pub fn commit_checksum(&self, block: &[u8]) -> u32 {
        crc_with_zeroed_field(self.seed, block, COMMIT_CHECKSUM_OFFSET)
    }

    /// Whether a commit block's v2/v3 checksum is right (always without).
    pub fn commit_is_valid(&self, block: &[u8]) -> bool {
        !self.enabled() || be32(block, COMMIT_CHECKSUM_OFFSET) == self.commit_checksum(block)
    }

    /// Stores the commit checksum (nothing without v2/v3).
    pub fn seal_commit(&self, block: &mut [u8]) {
        if self.enabled() {
            let checksum = self.commit_checksum(block);
            put_be32(block, COMMIT_CHECKSUM_OFFSET, checksum);
        }
    }

    /// The full 32-bit checksum of a logged data block (as written in the
    /// log) of transaction `sequence`.
    pub fn data_checksum(&self, sequence: u32, logged: &[u8]) -> u32 {
        let crc = crc32c_update(self.seed, &sequence.to_be_bytes());
        crc32c_update(crc, logged)
    }

    /// Whether `stored` (the tag's checksum field: 32 bits with v3, 16 with
    /// v2) matches the logged block (always without v2/v3).
    pub fn data_is_valid(&self, sequence: u32, logged: &[u8], stored: u32) -> bool {
        let full = self.data_checksum(sequence, logged);
        match self.scheme {
            BlockChecksums::Absent => true,
            BlockChecksums::Version2 => stored == full & 0xFFFF,
            BlockChecksums::Version3 => stored == full,
        }
    }
}

/// Reads a v2 tag checksum (16 bits at `offset`) widened to 32.
pub(crate) fn tag_checksum16(tag: &[u8], offset: usize) -> u32 {
    u32::from(be16(tag, offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::big_endian::put;
    use alloc::vec;
    use alloc::vec::Vec;

    /// A 1024-byte block from 4-byte words at offsets (from a real image).
    fn block(words: &[(usize, u32)]) -> Vec<u8> {
        let mut block = vec![0u8; 1024];
        for &(offset, word) in words {
            put(&mut block, offset, &word.to_be_bytes());
        }
        block
    }

    const UUID: [u8; 16] = [
        0xc2, 0x3f, 0xdd, 0x47, 0x02, 0x08, 0x4b, 0xc3, 0xad, 0x87, 0x92, 0x8e, 0xed, 0xbb, 0x7b,
        0x8d,
    ];

    fn v3() -> Checksummer {
        Checksummer::new(BlockChecksums::Version3, &UUID)
    }

    #[test]
    fn superblock_checksum_matches_mkfs_and_debugfs() {
        let superblock = block(&[
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
        ]);
        assert_eq!(superblock_checksum(&superblock), 0xc94e89bd);
    }

    #[test]
    fn descriptor_tail_matches_debugfs() {
        let descriptor = block(&[
            (0x0, 0xc03b3998),
            (0x4, 1),
            (0x8, 1),
            (0xc, 300),
            (0x18, 0x4fe89a5f),
            (0x2c, 301),
            (0x30, 0xa),
            (0x38, 0xba4ccaf3),
            (0xcc, 0xc23fdd47),
            (0xd0, 0x02084bc3),
            (0xd4, 0xad87928e),
            (0xd8, 0xedbb7b8d),
            (0x3fc, 0xd03905f7),
        ]);
        assert!(v3().tail_is_valid(&descriptor));
        assert_eq!(v3().tail_checksum(&descriptor), 0xd03905f7);
    }

    #[test]
    fn commit_checksum_matches_debugfs() {
        let commit = block(&[
            (0x0, 0xc03b3998),
            (0x4, 2),
            (0x8, 1),
            (0x10, 0xc11d5a5c),
            (0x30, 0x6b078a40),
            (0x38, 0x1f3a3f58),
        ]);
        assert!(v3().commit_is_valid(&commit));
        let mut resealed = commit.clone();
        put_be32(&mut resealed, COMMIT_CHECKSUM_OFFSET, 0);
        v3().seal_commit(&mut resealed);
        assert_eq!(resealed, commit);
    }

    #[test]
    fn data_checksum_matches_debugfs() {
        // debugfs `jw -b 300` of 1024 bytes of 0x5A in transaction 1.
        let data = vec![0x5Au8; 1024];
        assert_eq!(v3().data_checksum(1, &data), 0x7943640e);
        assert!(v3().data_is_valid(1, &data, 0x7943640e));
        let v2 = Checksummer::new(BlockChecksums::Version2, &UUID);
        assert!(v2.data_is_valid(1, &data, 0x640e));
        assert!(!v3().data_is_valid(2, &data, 0x7943640e));
    }

    #[test]
    fn no_checksums_accept_everything_and_write_nothing() {
        let none = Checksummer::new(BlockChecksums::Absent, &UUID);
        let mut descriptor = vec![0xAAu8; 1024];
        assert!(none.tail_is_valid(&descriptor));
        none.seal_tail(&mut descriptor);
        assert_eq!(descriptor, vec![0xAAu8; 1024]);
    }
}
