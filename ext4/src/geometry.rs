//! The geometry a superblock describes: block groups, their sizes, where
//! descriptor blocks and superblock backups are; and the checks that make
//! every derived value safe to compute.
//!
//! After [`check`] passes, the divisors here are non-zero and the products
//! fit their types, so the methods below are plain arithmetic. **Must
//! never** be relied on for a superblock that did not pass [`check`]
//! (the methods still never panic, but their answers would mean nothing).

use crate::bytes::le32;
use crate::error::{Error, Structure};
use crate::features::read_only_compatible as ro;
use crate::superblock::{descriptor_size_is_valid, Superblock, GOOD_OLD_INODE_SIZE};

const LAST_REVISION: u32 = 1;
const GOOD_OLD_FIRST_INODE: u32 = 11;

/// Checks the fields the geometry derives from (`bytes` is the raw
/// superblock, for the cluster fields not kept in [`Superblock`]).
pub(crate) fn check(superblock: &Superblock, bytes: &[u8]) -> Result<(), Error> {
    let fail = |what| Err(Error::invalid(Structure::Superblock, what));
    let block_size = superblock.block_size;
    let bits_per_bitmap = block_size.saturating_mul(8);
    if superblock.revision > LAST_REVISION {
        return fail("s_rev_level unknown");
    }
    let inode_size = superblock.inode_size;
    if inode_size < GOOD_OLD_INODE_SIZE || !inode_size.is_power_of_two() || u32::from(inode_size) > block_size {
        return fail("s_inode_size not a power of two from 128 to the block size");
    }
    if superblock.first_inode < GOOD_OLD_FIRST_INODE || superblock.first_inode > superblock.inodes_count {
        return fail("s_first_ino out of range");
    }
    let first = superblock.first_data_block;
    if first > 1 || (first == 1 && block_size != 1024) {
        return fail("s_first_data_block not 0 (or 1 with 1 KiB blocks)");
    }
    check_clusters(superblock, bytes)?;
    let inodes_per_block = block_size / u32::from(inode_size);
    let inodes_per_group = superblock.inodes_per_group;
    if inodes_per_group < inodes_per_block || inodes_per_group > bits_per_bitmap {
        return fail("s_inodes_per_group out of range");
    }
    if !descriptor_size_is_valid(superblock) {
        return fail("s_desc_size invalid");
    }
    if u32::from(superblock.reserved_gdt_blocks) > block_size / 4 {
        return fail("s_reserved_gdt_blocks too large");
    }
    if superblock.blocks_count <= u64::from(first) {
        return fail("s_blocks_count not above s_first_data_block");
    }
    let groups = group_count(superblock).ok_or(Error::invalid(Structure::Superblock, "too many groups"))?;
    if u64::from(groups) * u64::from(inodes_per_group) != u64::from(superblock.inodes_count) {
        return fail("s_inodes_count is not groups times s_inodes_per_group");
    }
    Ok(())
}

/// Without `bigalloc` a cluster is a block; with it, a power-of-two number
/// of blocks, and `s_blocks_per_group` counts the clusters' blocks.
fn check_clusters(superblock: &Superblock, bytes: &[u8]) -> Result<(), Error> {
    let fail = |what| Err(Error::invalid(Structure::Superblock, what));
    let log_block = le32(bytes, 0x18);
    let log_cluster = le32(bytes, 0x1C);
    let clusters_per_group = le32(bytes, 0x24);
    if clusters_per_group == 0 || clusters_per_group > superblock.block_size.saturating_mul(8) {
        return fail("s_clusters_per_group out of range");
    }
    let bigalloc = superblock.read_only_features & ro::BIGALLOC != 0;
    let blocks_per_cluster_log = if bigalloc { log_cluster.checked_sub(log_block) } else { Some(0) };
    let expected = blocks_per_cluster_log
        .filter(|&shift| shift < 16 && (bigalloc || log_cluster == log_block))
        .and_then(|shift| clusters_per_group.checked_mul(1 << shift));
    if expected != Some(superblock.blocks_per_group) {
        return fail("s_blocks_per_group disagrees with the cluster size");
    }
    Ok(())
}

/// `ceil((blocks_count - first_data_block) / blocks_per_group)`, if it fits.
fn group_count(superblock: &Superblock) -> Option<u32> {
    let data_blocks = superblock.blocks_count.checked_sub(u64::from(superblock.first_data_block))?;
    let per_group = u64::from(superblock.blocks_per_group);
    let groups = data_blocks.checked_add(per_group.checked_sub(1)?)?.checked_div(per_group)?;
    u32::try_from(groups).ok()
}

impl Superblock {
    /// The number of block groups.
    pub fn group_count(&self) -> u32 {
        group_count(self).unwrap_or(0)
    }

    /// Inodes per block of the inode table.
    pub fn inodes_per_block(&self) -> u32 {
        self.block_size.checked_div(u32::from(self.inode_size)).unwrap_or(0)
    }

    /// Blocks of one group's inode table.
    pub fn inode_table_blocks(&self) -> u32 {
        let bytes = u64::from(self.inodes_per_group) * u64::from(self.inode_size);
        let blocks = bytes.div_ceil(u64::from(self.block_size.max(1)));
        u32::try_from(blocks).unwrap_or(u32::MAX)
    }

    /// Group descriptors per descriptor block.
    pub fn descriptors_per_block(&self) -> u32 {
        self.block_size.checked_div(u32::from(self.descriptor_size)).unwrap_or(0)
    }

    /// Blocks of the group descriptor table.
    pub fn descriptor_block_count(&self) -> u32 {
        self.group_count().div_ceil(self.descriptors_per_block().max(1))
    }

    /// The first block of `group`.
    pub fn group_first_block(&self, group: u32) -> u64 {
        u64::from(self.first_data_block) + u64::from(group) * u64::from(self.blocks_per_group)
    }

    /// The block holding the primary superblock: 1 with 1 KiB blocks, else 0
    /// (not always `s_first_data_block`: 1 KiB `bigalloc` sets that to 0).
    pub fn superblock_block(&self) -> u64 {
        crate::superblock::SUPERBLOCK_OFFSET / u64::from(self.block_size.max(1))
    }

    /// Whether `group` starts with a superblock copy (and descriptor table).
    pub fn group_has_superblock(&self, group: u32) -> bool {
        use crate::features::compatible::SPARSE_SUPER2;
        if group == 0 {
            return true;
        }
        if self.compatible_features & SPARSE_SUPER2 != 0 {
            return self.backup_groups.contains(&group);
        }
        if self.read_only_features & ro::SPARSE_SUPER == 0 {
            return true;
        }
        group == 1 || [3u32, 5, 7].iter().any(|&base| is_power_of(group, base))
    }
}

fn is_power_of(mut number: u32, base: u32) -> bool {
    while number > 1 && number.is_multiple_of(base) {
        number /= base;
    }
    number == 1
}

#[cfg(test)]
mod tests {
    use super::is_power_of;

    #[test]
    fn sparse_super_groups_are_powers_of_three_five_and_seven() {
        let backups: alloc::vec::Vec<u32> =
            (2..400).filter(|&group| [3, 5, 7].iter().any(|&base| is_power_of(group, base))).collect();
        assert_eq!(backups, [3, 5, 7, 9, 25, 27, 49, 81, 125, 243, 343]);
    }
}
