//! Block group descriptors: where each group's bitmaps and inode table are,
//! its free counts and flags, each descriptor checked by its checksum and
//! its locations checked to lie inside the file system.
//!
//! The table starts in the block after the superblock's; with `meta_bg`,
//! descriptor blocks from `s_first_meta_bg` on sit at the start of the
//! first group they describe (after its superblock copy, if any).
//! **Must never** hand out a descriptor that failed its checks.

use alloc::vec;
use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::bytes::{le16, put_le16, put_le32, split64};
use crate::checksum::{crc16, crc32c};
use crate::disk::Disk;
use crate::error::{Error, Problem, Structure};
use crate::features::incompatible;
use crate::superblock::{Checksums, Superblock};

/// `bg_flags`: the inode table and bitmap are not initialised.
pub const INODE_UNINIT: u16 = 0x1;
/// `bg_flags`: the block bitmap is not initialised.
pub const BLOCK_UNINIT: u16 = 0x2;
/// `bg_flags`: the inode table is zeroed.
pub const ITABLE_ZEROED: u16 = 0x4;
/// Offset of `bg_checksum`.
const CHECKSUM_OFFSET: usize = 0x1E;
/// Where the 64-bit halves start.
const HIGH_HALVES: usize = 0x20;

/// One group's descriptor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GroupDescriptor {
    /// The block bitmap's block.
    pub block_bitmap: u64,
    /// The inode bitmap's block.
    pub inode_bitmap: u64,
    /// The inode table's first block.
    pub inode_table: u64,
    /// Free blocks in the group.
    pub free_blocks_count: u32,
    /// Free inodes in the group.
    pub free_inodes_count: u32,
    /// Directories in the group.
    pub used_directories_count: u32,
    /// [`INODE_UNINIT`], [`BLOCK_UNINIT`], [`ITABLE_ZEROED`].
    pub flags: u16,
    /// Inodes at the end of the table never used (`bg_itable_unused`).
    pub unused_inodes_count: u32,
    /// crc32c of the block bitmap (`metadata_csum`).
    pub block_bitmap_checksum: u32,
    /// crc32c of the inode bitmap (`metadata_csum`).
    pub inode_bitmap_checksum: u32,
}

impl GroupDescriptor {
    /// Parses one descriptor (`bytes` is `descriptor_size` long).
    pub fn parse(bytes: &[u8]) -> Self {
        let high = |offset| (bytes.len() > HIGH_HALVES).then_some(offset);
        let high16 = |offset| if bytes.len() > HIGH_HALVES { u32::from(le16(bytes, offset)) << 16 } else { 0 };
        Self {
            block_bitmap: split64(bytes, 0x0, high(0x20)),
            inode_bitmap: split64(bytes, 0x4, high(0x24)),
            inode_table: split64(bytes, 0x8, high(0x28)),
            free_blocks_count: u32::from(le16(bytes, 0xC)) | high16(0x2C),
            free_inodes_count: u32::from(le16(bytes, 0xE)) | high16(0x2E),
            used_directories_count: u32::from(le16(bytes, 0x10)) | high16(0x30),
            flags: le16(bytes, 0x12),
            unused_inodes_count: u32::from(le16(bytes, 0x1C)) | high16(0x32),
            block_bitmap_checksum: u32::from(le16(bytes, 0x18)) | high16(0x38),
            inode_bitmap_checksum: u32::from(le16(bytes, 0x1A)) | high16(0x3A),
        }
    }

