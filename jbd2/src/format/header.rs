//! The 12-byte header that starts every journal metadata block.
//!
//! `h_magic` (0xC03B3998), `h_blocktype`, `h_sequence`: all big-endian.
//! A block that does not start with the magic is not a metadata block (a
//! data block, or the end of the log). **Must never** treat an unknown
//! block type as an error here: recovery decides what it means.

use crate::big_endian::{be32, put_be32};

/// The magic number of every jbd2 metadata block.
pub const JOURNAL_MAGIC: u32 = 0xC03B_3998;

/// Bytes of the header.
pub const HEADER_BYTES: usize = 12;

/// What a metadata block is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockType {
    /// A descriptor block: tags naming the data blocks that follow.
    Descriptor,
    /// A commit block: the transaction is complete.
    Commit,
    /// A version-1 journal superblock.
    SuperblockVersion1,
    /// A version-2 journal superblock.
    SuperblockVersion2,
    /// A revoke block: block numbers not to replay.
    Revoke,
    /// Any other value.
    Unknown(u32),
}

impl BlockType {
    /// The on-disk value.
    pub fn value(self) -> u32 {
        match self {
            BlockType::Descriptor => 1,
            BlockType::Commit => 2,
            BlockType::SuperblockVersion1 => 3,
            BlockType::SuperblockVersion2 => 4,
            BlockType::Revoke => 5,
            BlockType::Unknown(value) => value,
        }
    }

    /// The type of on-disk value `value`.
    pub fn from_value(value: u32) -> BlockType {
        match value {
            1 => BlockType::Descriptor,
            2 => BlockType::Commit,
            3 => BlockType::SuperblockVersion1,
            4 => BlockType::SuperblockVersion2,
            5 => BlockType::Revoke,
            other => BlockType::Unknown(other),
        }
    }
}

/// A decoded metadata-block header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BlockHeader {
    /// What the block is.
    pub block_type: BlockType,
    /// The transaction it belongs to (0 in superblocks).
    pub sequence: u32,
}

impl BlockHeader {
    /// The header of `block`, or `None` if it lacks the magic.
    pub fn decode(block: &[u8]) -> Option<BlockHeader> {
        if block.len() < HEADER_BYTES || be32(block, 0) != JOURNAL_MAGIC {
            return None;
        }
        Some(BlockHeader {
            block_type: BlockType::from_value(be32(block, 4)),
            sequence: be32(block, 8),
        })
    }

    /// Writes this header (with the magic) at the start of `block`.
    pub fn encode(&self, block: &mut [u8]) {
        put_be32(block, 0, JOURNAL_MAGIC);
        put_be32(block, 4, self.block_type.value());
        put_be32(block, 8, self.sequence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_needs_the_magic() {
        let mut block = [0u8; 64];
        assert_eq!(BlockHeader::decode(&block), None);
        let header = BlockHeader {
            block_type: BlockType::Revoke,
            sequence: 7,
        };
        header.encode(&mut block);
        assert_eq!(
            block[..12],
            [0xC0, 0x3B, 0x39, 0x98, 0, 0, 0, 5, 0, 0, 0, 7]
        );
        assert_eq!(BlockHeader::decode(&block), Some(header));
        assert_eq!(BlockHeader::decode(&block[..11]), None);
    }

    #[test]
    fn block_type_values_round_trip() {
        for value in 0..8 {
            assert_eq!(BlockType::from_value(value).value(), value);
        }
    }
}
