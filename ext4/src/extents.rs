//! The extent tree: a root of up to four entries in `i_block`, index nodes
//! and leaves in blocks, each node a 12-byte header (magic 0xF30A, entries,
//! max, depth) and 12-byte entries; non-root nodes end with a crc32c of
//! their first `12 + 12 * max` bytes from the inode's checksum seed.
//!
//! A lookup walks from the root to one leaf, checking each node it visits
//! (magic, counts, depth exactly one less than its parent's, at most 5
//! levels, entries sorted, blocks inside the file system, checksum).
//! **Must never** follow more than [`MAX_DEPTH`] + 1 nodes.

use alloc::vec;

use crate::block_device::BlockDevice;
use crate::bytes::{le16, le32};
use crate::checksum::crc32c;
use crate::disk::Disk;
use crate::error::{Error, Problem, Structure};
use crate::inode::Inode;
use crate::mapping::{Run, LOGICAL_BLOCK_LIMIT};
use crate::superblock::{Checksums, Superblock};

/// `eh_magic`.
pub const MAGIC: u16 = 0xF30A;
/// The deepest tree Linux builds (`EXT4_MAX_EXTENT_DEPTH`).
pub const MAX_DEPTH: u16 = 5;
/// Longest initialised extent; longer `ee_len` values are unwritten.
pub const MAX_INITIALISED_LENGTH: u16 = 32768;
const HEADER: usize = 12;
const ENTRY: usize = 12;

/// A node's header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Header {
    entries: u16,
    depth: u16,
}

/// One leaf entry, decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Extent {
    first_logical: u32,
    length: u32,
    physical: u64,
    unwritten: bool,
}

/// Maps `logical` through `inode`'s extent tree.
pub fn map<D: BlockDevice>(disk: &Disk<D>, superblock: &Superblock, inode: &Inode, logical: u32) -> Result<Run, Error> {
    let root_structure = Structure::Inode(inode.number.0);
    let header = parse_header(&inode.block_area, root_structure)?;
    if header.depth > MAX_DEPTH {
        return Err(Error::invalid(root_structure, "extent tree deeper than 5"));
    }
    let mut buffer = vec![0u8; superblock.block_size as usize];
    let mut boundary = LOGICAL_BLOCK_LIMIT;
    let mut depth = header.depth;
    let mut node_block: Option<u64> = None;
    let mut expected_first: Option<u32> = None;
    loop {
        let (node, structure) = match node_block {
            None => (&inode.block_area[..], root_structure),
            Some(block) => (&buffer[..], Structure::ExtentNode { inode: inode.number.0, block }),
        };
        let header = parse_header(node, structure)?;
        if header.depth != depth {
            return Err(Error::invalid(structure, "extent node depth is not its parent's minus one"));
        }
        if node_block.is_some() {
            verify_tail(node, inode.checksum_seed, superblock, structure)?;
            if header.entries == 0 {
                return Err(Error::invalid(structure, "empty non-root extent node"));
            }
        }
        if let Some(first) = expected_first {
            if le32(node, HEADER) != first {
                return Err(Error::invalid(structure, "first entry disagrees with its index"));
            }
        }
        if depth == 0 {
            return leaf_run(node, header, logical, boundary, superblock, structure);
        }
        let Some((child, first, next)) = index_step(node, header, logical, superblock, structure)? else {
            let next = first_index_start(node, header).min(boundary);
            return Ok(hole(logical, next));
        };
        boundary = boundary.min(next);
        disk.read_blocks(child, &mut buffer, Structure::ExtentNode { inode: inode.number.0, block: child })?;
        node_block = Some(child);
        expected_first = Some(first);
        depth -= 1;
    }
}

fn parse_header(node: &[u8], structure: Structure) -> Result<Header, Error> {
    if le16(node, 0) != MAGIC {
        return Err(Error::corrupted(structure, Problem::BadMagic));
    }
    let entries = le16(node, 2);
    let max = le16(node, 4);
    let capacity = node.len().saturating_sub(HEADER) / ENTRY;
    if usize::from(max) > capacity {
        return Err(Error::invalid(structure, "eh_max above the node's capacity"));
    }
    if entries > max {
        return Err(Error::invalid(structure, "eh_entries above eh_max"));
    }
    Ok(Header { entries, depth: le16(node, 6) })
}

/// The tail checksum of a block node: `crc32c(inode seed, node[..12 + 12 * max])`.
pub fn node_checksum(node: &[u8], seed: u32) -> Option<(u32, u32)> {
    let tail = HEADER + ENTRY * usize::from(le16(node, 4));
    let stored = u32::from_le_bytes(node.get(tail..tail + 4)?.try_into().ok()?);
    Some((crc32c(seed, node.get(..tail)?), stored))
}