    /// Writes the fields over `bytes` (the descriptor as read) and sets its
    /// checksum for `group`.
    pub fn encode(&self, bytes: &mut [u8], group: u32, superblock: &Superblock) {
        let wide = bytes.len() > HIGH_HALVES;
        let mut put32 = |low: usize, high: usize, value: u64| {
            put_le32(bytes, low, value as u32);
            if wide {
                put_le32(bytes, high, (value >> 32) as u32);
            }
        };
        put32(0x0, 0x20, self.block_bitmap);
        put32(0x4, 0x24, self.inode_bitmap);
        put32(0x8, 0x28, self.inode_table);
        let pairs = [
            (0xC, 0x2C, self.free_blocks_count),
            (0xE, 0x2E, self.free_inodes_count),
            (0x10, 0x30, self.used_directories_count),
            (0x1C, 0x32, self.unused_inodes_count),
            (0x18, 0x38, self.block_bitmap_checksum),
            (0x1A, 0x3A, self.inode_bitmap_checksum),
        ];
        for (low, high, value) in pairs {
            put_le16(bytes, low, value as u16);
            if wide {
                put_le16(bytes, high, (value >> 16) as u16);
            }
        }
        put_le16(bytes, 0x12, self.flags);
        if let Some(checksum) = descriptor_checksum(superblock, group, bytes) {
            put_le16(bytes, CHECKSUM_OFFSET, checksum);
        }
    }
}

/// The checksum `bytes` (one descriptor) should carry as group `group`, or
/// `None` without descriptor checksums:
/// - `metadata_csum`: `crc32c(seed, group as le32 ++ bytes with bg_checksum
///   as zero) & 0xFFFF`;
/// - `gdt_csum`: `crc16(!0, uuid ++ group as le32 ++ bytes without bg_checksum)`.
pub fn descriptor_checksum(superblock: &Superblock, group: u32, bytes: &[u8]) -> Option<u16> {
    let before = bytes.get(..CHECKSUM_OFFSET).unwrap_or_default();
    let after = bytes.get(HIGH_HALVES..).unwrap_or_default();
    let group = group.to_le_bytes();
    match superblock.checksums {
        Checksums::None => None,
        Checksums::Crc32c { seed } => {
            let crc = crc32c(crc32c(crc32c(seed, &group), before), &[0, 0]);
            Some(crc32c(crc, after) as u16)
        }
        Checksums::GroupDescriptorCrc16 => {
            let crc = crc16(crc16(crc16(!0, &superblock.uuid), &group), before);
            Some(crc16(crc, after))
        }
    }
}

/// Every group's descriptor, checked, with the table's bytes kept for
/// writing descriptors back.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupDescriptors {
    descriptors: Vec<GroupDescriptor>,
    /// Each descriptor as read, `descriptor_size` bytes per group.
    bytes: Vec<u8>,
    descriptor_size: usize,
}

impl GroupDescriptors {
    /// Reads and checks the descriptors of all groups.
    pub(crate) fn read<D: BlockDevice>(disk: &Disk<D>, superblock: &Superblock) -> Result<Self, Error> {
        let table_blocks = superblock.descriptor_block_count();
        let meta_bg = superblock.incompatible_features & incompatible::META_BG != 0;
        if meta_bg && superblock.first_meta_bg > table_blocks {
            return Err(Error::invalid(Structure::Superblock, "s_first_meta_bg beyond the descriptor table"));
        }
        let size = usize::from(superblock.descriptor_size);
        let mut block = vec![0u8; superblock.block_size as usize];
        let mut descriptors = Vec::new();
        let mut table = Vec::new();
        for table_block in 0..table_blocks {
            let location = descriptor_block_location(superblock, table_block, meta_bg);
            disk.read_blocks(location, &mut block, Structure::Superblock)?;
            for bytes in block.chunks_exact(size) {
                let Ok(group) = u32::try_from(descriptors.len()) else { break };
                if group >= superblock.group_count() {
                    break;
                }
                descriptors.push(check(superblock, group, bytes)?);
                table.extend_from_slice(bytes);
            }
        }
        Ok(Self { descriptors, bytes: table, descriptor_size: size })
    }

    /// The bytes of `group`'s descriptor as read: what
    /// [`GroupDescriptor::encode`] writes over.
    pub fn descriptor_bytes(&self, group: u32) -> Option<&[u8]> {
        let start = usize::try_from(group).ok()?.checked_mul(self.descriptor_size)?;
        self.bytes.get(start..start.checked_add(self.descriptor_size)?)
    }

