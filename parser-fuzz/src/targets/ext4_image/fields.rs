//! The fields a mutation sets to an edge value: superblock, inode,
//! directory or extent block, and group descriptor fields of a sample,
//! each as where it lies in the image and how wide it is. Must not choose
//! the value or write it: [`super::Ext4Image`]'s `generate` does.

use ext4::SUPERBLOCK_OFFSET;

use crate::Rng;

use super::layout::{checked_superblock, descriptors};
use super::samples::Sample;

/// Superblock fields worth setting to edge values: offset and width.
#[rustfmt::skip]
const SUPERBLOCK_FIELDS: [(usize, usize); 22] = [
    (0x0, 4), (0x4, 4), (0x8, 4),             // inodes, blocks, reserved blocks
    (0x14, 4), (0x18, 4), (0x1C, 4),          // first data block, log block and cluster size
    (0x20, 4), (0x24, 4), (0x28, 4),          // blocks, clusters and inodes per group
    (0x4C, 4), (0x54, 4), (0x58, 2),          // revision, first inode, inode size
    (0x5C, 4), (0x60, 4), (0x64, 4),          // compat, incompat, ro_compat features
    (0xCE, 2), (0xE0, 4), (0xFE, 2),          // reserved GDT blocks, journal inode, descriptor size
    (0x104, 4), (0x150, 4), (0x15C, 2), (0x174, 1), // first meta_bg, blocks high, min extra isize, groups per flex
];

/// Inode fields: mode, size, links, blocks, flags; the extent header
/// (magic, entries, max, depth) and first entry (first block, length,
/// start high and low); file ACL, size high, extra isize.
#[rustfmt::skip]
const INODE_FIELDS: [(usize, usize); 16] = [
    (0x0, 2), (0x4, 4), (0x1A, 2), (0x1C, 4), (0x20, 4),
    (0x28, 2), (0x2A, 2), (0x2C, 2), (0x2E, 2), (0x34, 4), (0x38, 2), (0x3A, 2), (0x3C, 4),
    (0x68, 4), (0x6C, 4), (0x80, 2),
];

/// Descriptor fields: bitmaps, inode table, flags, unused inodes.
const DESCRIPTOR_FIELDS: [(usize, usize); 5] = [(0x0, 4), (0x4, 4), (0x8, 4), (0x12, 2), (0x1C, 2)];

/// A field of a sample set to an edge value (feature words get one bit
/// flipped instead, so the other features stay): where and how wide.
pub(super) fn pick_field(sample: &Sample, random: &mut Rng) -> (usize, usize) {
    match random.below(4) {
        0 => {
            let (offset, width) = SUPERBLOCK_FIELDS[random.below(SUPERBLOCK_FIELDS.len())];
            (SUPERBLOCK_OFFSET as usize + offset, width)
        }
        1 if !sample.inodes.is_empty() => {
            let inode = &sample.inodes[random.below(sample.inodes.len())];
            let (offset, width) = INODE_FIELDS[random.below(INODE_FIELDS.len())];
            (inode.start + offset, width)
        }
        2 if !sample.blocks.is_empty() => {
            // A directory record or extent entry field near a block's start.
            let block = &sample.blocks[random.below(sample.blocks.len())];
            (block.start + 4 * random.below(16), [1, 2, 4][random.below(3)])
        }
        _ => {
            let descriptors = checked_superblock(&sample.bytes).map(|superblock| descriptors(&sample.bytes, &superblock));
            let start = descriptors.and_then(|list| list.first().map(|(_, range)| range.start)).unwrap_or(2048);
            let (offset, width) = DESCRIPTOR_FIELDS[random.below(DESCRIPTOR_FIELDS.len())];
            (start + offset, width)
        }
    }
}
