//! Hot ranges: where a sample's metadata is (superblock, descriptors, the
//! inodes reached, directory, extent, indirect and symlink blocks, never
//! file data), found by walking the sample with the crate, and which
//! sample an input was most likely made from. Must not walk inputs: only
//! the samples, which are known to be sound.

use std::collections::HashSet;

use ext4::features::incompatible;
use ext4::{descriptor_block_location, inode_flags, locate_inode, Ext4, FileType, Inode, MemoryDisk, Run};

use super::layout::{index_children, le16, le32, SUPERBLOCK_BYTES};
use super::samples::{samples, Sample};

/// Where a sample's metadata is, found by walking it with the crate.
pub(super) fn analyse(bytes: Vec<u8>) -> Sample {
    let fs = Ext4::open(MemoryDisk::new(bytes.clone())).expect("a sample image opens");
    let block_size = fs.superblock().block_size as usize;
    let block = |number: u64| number as usize * block_size..(number as usize + 1) * block_size;
    let mut sample = Sample { bytes, hot: vec![SUPERBLOCK_BYTES], inodes: Vec::new(), blocks: Vec::new() };
    let meta_bg = fs.superblock().incompatible_features & incompatible::META_BG != 0;
    for table_block in 0..fs.superblock().descriptor_block_count() {
        sample.hot.push(block(descriptor_block_location(fs.superblock(), table_block, meta_bg)));
    }
    let mut seen = HashSet::new();
    let mut pending = vec![fs.root()];
    while let Some(number) = pending.pop() {
        if !seen.insert(number) {
            continue;
        }
        let inode = fs.inode(number).expect("a sample's inodes read");
        let location = locate_inode(fs.superblock(), fs.groups(), number).expect("a sample's inodes are located");
        let start = block(location.block).start + location.offset;
        sample.inodes.push(start..start + usize::from(fs.superblock().inode_size));
        for tree_block in mapping_blocks(&inode) {
            sample.blocks.push(block(tree_block));
        }
        let has_blocks = inode.file_type == FileType::Directory || (inode.file_type == FileType::Symlink && inode.sectors > 0);
        let blocks = inode.size.div_ceil(block_size as u64);
        let mut logical = 0;
        while has_blocks && logical < blocks {
            let run = fs.map_block(&inode, logical).expect("a sample's blocks map");
            if let Run::Data { physical, length } = run {
                (physical..physical + length.min(blocks - logical)).for_each(|data| sample.blocks.push(block(data)));
            }
            logical += run.length();
        }
        if inode.file_type == FileType::Directory {
            pending.extend(fs.read_dir(&inode).expect("a sample's directories read").iter().map(|entry| entry.inode));
        }
    }
    sample.hot.extend(sample.inodes.iter().cloned());
    sample.hot.extend(sample.blocks.iter().cloned());
    sample.hot.sort_by_key(|range| range.start);
    sample.hot.dedup();
    sample
}

/// The extent tree's non-root nodes below `inode`'s root (one level is all
/// the samples have), or a block map's indirect blocks.
fn mapping_blocks(inode: &Inode) -> Vec<u64> {
    let area = &inode.block_area;
    if inode.flags & inode_flags::EXTENTS == 0 {
        return (12..15).map(|slot| u64::from(le32(area, slot * 4))).filter(|&block| block != 0).collect();
    }
    if le16(area, 6) == 0 {
        return Vec::new();
    }
    index_children(area)
}

/// The sample `input` was most likely made from: the one of about its
/// length whose superblock differs from it in the fewest bytes.
pub(super) fn closest_sample(input: &[u8]) -> Option<&'static Sample> {
    let input_superblock = input.get(SUPERBLOCK_BYTES).unwrap_or_default();
    let differing = |sample: &&Sample| sample.bytes[SUPERBLOCK_BYTES].iter().zip(input_superblock).filter(|(left, right)| left != right).count();
    samples().iter().filter(|sample| sample.bytes.len().abs_diff(input.len()) <= 4096).min_by_key(differing)
}
