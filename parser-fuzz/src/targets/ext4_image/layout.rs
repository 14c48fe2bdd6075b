//! Where the structures of a raw image lie, read without trusting it:
//! little-endian fields, the superblock, the group descriptors and inode
//! slots of the first groups, blocks, and the entries of extent nodes.
//! Everything is bounded (by the image, by the node, by [`REPAIR_GROUPS`]
//! and [`REPAIR_INODES_PER_GROUP`]) so a mutated geometry costs little.
//! Must not read outside the image (a field past its end reads as zero)
//! and must not write to it, but for [`put_le`] where it is told.

use std::ops::Range;

use ext4::features::incompatible;
use ext4::{descriptor_block_location, GroupDescriptor, Superblock, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE};

/// Where the superblock lies in an image.
pub(super) const SUPERBLOCK_BYTES: Range<usize> = SUPERBLOCK_OFFSET as usize..SUPERBLOCK_OFFSET as usize + SUPERBLOCK_SIZE;
/// The most groups and inodes a repair visits (the samples have one group
/// of 64 inodes; a mutated geometry must not make repair slow).
const REPAIR_GROUPS: u32 = 16;
const REPAIR_INODES_PER_GROUP: u32 = 256;

pub(super) fn le16(bytes: &[u8], at: usize) -> u16 {
    bytes.get(at..at + 2).map_or(0, |field| u16::from_le_bytes([field[0], field[1]]))
}

pub(super) fn le32(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |field| u32::from_le_bytes(field.try_into().unwrap()))
}

/// Writes the low `width` bytes of `value` at `at`, little-endian (what
/// does not fit in `bytes` is dropped).
pub(super) fn put_le(bytes: &mut [u8], at: usize, width: usize, value: u64) {
    for index in 0..width {
        if let Some(byte) = bytes.get_mut(at + index) {
            *byte = (value >> (8 * index)) as u8;
        }
    }
}

/// The superblock of `image` as the crate parses it, if it does.
pub(super) fn checked_superblock(image: &[u8]) -> Option<Superblock> {
    let start = SUPERBLOCK_OFFSET as usize;
    let bytes: &[u8; SUPERBLOCK_SIZE] = image.get(start..start + SUPERBLOCK_SIZE)?.try_into().ok()?;
    Superblock::parse(bytes).ok()
}

/// Each group's descriptor bytes (as located by the crate's own rule), at
/// most [`REPAIR_GROUPS`] of them.
pub(super) fn descriptors(image: &[u8], superblock: &Superblock) -> Vec<(u32, Range<usize>)> {
    let meta_bg = superblock.incompatible_features & incompatible::META_BG != 0;
    let size = usize::from(superblock.descriptor_size);
    let per_block = superblock.descriptors_per_block();
    let groups = superblock.group_count().min(REPAIR_GROUPS);
    let block_size = superblock.block_size as u64;
    (0..groups)
        .filter_map(|group| {
            let location = descriptor_block_location(superblock, group / per_block.max(1), meta_bg);
            let start = usize::try_from(location.checked_mul(block_size)?).ok()? + (group % per_block.max(1)) as usize * size;
            (start + size <= image.len()).then_some((group, start..start + size))
        })
        .collect()
}

/// Each inode slot of the first groups: its number and bytes.
pub(super) fn inode_slots(image: &[u8], superblock: &Superblock, descriptors: &[(u32, Range<usize>)]) -> Vec<(u32, Range<usize>)> {
    let size = usize::from(superblock.inode_size);
    let per_group = superblock.inodes_per_group;
    let mut slots = Vec::new();
    for (group, range) in descriptors {
        let table = GroupDescriptor::parse(&image[range.clone()]).inode_table;
        let Some(start) = table.checked_mul(u64::from(superblock.block_size)).and_then(|start| usize::try_from(start).ok()) else { continue };
        for slot in 0..per_group.min(REPAIR_INODES_PER_GROUP) {
            let Some(number) = group.checked_mul(per_group).and_then(|first| first.checked_add(slot + 1)) else { break };
            let at = start + slot as usize * size;
            if at + size > image.len() {
                break;
            }
            slots.push((number, at..at + size));
        }
    }
    slots
}

/// The block `number` of `image`, if it lies inside.
pub(super) fn block_bytes(image_length: usize, number: u64, block_size: usize) -> Option<Range<usize>> {
    let start = usize::try_from(number).ok()?.checked_mul(block_size)?;
    (start.checked_add(block_size)? <= image_length).then_some(start..start + block_size)
}

/// The child blocks an extent index node points to (bounded by the
/// node's size, whatever its header claims).
pub(super) fn index_children(node: &[u8]) -> Vec<u64> {
    let entries = usize::from(le16(node, 2)).min(node.len().saturating_sub(12) / 12);
    (0..entries)
        .map(|index| {
            let entry = 12 + 12 * index;
            u64::from(le32(node, entry + 4)) | (u64::from(le16(node, entry + 8)) << 32)
        })
        .collect()
}

/// The runs `(physical, length)` of an extent leaf node (bounded by the
/// node's size, whatever its header claims).
pub(super) fn leaf_extents(node: &[u8]) -> Vec<(u64, u64)> {
    let entries = usize::from(le16(node, 2)).min(node.len().saturating_sub(12) / 12);
    (0..entries)
        .map(|index| {
            let entry = 12 + 12 * index;
            let length = u64::from(le16(node, entry + 4));
            let length = if length > 32768 { length - 32768 } else { length };
            (u64::from(le32(node, entry + 8)) | (u64::from(le16(node, entry + 6)) << 32), length)
        })
        .collect()
}
