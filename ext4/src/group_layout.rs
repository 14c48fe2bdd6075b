//! Which blocks of the file system are fixed metadata: superblock copies,
//! descriptor tables (and their reserved growth blocks), and each group's
//! bitmaps and inode table.
//!
//! The allocator uses this to build the block bitmap of a `BLOCK_UNINIT`
//! group (Linux `ext4_init_block_bitmap`) and, as a last line of defence,
//! to refuse handing out or writing file data over any of these blocks
//! whatever the bitmaps on a damaged image say. **Must never** answer
//! from anything but the checked superblock and descriptors.

use crate::features::incompatible;
use crate::group_descriptors::GroupDescriptor;
use crate::superblock::Superblock;

/// Blocks at the start of `group` holding its superblock copy and
/// descriptor blocks (Linux `ext4_num_base_meta_clusters`).
pub(crate) fn base_metadata_blocks(superblock: &Superblock, group: u32) -> u64 {
    let has_superblock = superblock.group_has_superblock(group);
    let meta_bg = superblock.incompatible_features & incompatible::META_BG != 0;
    let per_block = superblock.descriptors_per_block().max(1);
    let mut count = u64::from(has_superblock);
    if !meta_bg || group / per_block < superblock.first_meta_bg {
        if has_superblock {
            let table = if meta_bg { superblock.first_meta_bg } else { superblock.descriptor_block_count() };
            count += u64::from(table) + u64::from(superblock.reserved_gdt_blocks);
        }
    } else {
        let first = group / per_block * per_block;
        let holds_descriptors = group == first || group == first + 1 || group == first + per_block - 1;
        count += u64::from(holds_descriptors);
    }
    count
}

/// Blocks in `group` (the last group may be short).
pub(crate) fn blocks_in_group(superblock: &Superblock, group: u32) -> u64 {
    let first = superblock.group_first_block(group);
    superblock.blocks_count.saturating_sub(first).min(u64::from(superblock.blocks_per_group))
}

/// The fixed metadata ranges `(first, count)` a group's descriptor names.
pub(crate) fn descriptor_ranges(superblock: &Superblock, descriptor: &GroupDescriptor) -> [(u64, u64); 3] {
    [
        (descriptor.block_bitmap, 1),
        (descriptor.inode_bitmap, 1),
        (descriptor.inode_table, u64::from(superblock.inode_table_blocks())),
    ]
}

/// Whether blocks `first..first + count` touch fixed metadata of any group
/// in `descriptors` (or lie before the first data block).
pub(crate) fn overlaps_fixed_metadata<'a>(
    superblock: &Superblock,
    descriptors: impl Iterator<Item = (u32, GroupDescriptor)> + 'a,
    first: u64,
    count: u64,
) -> bool {
    let end = first.saturating_add(count);
    // An empty range (a group without a superblock backup) overlaps nothing.
    let overlaps = |(start, length): (u64, u64)| length > 0 && start < end && first < start.saturating_add(length);
    if first <= u64::from(superblock.first_data_block) {
        return true;
    }
    for (group, descriptor) in descriptors {
        let base = (superblock.group_first_block(group), base_metadata_blocks(superblock, group));
        if overlaps(base) || descriptor_ranges(superblock, &descriptor).into_iter().any(overlaps) {
            return true;
        }
    }
    false
}
