//! Hashed (htree) directory index blocks, as far as reading needs them.
//!
//! Block 0 of an htree directory is the root: a "." record of 12 bytes, a
//! ".." record covering the rest of the block, and inside that the root
//! info (at 24: zero le32, hash version, info length 8, indirect levels,
//! flags) and the count/limit header at 32. Interior nodes are one empty
//! record covering the whole block with the header at 8. So a linear scan
//! that skips inode-0 records sees only real names in every block, and
//! needs the index only for its checksum: under `metadata_csum`, the
//! header's limit leaves room for an 8-byte tail (reserved le32, checksum
//! le32) after `limit` entries, and the checksum is the crc32c chain from the
//! inode seed over `block[..count_offset + 8 * count]`, the tail's reserved
//! word and four zero bytes in place of the checksum.
//!
//! Hashed lookup is left for later (it needs the legacy, half-MD4 and TEA
//! hashes). **Must never** trust `count` or `limit` before checking them
//! against the block.

use crate::bytes::{byte, le16, le32};
use crate::checksum::crc32c;
use crate::directory::record_length;
use crate::error::{Error, Problem, Structure};
use crate::features::incompatible;
use crate::superblock::{Checksums, Superblock};

/// Where a directory block sits in the directory's structure.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockRole {
    /// Entries (with a checksum tail under `metadata_csum`).
    Leaf,
    /// The htree root: "." and ".." entries around the index.
    IndexRoot,
    /// An interior htree node: no entries.
    IndexNode,
}

const ROOT_COUNT_OFFSET: usize = 32;
const NODE_COUNT_OFFSET: usize = 8;
const ENTRY: usize = 8;
const TAIL: usize = 8;
const ROOT_INFO_LENGTH: u8 = 8;

/// The role of logical block `logical_block` of a directory whose index
/// flag is `indexed` (Linux `__ext4_read_dirblock`). Without checksums an
/// index node reads as a leaf holding one unused record, which is harmless.
pub fn block_role(block: &[u8], superblock: &Superblock, indexed: bool, logical_block: u32) -> BlockRole {
    if !indexed || !superblock.has_directory_index() {
        return BlockRole::Leaf;
    }
    if logical_block == 0 {
        return BlockRole::IndexRoot;
    }
    let spans_block = record_length(le16(block, 4), superblock.block_size) == block.len();
    match superblock.checksums {
        Checksums::Crc32c { .. } if spans_block => BlockRole::IndexNode,
        _ => BlockRole::Leaf,
    }
}

/// Checks an index block: the root's info, count and limit, and the
/// checksum under `metadata_csum`.
pub fn check_index(
    block: &[u8],
    role: BlockRole,
    superblock: &Superblock,
    seed: u32,
    structure: Structure,
) -> Result<(), Error> {
    let count_offset = match role {
        BlockRole::Leaf => return Ok(()),
        BlockRole::IndexRoot => {
            check_root_info(block, superblock, structure)?;
            ROOT_COUNT_OFFSET
        }
        BlockRole::IndexNode => NODE_COUNT_OFFSET,
    };
    let checksummed = matches!(superblock.checksums, Checksums::Crc32c { .. });
    let reserved = if checksummed { TAIL } else { 0 };
    let capacity = block.len().saturating_sub(count_offset + reserved) / ENTRY;
    let limit = usize::from(le16(block, count_offset));
    let count = usize::from(le16(block, count_offset + 2));
    if limit != capacity {
        return Err(Error::invalid(structure, "dx limit is not the block's capacity"));
    }
    if count == 0 || count > limit {
        return Err(Error::invalid(structure, "dx count zero or above limit"));
    }
    if checksummed {
        let tail = count_offset + ENTRY * limit;
        let computed = index_checksum(block, count_offset, count, tail, seed);
        if computed != Some(le32(block, tail + 4)) {
            return Err(Error::corrupted(structure, Problem::ChecksumMismatch));
        }
    }
    Ok(())
}

/// The index checksum (Linux `ext4_dx_csum`): the header and `count`
/// entries, then the tail with its checksum field read as zero.
pub fn index_checksum(block: &[u8], count_offset: usize, count: usize, tail: usize, seed: u32) -> Option<u32> {
    let entries = block.get(..count_offset + ENTRY * count)?;
    let crc = crc32c(crc32c(seed, entries), block.get(tail..tail + 4)?);
    Some(crc32c(crc, &[0; 4]))
}

fn check_root_info(block: &[u8], superblock: &Superblock, structure: Structure) -> Result<(), Error> {
    const LEGACY: u8 = 0;
    const TEA: u8 = 2;
    let fail = |what| Err(Error::invalid(structure, what));
    let block_size = superblock.block_size;
    if record_length(le16(block, 4), block_size) != 12
        || record_length(le16(block, 16), block_size) != block.len().saturating_sub(12)
    {
        return fail("htree root without its '.' and '..' records");
    }
    if le32(block, 24) != 0 || byte(block, 29) != ROOT_INFO_LENGTH {
        return fail("htree root info malformed");
    }
    if !(LEGACY..=TEA).contains(&byte(block, 28)) {
        return fail("unrecognised htree hash version");
    }
    let largedir = superblock.incompatible_features & incompatible::LARGEDIR != 0;
    let levels_allowed = if largedir { 3 } else { 2 };
    if byte(block, 30) >= levels_allowed {
        return fail("htree too deep");
    }
    Ok(())
}
