//! Allocating and freeing inode numbers: the lowest free bit of the inode
//! bitmap in the parent directory's group, else the following groups; the
//! group's free and directory counts, `bg_itable_unused` and the bitmap
//! checksum kept in step.
//!
//! A group leaving `INODE_UNINIT` gets a fresh bitmap, and (as Linux's
//! `ext4_new_inode` does) its block bitmap is initialised too if it was
//! `BLOCK_UNINIT`. The inode's bytes are written whole by the caller, so
//! a table that is not `ITABLE_ZEROED` is never relied on. **Must never**
//! hand out a reserved inode (below `s_first_ino`) or one already in use.

use crate::bitmaps::{assign, first_clear, is_set, BitmapKind};
use crate::block_device::BlockDevice;
use crate::error::{Error, Structure};
use crate::group_descriptors::BLOCK_UNINIT;
use crate::inode::InodeNumber;
use crate::superblock::Checksums;
use crate::transaction::Transaction;

/// Whether an inode being allocated or freed is a directory (counted in
/// the group's `bg_used_dirs_count`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum InodeUse {
    /// A directory.
    Directory,
    /// Anything else.
    Other,
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// Allocates an inode number, preferring `near`'s group.
    pub(crate) fn allocate_inode(&mut self, near: InodeNumber, usage: InodeUse) -> Result<InodeNumber, Error> {
        let per_group = self.superblock.inodes_per_group.max(1);
        let groups = self.superblock.group_count().max(1);
        let start = (near.0.saturating_sub(1) / per_group).min(groups - 1);
        for step in 0..groups {
            let group = (start + step) % groups;
            if self.group(group)?.free_inodes_count == 0 {
                continue;
            }
            if let Some(number) = self.allocate_inode_in_group(group, usage)? {
                return Ok(number);
            }
        }
        Err(Error::NoSpace)
    }

    fn allocate_inode_in_group(&mut self, group: u32, usage: InodeUse) -> Result<Option<InodeNumber>, Error> {
        let superblock = self.superblock;
        let per_group = superblock.inodes_per_group;
        // Slots below the first ordinary inode are reserved.
        let lowest = u64::from(superblock.first_inode.saturating_sub(1).saturating_sub(group * per_group));
        let (mut descriptor, mut bitmap) = self.load_bitmap(group, BitmapKind::Inodes)?;
        let Some(slot) = first_clear(&bitmap, lowest, u64::from(per_group)).map(|slot| slot as u32) else {
            return Ok(None);
        };
        assign(&mut bitmap, u64::from(slot), true);
        descriptor.free_inodes_count -= 1;
        if usage == InodeUse::Directory {
            descriptor.used_directories_count += 1;
        }
        if superblock.checksums != Checksums::None {
            let used = per_group.saturating_sub(descriptor.unused_inodes_count);
            if slot >= used {
                descriptor.unused_inodes_count = per_group - slot - 1;
            }
        }
        let block_uninit = descriptor.flags & BLOCK_UNINIT != 0;
        self.store_bitmap(group, BitmapKind::Inodes, descriptor, bitmap)?;
        if block_uninit && superblock.checksums != Checksums::None {
            let (descriptor, bitmap) = self.load_bitmap(group, BitmapKind::Blocks)?;
            self.store_bitmap(group, BitmapKind::Blocks, descriptor, bitmap)?;
        }
        Ok(Some(InodeNumber(group * per_group + slot + 1)))
    }

    /// Frees inode `number` in its group's bitmap and counts.
    pub(crate) fn free_inode(&mut self, number: InodeNumber, usage: InodeUse) -> Result<(), Error> {
        let per_group = self.superblock.inodes_per_group.max(1);
        if number.0 < self.superblock.first_inode || number.0 > self.superblock.inodes_count {
            return Err(Error::InodeOutOfRange(number.0));
        }
        let group = (number.0 - 1) / per_group;
        let slot = u64::from((number.0 - 1) % per_group);
        let (mut descriptor, mut bitmap) = self.load_bitmap(group, BitmapKind::Inodes)?;
        if !is_set(&bitmap, slot) {
            return Err(Error::invalid(Structure::InodeBitmap(group), "freeing a free inode"));
        }
        assign(&mut bitmap, slot, false);
        descriptor.free_inodes_count = descriptor.free_inodes_count.saturating_add(1);
        if usage == InodeUse::Directory {
            descriptor.used_directories_count = descriptor.used_directories_count.saturating_sub(1);
        }
        self.store_bitmap(group, BitmapKind::Inodes, descriptor, bitmap)
    }
}
