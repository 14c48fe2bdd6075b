//! The ext2/ext3 block map of files without `EXTENTS_FL`: `i_block` holds
//! twelve direct block numbers, then one single, one double and one triple
//! indirect block; an indirect block is an array of 32-bit block numbers;
//! 0 is a hole (for a whole subtree when found in an indirect slot).
//!
//! A lookup reads at most three indirect blocks, then reports the run of
//! consecutive (or consecutively zero) pointers around the target, so a
//! reader fetches many blocks per request. **Must never** follow a pointer
//! outside the file system.

use alloc::vec;

use crate::block_device::BlockDevice;
use crate::bytes::le32;
use crate::disk::Disk;
use crate::error::{Error, Structure};
use crate::extents::inside;
use crate::inode::Inode;
use crate::mapping::Run;
use crate::superblock::Superblock;

const DIRECT_BLOCKS: u64 = 12;
const SINGLE_SLOT: usize = 12;
const POINTER: usize = 4;

/// Maps `logical` through `inode`'s block map.
pub fn map<D: BlockDevice>(disk: &Disk<D>, superblock: &Superblock, inode: &Inode, logical: u32) -> Result<Run, Error> {
    let inode_structure = Structure::Inode(inode.number.0);
    let per_block = u64::from(superblock.block_size) / POINTER as u64;
    let logical = u64::from(logical);
    if logical < DIRECT_BLOCKS {
        let direct = inode.block_area.get(..DIRECT_BLOCKS as usize * POINTER).unwrap_or_default();
        return run_in(direct, logical as usize, superblock, inode_structure);
    }
    // Levels 1, 2, 3: find the subtree holding `logical` and its offset there.
    let mut first_in_level = DIRECT_BLOCKS;
    let mut span = per_block;
    for level in 1..=3u32 {
        if logical < first_in_level + span {
            let slot = SINGLE_SLOT + level as usize - 1;
            let top = u64::from(le32(&inode.block_area, slot * POINTER));
            return walk(disk, superblock, inode, top, level, logical - first_in_level, span);
        }
        first_in_level += span;
        span *= per_block;
    }
    Ok(Run::Hole { length: crate::mapping::LOGICAL_BLOCK_LIMIT - logical })
}

/// From the indirect block `pointer` of a `level`-deep subtree spanning
/// `span` blocks, the run at `offset` in it.
fn walk<D: BlockDevice>(
    disk: &Disk<D>,
    superblock: &Superblock,
    inode: &Inode,
    mut pointer: u64,
    level: u32,
    mut offset: u64,
    mut span: u64,
) -> Result<Run, Error> {
    let per_block = u64::from(superblock.block_size) / POINTER as u64;
    let mut block = vec![0u8; superblock.block_size as usize];
    let mut structure = Structure::Inode(inode.number.0);
    for _ in 0..level {
        if pointer == 0 {
            return Ok(Run::Hole { length: span - offset });
        }
        if !inside(superblock, pointer, 1) {
            return Err(Error::invalid(structure, "block pointer outside the file system"));
        }
        structure = Structure::IndirectBlock { inode: inode.number.0, block: pointer };
        disk.read_blocks(pointer, &mut block, structure)?;
        span /= per_block;
        let slot = offset / span;
        offset %= span;
        if span == 1 {
            return run_in(&block, slot as usize, superblock, structure);
        }
        pointer = u64::from(le32(&block, slot as usize * POINTER));
    }
    Ok(Run::Hole { length: span - offset })
}

/// The run starting at pointer `index` of the array `pointers`: data while
/// the numbers are consecutive, a hole while they are zero.
fn run_in(pointers: &[u8], index: usize, superblock: &Superblock, structure: Structure) -> Result<Run, Error> {
    let at = |index: usize| u64::from(le32(pointers, index * POINTER));
    let count = pointers.len() / POINTER;
    let first = at(index);
    let mut length = 1u64;
    let mut next = index + 1;
    if first == 0 {
        while next < count && at(next) == 0 {
            length += 1;
            next += 1;
        }
        return Ok(Run::Hole { length });
    }
    while next < count && at(next) == first + length {
        length += 1;
        next += 1;
    }
    if !inside(superblock, first, length) {
        return Err(Error::invalid(structure, "block pointer outside the file system"));
    }
    Ok(Run::Data { physical: first, length })
}