fn verify_tail(node: &[u8], seed: u32, superblock: &Superblock, structure: Structure) -> Result<(), Error> {
    let Checksums::Crc32c { .. } = superblock.checksums else { return Ok(()) };
    match node_checksum(node, seed) {
        Some((computed, stored)) if computed == stored => Ok(()),
        Some(_) => Err(Error::corrupted(structure, Problem::ChecksumMismatch)),
        None => Err(Error::invalid(structure, "no room for the extent tail")),
    }
}

fn entry(node: &[u8], index: u16) -> &[u8] {
    let start = HEADER + ENTRY * usize::from(index);
    node.get(start..start + ENTRY).unwrap_or_default()
}

fn first_index_start(node: &[u8], header: Header) -> u64 {
    if header.entries == 0 {
        return LOGICAL_BLOCK_LIMIT;
    }
    u64::from(le32(entry(node, 0), 0))
}

/// In an index node: the child covering `logical`, the index's first block
/// and where the next index starts; `None` if `logical` precedes them all.
fn index_step(
    node: &[u8],
    header: Header,
    logical: u32,
    superblock: &Superblock,
    structure: Structure,
) -> Result<Option<(u64, u32, u64)>, Error> {
    if header.entries == 0 {
        return Err(Error::invalid(structure, "empty index node"));
    }
    let mut found = None;
    let mut previous: Option<u32> = None;
    for index in 0..header.entries {
        let bytes = entry(node, index);
        let first = le32(bytes, 0);
        if previous.is_some_and(|previous| first <= previous) {
            return Err(Error::invalid(structure, "index entries out of order"));
        }
        previous = Some(first);
        let child = u64::from(le32(bytes, 4)) | (u64::from(le16(bytes, 8)) << 32);
        if !inside(superblock, child, 1) {
            return Err(Error::invalid(structure, "index points outside the file system"));
        }
        if first <= logical {
            found = Some((child, first, LOGICAL_BLOCK_LIMIT));
        } else if let Some((child, start, LOGICAL_BLOCK_LIMIT)) = found {
            found = Some((child, start, u64::from(first)));
        }
    }
    Ok(found)
}

fn leaf_run(
    node: &[u8],
    header: Header,
    logical: u32,
    boundary: u64,
    superblock: &Superblock,
    structure: Structure,
) -> Result<Run, Error> {
    let target = u64::from(logical);
    let mut previous_end = 0u64;
    let mut answer = None;
    for index in 0..header.entries {
        let extent = decode(entry(node, index), structure)?;
        let start = u64::from(extent.first_logical);
        let end = start + u64::from(extent.length);
        if start < previous_end || end > LOGICAL_BLOCK_LIMIT {
            return Err(Error::invalid(structure, "extents overlap or out of order"));
        }
        if !inside(superblock, extent.physical, u64::from(extent.length)) {
            return Err(Error::invalid(structure, "extent outside the file system"));
        }
        previous_end = end;
        if answer.is_none() && target < end {
            let length = end.min(boundary).saturating_sub(target.max(start)).max(1);
            answer = Some(if target < start {
                hole(logical, start.min(boundary))
            } else if extent.unwritten {
                Run::Unwritten { length }
            } else {
                Run::Data { physical: extent.physical + (target - start), length }
            });
        }
    }
    Ok(answer.unwrap_or_else(|| hole(logical, boundary)))
}

fn decode(bytes: &[u8], structure: Structure) -> Result<Extent, Error> {
    let raw_length = le16(bytes, 4);
    let unwritten = raw_length > MAX_INITIALISED_LENGTH;
    let length = if unwritten { raw_length - MAX_INITIALISED_LENGTH } else { raw_length };
    if length == 0 {
        return Err(Error::invalid(structure, "zero-length extent"));
    }
    let physical = u64::from(le32(bytes, 8)) | (u64::from(le16(bytes, 6)) << 32);
    Ok(Extent { first_logical: le32(bytes, 0), length: u32::from(length), physical, unwritten })
}

/// Whether blocks `start..start + count` are data blocks of the file system
/// (past `s_first_data_block`, before `s_blocks_count`: Linux
/// `ext4_sb_block_valid`).
pub(crate) fn inside(superblock: &Superblock, start: u64, count: u64) -> bool {
    start > u64::from(superblock.first_data_block)
        && start.checked_add(count).is_some_and(|end| end <= superblock.blocks_count)
}

/// A hole from `logical` up to `next` (at least one block).
fn hole(logical: u32, next: u64) -> Run {
    Run::Hole { length: next.saturating_sub(u64::from(logical)).max(1) }
}
