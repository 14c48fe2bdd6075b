//! One operation's view of the file system while it changes it: blocks
//! read through the operation's own pending writes, group descriptors
//! through its own changed copies, every change recorded in a
//! [`BlockWrites`] and nothing written until the operation succeeds.
//!
//! [`Transaction::finish`] adds the changed descriptor blocks and, when the
//! free counts or features changed, the superblock's block, so the result is
//! the complete set of blocks the operation changes. **Must never** write
//! to the disk, and never record a block image outside the file system or
//! of the wrong size.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::{BlockKind, BlockWrites};
use crate::disk::Disk;
use crate::error::{Error, Problem, Structure};
use crate::features::incompatible;
use crate::freed_blocks::FreedBlocks;
use crate::group_descriptors::{descriptor_block_location, GroupDescriptor, GroupDescriptors};
use crate::superblock::{Superblock, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE};

/// An operation in progress.
pub(crate) struct Transaction<'a, D> {
    disk: &'a Disk<D>,
    /// The geometry, features and counts as committed.
    pub(crate) superblock: &'a Superblock,
    groups: &'a GroupDescriptors,
    changed_groups: BTreeMap<u32, GroupDescriptor>,
    added_read_only_features: u32,
    /// Blocks freed by the uncommitted journal transaction: not reusable yet.
    unavailable: Option<&'a FreedBlocks>,
    /// `incompat` bits set in the superblock image this operation writes
    /// (`RECOVER` when the image goes through the journal).
    superblock_marks: u32,
    /// Blocks read and not changed, kept so each is read once per operation.
    clean: BTreeMap<u64, Vec<u8>>,
    /// Clean blocks whose checksum and structure were checked already in
    /// this operation (see [`Transaction::needs_check`]).
    checked: BTreeSet<u64>,
    writes: BlockWrites,
}

/// What a finished operation changes: the blocks, and the in-memory
/// descriptors and superblock that describe the disk once they are written.
pub(crate) struct Changes {
    pub(crate) writes: BlockWrites,
    pub(crate) groups: Vec<(u32, GroupDescriptor, Vec<u8>)>,
    pub(crate) superblock: Superblock,
}

impl<'a, D: BlockDevice> Transaction<'a, D> {
    /// Starts an operation on the committed state.
    pub(crate) fn new(disk: &'a Disk<D>, superblock: &'a Superblock, groups: &'a GroupDescriptors) -> Self {
        Self {
            disk,
            superblock,
            groups,
            changed_groups: BTreeMap::new(),
            added_read_only_features: 0,
            unavailable: None,
            superblock_marks: 0,
            clean: BTreeMap::new(),
            checked: BTreeSet::new(),
            writes: BlockWrites::default(),
        }
    }

    /// Journals the operation: blocks in `unavailable` are not allocated,
    /// and the superblock image carries `RECOVER` (it reaches home only by
    /// checkpoint, while the log is in use).
    pub(crate) fn journaled(mut self, unavailable: &'a FreedBlocks) -> Self {
        self.unavailable = Some(unavailable);
        self.superblock_marks = incompatible::RECOVER;
        self
    }

    /// Whether `block`, free in the bitmap, may be allocated: not freed by
    /// a transaction that has not committed (this operation included).
    pub(crate) fn reusable(&self, block: u64) -> bool {
        !self.unavailable.is_some_and(|freed| freed.contains(block)) && !self.writes.was_released(block)
    }

    /// Bytes per block.
    pub(crate) fn block_size(&self) -> usize {
        self.superblock.block_size as usize
    }

    /// `block` as this operation sees it (its own pending image, else the disk).
    pub(crate) fn read_block(&mut self, block: u64, structure: Structure) -> Result<Vec<u8>, Error> {
        if let Some(bytes) = self.writes.get(block).or_else(|| self.clean.get(&block).map(Vec::as_slice)) {
            return Ok(bytes.to_vec());
        }
        let mut bytes = alloc::vec![0u8; self.block_size()];
        self.disk.read_blocks(block, &mut bytes, structure)?;
        self.clean.insert(block, bytes.clone());
        Ok(bytes)
    }

    /// Whether `block`'s bytes must be checked (checksum, structure) when
    /// read: not when this operation wrote them, nor when they are a
    /// journaled image (this file system wrote and sealed them since the
    /// last checkpoint), nor when this operation checked them already. A
    /// block from the disk is checked once per operation, not on every
    /// access (re-checking a directory's blocks for each lookup was a
    /// large part of creating files).
    pub(crate) fn needs_check(&self, block: u64) -> bool {
        self.writes.get(block).is_none() && !self.disk.is_journaled(block) && !self.checked.contains(&block)
    }

    /// Notes that `block`, as read in this operation, passed its checks.
    pub(crate) fn mark_checked(&mut self, block: u64) {
        self.checked.insert(block);
    }

