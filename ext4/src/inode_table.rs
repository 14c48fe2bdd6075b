//! Finding inode N: group `(N-1) / s_inodes_per_group`, slot `(N-1) mod
//! s_inodes_per_group` of that group's inode table.
//!
//! With group checksums (`gdt_csum` or `metadata_csum`) a group's flags
//! and `bg_itable_unused` are trustworthy, so an inode in an
//! `INODE_UNINIT` group or past the used part of its table is free without
//! reading it (its bytes may be stale). **Must never** read outside the
//! inode table the (checked) descriptor names.

use alloc::vec;

use crate::block_device::BlockDevice;
use crate::disk::Disk;
use crate::error::{Error, Structure};
use crate::group_descriptors::{GroupDescriptors, INODE_UNINIT};
use crate::inode::{Inode, InodeNumber};
use crate::superblock::{Checksums, Superblock};

/// Where an inode's bytes are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct InodeLocation {
    /// The inode table block holding it.
    pub block: u64,
    /// Its byte offset in that block.
    pub offset: usize,
}

/// Reads and checks inode `number`.
pub fn read_inode<D: BlockDevice>(
    disk: &Disk<D>,
    superblock: &Superblock,
    groups: &GroupDescriptors,
    number: InodeNumber,
) -> Result<Inode, Error> {
    let location = locate(superblock, groups, number)?;
    let mut block = vec![0u8; superblock.block_size as usize];
    disk.read_blocks(location.block, &mut block, Structure::Inode(number.0))?;
    let end = location.offset + usize::from(superblock.inode_size);
    let bytes =
        block.get(location.offset..end).ok_or(Error::invalid(Structure::Inode(number.0), "outside its block"))?;
    Inode::parse(bytes, number, superblock)
}

/// Where inode `number` lives, or why it cannot be read.
pub fn locate(superblock: &Superblock, groups: &GroupDescriptors, number: InodeNumber) -> Result<InodeLocation, Error> {
    let out_of_range = Error::InodeOutOfRange(number.0);
    if number.0 == 0 || number.0 > superblock.inodes_count {
        return Err(out_of_range);
    }
    let per_group = superblock.inodes_per_group.max(1);
    let group = (number.0 - 1) / per_group;
    let descriptor = groups.get(group).ok_or(out_of_range)?;
    locate_in_group(superblock, descriptor, number)
}

/// Where inode `number` lives in its group, described by `descriptor`.
pub(crate) fn locate_in_group(
    superblock: &Superblock,
    descriptor: &crate::group_descriptors::GroupDescriptor,
    number: InodeNumber,
) -> Result<InodeLocation, Error> {
    if number.0 == 0 || number.0 > superblock.inodes_count {
        return Err(Error::InodeOutOfRange(number.0));
    }
    let per_group = superblock.inodes_per_group.max(1);
    let slot = (number.0 - 1) % per_group;
    if superblock.checksums != Checksums::None {
        let used = per_group.saturating_sub(descriptor.unused_inodes_count);
        if descriptor.flags & INODE_UNINIT != 0 || slot >= used {
            return Err(Error::InodeNotInUse(number.0));
        }
    }
    let byte = u64::from(slot) * u64::from(superblock.inode_size);
    let block_size = u64::from(superblock.block_size.max(1));
    Ok(InodeLocation { block: descriptor.inode_table + byte / block_size, offset: (byte % block_size) as usize })
}
