//! Allocating and freeing blocks: a run of free bits found in the block
//! bitmaps from a goal block on (the group holding the goal first, then
//! the following groups, wrapping around), the group's and file system's
//! free counts and the bitmap checksum kept in step.
//!
//! A block freed by a journal transaction that has not committed is not
//! handed out ([`Transaction::reusable`]): file data is written in place
//! before its metadata commits, and must not land on a block the disk
//! still gives to another file.
//!
//! Goals come from the caller: the block after the file's neighbouring
//! extent, or the start of the inode's flexible group
//! ([`Transaction::goal_for_inode`], Linux `ext4_inode_to_goal_block`),
//! so a file's blocks stay together and near its inode's group.
//! **Must never** hand out a block that is fixed metadata or already in
//! use, nor free a block that is already free: either is reported as a
//! corruption, not obeyed.

use crate::bitmaps::{assign, first_clear, is_set, BitmapKind};
use crate::block_device::BlockDevice;
use crate::error::{Error, Structure};
use crate::features::incompatible;
use crate::group_layout::{blocks_in_group, overlaps_fixed_metadata};
use crate::inode::InodeNumber;
use crate::transaction::Transaction;

impl<D: BlockDevice> Transaction<'_, D> {
    /// The group holding `block`.
    fn group_of_block(&self, block: u64) -> u32 {
        let per_group = u64::from(self.superblock.blocks_per_group.max(1));
        let relative = block.saturating_sub(u64::from(self.superblock.first_data_block));
        u32::try_from(relative / per_group).unwrap_or(u32::MAX)
    }

    /// Where to look first for a block of `inode` with no neighbour to follow:
    /// the first block of its group, or of its flexible group's first group.
    pub(crate) fn goal_for_inode(&self, inode: InodeNumber) -> u64 {
        let superblock = self.superblock;
        let mut group = inode.0.saturating_sub(1) / superblock.inodes_per_group.max(1);
        if superblock.incompatible_features & incompatible::FLEX_BG != 0 && superblock.log_groups_per_flex < 32 {
            group &= !((1u32 << superblock.log_groups_per_flex) - 1);
        }
        superblock.group_first_block(group)
    }

    /// Allocates up to `wanted` (at least 1) consecutive blocks, the first
    /// free one at or after `goal`; returns `(first, count)`.
    pub(crate) fn allocate_blocks(&mut self, goal: u64, wanted: u64) -> Result<(u64, u64), Error> {
        let superblock = self.superblock;
        let groups = superblock.group_count();
        let goal = goal.clamp(u64::from(superblock.first_data_block), superblock.blocks_count.saturating_sub(1));
        let start_group = self.group_of_block(goal).min(groups.saturating_sub(1));
        for step in 0..=groups {
            let group = (start_group + step % groups.max(1)) % groups.max(1);
            let from = if step == 0 { goal - superblock.group_first_block(group) } else { 0 };
            if self.group(group)?.free_blocks_count == 0 {
                continue;
            }
            if let Some(run) = self.allocate_in_group(group, from, wanted.max(1))? {
                return Ok(run);
            }
        }
        Err(Error::NoSpace)
    }

    fn allocate_in_group(&mut self, group: u32, from: u64, wanted: u64) -> Result<Option<(u64, u64)>, Error> {
        let (mut descriptor, mut bitmap) = self.load_bitmap(group, BitmapKind::Blocks)?;
        let in_group = blocks_in_group(self.superblock, group);
        let group_first = self.superblock.group_first_block(group);
        let available = |bit: u64| !is_set(&bitmap, bit) && self.reusable(group_first + bit);
        let mut search = from;
        let start = loop {
            let Some(candidate) = first_clear(&bitmap, search, in_group) else { return Ok(None) };
            if self.reusable(group_first + candidate) {
                break candidate;
            }
            search = candidate + 1;
        };
        let mut count = 1;
        while count < wanted && start + count < in_group && available(start + count) {
            count += 1;
        }
        let first = group_first + start;
        if self.overlaps_fixed_metadata(first, count)? || u64::from(descriptor.free_blocks_count) < count {
            return Err(Error::invalid(Structure::BlockBitmap(group), "free bits over metadata or beyond the count"));
        }
        for bit in start..start + count {
            assign(&mut bitmap, bit, true);
        }
        descriptor.free_blocks_count -= count as u32;
        self.store_bitmap(group, BitmapKind::Blocks, descriptor, bitmap)?;
        Ok(Some((first, count)))
    }

    /// Frees `count` blocks from `first`, which must all be in use.
    pub(crate) fn free_blocks(&mut self, first: u64, count: u64) -> Result<(), Error> {
        if count == 0 {
            return Ok(());
        }
        if self.overlaps_fixed_metadata(first, count)? || first.saturating_add(count) > self.superblock.blocks_count {
            return Err(Error::invalid(Structure::BlockBitmap(self.group_of_block(first)), "freeing metadata blocks"));
        }
        let mut block = first;
        let end = first + count;
        while block < end {
            let group = self.group_of_block(block);
            let group_first = self.superblock.group_first_block(group);
            let group_end = group_first + blocks_in_group(self.superblock, group);
            let piece_end = end.min(group_end);
            let (mut descriptor, mut bitmap) = self.load_bitmap(group, BitmapKind::Blocks)?;
            for bit in (block - group_first)..(piece_end - group_first) {
                if !is_set(&bitmap, bit) {
                    return Err(Error::invalid(Structure::BlockBitmap(group), "freeing a free block"));
                }
                assign(&mut bitmap, bit, false);
            }
            descriptor.free_blocks_count = descriptor.free_blocks_count.saturating_add((piece_end - block) as u32);
            self.store_bitmap(group, BitmapKind::Blocks, descriptor, bitmap)?;
            block = piece_end;
        }
        self.release(first, count);
        Ok(())
    }

    /// Whether `first..first + count` touches any group's fixed metadata.
    pub(crate) fn overlaps_fixed_metadata(&self, first: u64, count: u64) -> Result<bool, Error> {
        let groups = (0..self.superblock.group_count()).map(|group| self.group(group).map(|d| (group, d)));
        let descriptors: alloc::vec::Vec<_> = groups.collect::<Result<_, _>>()?;
        Ok(overlaps_fixed_metadata(self.superblock, descriptors.into_iter(), first, count))
    }
}