    /// Records `bytes` (one block) as `block`'s new contents.
    pub(crate) fn write_block(
        &mut self,
        block: u64,
        bytes: Vec<u8>,
        kind: BlockKind,
        structure: Structure,
    ) -> Result<(), Error> {
        if bytes.len() != self.block_size() || block >= self.superblock.blocks_count {
            return Err(Error::corrupted(structure, Problem::Invalid("write outside the file system")));
        }
        self.clean.remove(&block);
        self.writes.record(block, kind, bytes);
        Ok(())
    }

    /// Drops pending images of freed blocks and notes them for the journal.
    pub(crate) fn release(&mut self, first: u64, count: u64) {
        for block in first..first.saturating_add(count) {
            self.clean.remove(&block);
        }
        self.writes.release(first, count);
    }

    /// `group`'s descriptor as this operation sees it.
    pub(crate) fn group(&self, group: u32) -> Result<GroupDescriptor, Error> {
        match self.changed_groups.get(&group) {
            Some(descriptor) => Ok(*descriptor),
            None => self.groups.get(group).copied().ok_or(Error::invalid(Structure::Superblock, "group out of range")),
        }
    }

    /// Replaces `group`'s descriptor for the rest of the operation.
    pub(crate) fn set_group(&mut self, group: u32, descriptor: GroupDescriptor) {
        self.changed_groups.insert(group, descriptor);
    }

    /// Sets `ro_compat` feature bits (for example `large_file`) at commit.
    pub(crate) fn add_read_only_features(&mut self, bits: u32) {
        self.added_read_only_features |= bits & !self.superblock.read_only_features;
    }

    /// Free blocks and inodes over all groups, as this operation sees them.
    fn free_counts(&self) -> (u64, u32) {
        (0..self.superblock.group_count()).filter_map(|group| self.group(group).ok()).fold(
            (0u64, 0u32),
            |(blocks, inodes), descriptor| {
                (blocks + u64::from(descriptor.free_blocks_count), inodes.saturating_add(descriptor.free_inodes_count))
            },
        )
    }

    /// The complete set of changes: the recorded blocks plus the changed
    /// descriptor blocks and, if needed, the superblock.
    pub(crate) fn finish(mut self) -> Result<Changes, Error> {
        let mut superblock = self.superblock.clone();
        let (free_blocks, free_inodes) = self.free_counts();
        superblock.free_blocks_count = free_blocks;
        superblock.free_inodes_count = free_inodes;
        superblock.read_only_features |= self.added_read_only_features;
        let changed: Vec<(u32, GroupDescriptor)> = self.changed_groups.iter().map(|(&g, &d)| (g, d)).collect();
        let mut groups = Vec::new();
        for (group, descriptor) in changed {
            let bytes = self.write_descriptor(group, &descriptor, &superblock)?;
            groups.push((group, descriptor, bytes));
        }
        if superblock != *self.superblock {
            self.write_superblock(&superblock)?;
        }
        Ok(Changes { writes: self.writes, groups, superblock })
    }

    fn write_descriptor(
        &mut self,
        group: u32,
        descriptor: &GroupDescriptor,
        superblock: &Superblock,
    ) -> Result<Vec<u8>, Error> {
        let structure = Structure::GroupDescriptor(group);
        let mut bytes = self.groups.descriptor_bytes(group).ok_or(Error::invalid(structure, "no such group"))?.to_vec();
        descriptor.encode(&mut bytes, group, superblock);
        let per_block = superblock.descriptors_per_block().max(1);
        let meta_bg = superblock.incompatible_features & incompatible::META_BG != 0;
        let block = descriptor_block_location(superblock, group / per_block, meta_bg);
        let offset = (group % per_block) as usize * bytes.len();
        let mut image = self.read_block(block, structure)?;
        let target =
            image.get_mut(offset..offset + bytes.len()).ok_or(Error::invalid(structure, "outside its block"))?;
        target.copy_from_slice(&bytes);
        self.write_block(block, image, BlockKind::Metadata, structure)?;
        Ok(bytes)
    }

    fn write_superblock(&mut self, superblock: &Superblock) -> Result<(), Error> {
        let block_size = self.block_size() as u64;
        let block = SUPERBLOCK_OFFSET / block_size;
        let offset = (SUPERBLOCK_OFFSET % block_size) as usize;
        let mut image = self.read_block(block, Structure::Superblock)?;
        let target = image
            .get_mut(offset..offset + SUPERBLOCK_SIZE)
            .ok_or(Error::invalid(Structure::Superblock, "outside its block"))?;
        let mut marked = superblock.clone();
        marked.incompatible_features |= self.superblock_marks;
        target.copy_from_slice(&marked.encode());
        self.write_block(block, image, BlockKind::Metadata, Structure::Superblock)
    }
}