    /// Replaces `group`'s descriptor and its stored bytes (`bytes`, the
    /// descriptor as [`GroupDescriptor::encode`] wrote it), after a write
    /// reached the disk. Nothing happens for a group that does not exist.
    pub(crate) fn replace(&mut self, group: u32, descriptor: GroupDescriptor, bytes: &[u8]) {
        let Ok(index) = usize::try_from(group) else { return };
        let start = index.saturating_mul(self.descriptor_size);
        let stored = start.checked_add(self.descriptor_size).and_then(|end| self.bytes.get_mut(start..end));
        if let (Some(slot), Some(stored)) = (self.descriptors.get_mut(index), stored) {
            if stored.len() == bytes.len() {
                stored.copy_from_slice(bytes);
                *slot = descriptor;
            }
        }
    }

    /// The descriptor of `group`, if the group exists.
    pub fn get(&self, group: u32) -> Option<&GroupDescriptor> {
        self.descriptors.get(usize::try_from(group).ok()?)
    }

    /// All descriptors, in group order.
    pub fn iter(&self) -> impl Iterator<Item = &GroupDescriptor> {
        self.descriptors.iter()
    }
}

/// The block holding descriptor block `table_block` (Linux `descriptor_loc`).
pub fn descriptor_block_location(superblock: &Superblock, table_block: u32, meta_bg: bool) -> u64 {
    if !meta_bg || table_block < superblock.first_meta_bg {
        return superblock.superblock_block() + 1 + u64::from(table_block);
    }
    let group = superblock.descriptors_per_block().saturating_mul(table_block);
    let mut skip = u64::from(superblock.group_has_superblock(group));
    if superblock.block_size == 1024 && table_block == 0 && superblock.first_data_block == 0 {
        skip += 1;
    }
    superblock.group_first_block(group) + skip
}

fn check(superblock: &Superblock, group: u32, bytes: &[u8]) -> Result<GroupDescriptor, Error> {
    let structure = Structure::GroupDescriptor(group);
    if let Some(expected) = descriptor_checksum(superblock, group, bytes) {
        if le16(bytes, CHECKSUM_OFFSET) != expected {
            return Err(Error::corrupted(structure, Problem::ChecksumMismatch));
        }
    }
    let descriptor = GroupDescriptor::parse(bytes);
    let (first, last) = allowed_range(superblock, group);
    let inside = |block: u64| (first..=last).contains(&block);
    let table_end = descriptor.inode_table.checked_add(u64::from(superblock.inode_table_blocks()).saturating_sub(1));
    if !inside(descriptor.block_bitmap) {
        return Err(Error::invalid(structure, "block bitmap outside its range"));
    }
    if !inside(descriptor.inode_bitmap) {
        return Err(Error::invalid(structure, "inode bitmap outside its range"));
    }
    if !inside(descriptor.inode_table) || !table_end.is_some_and(inside) {
        return Err(Error::invalid(structure, "inode table outside its range"));
    }
    Ok(descriptor)
}

/// Where a group's bitmaps and table may lie: inside the group, or
/// anywhere in the file system with `flex_bg` (and for the last group).
fn allowed_range(superblock: &Superblock, group: u32) -> (u64, u64) {
    let last_block = superblock.blocks_count.saturating_sub(1);
    let flexible = superblock.incompatible_features & incompatible::FLEX_BG != 0;
    if flexible || group.saturating_add(1) >= superblock.group_count() {
        return (u64::from(superblock.first_data_block), last_block);
    }
    let first = superblock.group_first_block(group);
    (first, (first + u64::from(superblock.blocks_per_group)).saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_32_byte_descriptor_has_no_high_halves() {
        let mut bytes = [0xFFu8; 64];
        bytes[..32].fill(0);
        bytes[8] = 0x10;
        bytes[0xC] = 5;
        let descriptor = GroupDescriptor::parse(&bytes[..32]);
        assert_eq!((descriptor.inode_table, descriptor.free_blocks_count), (16, 5));
        let wide = GroupDescriptor::parse(&bytes);
        assert_eq!(wide.inode_table, 0xFFFF_FFFF_0000_0010);
    }
}
