//! Checksum repair, so a mutated image gets past the checks the crate makes
//! first and reaches the code behind them: the superblock's, every group
//! descriptor's and (with `metadata_csum`) every inode's of the first
//! groups, and those of extent nodes and directory leaves one level below
//! an inode. Must change nothing but checksum fields.

use std::ops::Range;

use ext4::features::read_only_compatible;
use ext4::{
    descriptor_checksum, extent_node_checksum, inode_checksum_seed, inode_flags, leaf_checksum, superblock_checksum, Checksums, InodeNumber, Superblock,
    SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, TAIL_SIZE,
};

use super::layout::{block_bytes, checked_superblock, descriptors, index_children, inode_slots, le16, le32, leaf_extents, put_le};

/// Recomputes the checksums the crate checks first: the superblock's,
/// then (with a superblock that parses) every descriptor's and every
/// inode's of the first groups.
pub(super) fn repair_checksums(image: &mut [u8]) {
    let start = SUPERBLOCK_OFFSET as usize;
    let Some(bytes) = image.get_mut(start..start + SUPERBLOCK_SIZE) else { return };
    if le32(bytes, 0x64) & read_only_compatible::METADATA_CSUM != 0 {
        let checksum = superblock_checksum((&*bytes).try_into().unwrap());
        put_le(bytes, 0x3FC, 4, u64::from(checksum));
    }
    let Some(superblock) = checked_superblock(image) else { return };
    let descriptors = descriptors(image, &superblock);
    for (group, range) in &descriptors {
        if let Some(checksum) = descriptor_checksum(&superblock, *group, &image[range.clone()]) {
            put_le(&mut image[range.clone()], 0x1E, 2, u64::from(checksum));
        }
    }
    if let Checksums::Crc32c { .. } = superblock.checksums {
        for (number, range) in inode_slots(image, &superblock, &descriptors) {
            repair_tree_blocks(image, &superblock, number, range.clone());
            repair_inode(&mut image[range], &superblock, number);
        }
    }
}

/// With `metadata_csum`: the checksums of the extent nodes one level below
/// inode `number`'s root and, for a directory, of its leaf blocks (those
/// ending in the checksum tail record).
fn repair_tree_blocks(image: &mut [u8], superblock: &Superblock, number: u32, inode: Range<usize>) {
    let bytes = &image[inode];
    if bytes.len() < 0x68 || le32(bytes, 0x20) & inode_flags::EXTENTS == 0 {
        return;
    }
    let seed = inode_checksum_seed(superblock, InodeNumber(number), le32(bytes, 0x64));
    let directory = le16(bytes, 0) & 0xF000 == 0x4000;
    let root = bytes[0x28..0x64].to_vec();
    let block_size = superblock.block_size as usize;
    let mut runs = Vec::new();
    if le16(&root, 6) == 0 {
        runs = leaf_extents(&root);
    } else {
        for child in index_children(&root) {
            let Some(range) = block_bytes(image.len(), child, block_size) else { continue };
            let node = &mut image[range];
            if let Some((computed, _)) = extent_node_checksum(node, seed) {
                let tail = 12 + 12 * usize::from(le16(node, 4));
                put_le(node, tail, 4, u64::from(computed));
            }
            if le16(node, 6) == 0 {
                runs.extend(leaf_extents(node));
            }
        }
    }
    if !directory {
        return;
    }
    let blocks = runs.into_iter().flat_map(|(physical, length)| (0..length.min(32)).map(move |step| physical.wrapping_add(step)));
    for block in blocks.take(64) {
        let Some(range) = block_bytes(image.len(), block, block_size) else { continue };
        let leaf = &mut image[range];
        let tail = leaf.len() - TAIL_SIZE;
        let is_tail = le32(leaf, tail) == 0 && le16(leaf, tail + 4) == TAIL_SIZE as u16 && le16(leaf, tail + 6) == 0xDE00;
        if is_tail {
            let checksum = leaf_checksum(&leaf[..tail], seed);
            put_le(leaf, tail + 8, 4, u64::from(checksum));
        }
    }
}

/// The `metadata_csum` inode checksum (the crate's rule in `inode.rs`):
/// crc32c from the inode's seed over its bytes with `i_checksum_lo` and,
/// when `i_extra_isize` covers it, `i_checksum_hi` read as zeros.
fn repair_inode(inode: &mut [u8], superblock: &Superblock, number: u32) {
    if inode.len() < 128 || inode.iter().all(|&byte| byte == 0) {
        return;
    }
    let seed = inode_checksum_seed(superblock, InodeNumber(number), le32(inode, 0x64));
    let high = inode.len() > 128 && 0x84 <= 128 + usize::from(le16(inode, 0x80));
    let mut crc = ext4::checksum::crc32c(seed, &inode[..0x7C]);
    crc = ext4::checksum::crc32c(crc, &[0, 0]);
    crc = ext4::checksum::crc32c(crc, &inode[0x7E..0x82.min(inode.len())]);
    if inode.len() > 128 {
        let rest = if high {
            crc = ext4::checksum::crc32c(crc, &[0, 0]);
            0x84
        } else {
            0x82
        };
        crc = ext4::checksum::crc32c(crc, &inode[rest..]);
    }
    put_le(inode, 0x7C, 2, u64::from(crc));
    if high {
        put_le(inode, 0x82, 2, u64::from(crc >> 16));
    }
}
