//! The file system as a whole: [`Ext4::open`] reads and checks the
//! superblock and the group descriptors and decides how the file system may
//! be used; inodes, statistics and block mapping hang off the result.
//! Reading files, directories, links and paths lives in the sibling modules
//! `file_data`, `directory_reader`, `symlink` and `path`, each an `impl` of
//! [`Ext4`].
//!
//! **Must never** hand out an [`Ext4`] whose geometry, descriptors or
//! features failed a check: everything below relies on them.

use crate::block_device::{BlockDevice, SECTOR_SIZE};
use crate::disk::{read_bytes, Disk};
use crate::error::{Error, Structure, Unsupported};
use crate::features::{mount_policy, Mount};
use crate::group_descriptors::GroupDescriptors;
use crate::inode::{Inode, InodeNumber};
use crate::inode_table::read_inode;
use crate::mapping::{map_block, Run};
use crate::superblock::{Superblock, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE};

/// An opened ext4 (or ext2/ext3) file system on a device.
#[derive(Debug)]
pub struct Ext4<D> {
    pub(crate) disk: Disk<D>,
    pub(crate) superblock: Superblock,
    pub(crate) groups: GroupDescriptors,
    mount: Mount,
}

/// A `statfs`-style summary.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Statistics {
    /// Bytes per block.
    pub block_size: u32,
    /// Blocks in the file system.
    pub blocks: u64,
    /// Free blocks (sum of the group descriptors' counts).
    pub free_blocks: u64,
    /// Free blocks minus those reserved for the superuser.
    pub available_blocks: u64,
    /// Inodes in the file system.
    pub inodes: u32,
    /// Free inodes (sum of the group descriptors' counts).
    pub free_inodes: u32,
    /// Longest name.
    pub name_max: u32,
}

impl<D: BlockDevice> Ext4<D> {
    /// Reads and checks the superblock and group descriptors of `device`.
    pub fn open(device: D) -> Result<Self, Error> {
        let mut bytes = [0u8; SUPERBLOCK_SIZE];
        read_bytes(&device, SUPERBLOCK_OFFSET, &mut bytes)?;
        let superblock = Superblock::parse(&bytes)?;
        let mount = mount_policy(superblock.incompatible_features, superblock.read_only_features)
            .map_err(|names| Error::Unsupported(Unsupported::Features(names)))?;
        let sectors_per_block = u64::from(superblock.block_size) / SECTOR_SIZE as u64;
        if device.sector_count() / sectors_per_block < superblock.blocks_count {
            return Err(Error::invalid(Structure::Superblock, "s_blocks_count beyond the device"));
        }
        let disk = Disk::new(device, superblock.block_size, superblock.blocks_count);
        let groups = GroupDescriptors::read(&disk, &superblock)?;
        Ok(Self { disk, superblock, groups, mount })
    }

    /// How the file system may be used.
    pub fn mount(&self) -> Mount {
        self.mount
    }

    /// The superblock as read.
    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    /// The group descriptors as read.
    pub fn groups(&self) -> &GroupDescriptors {
        &self.groups
    }

    /// The device.
    pub fn device(&self) -> &D {
        self.disk.device()
    }

    /// The device, giving up the file system (committed operations are
    /// already on it).
    pub fn into_device(self) -> D {
        self.disk.into_device()
    }

    /// The root directory's inode number.
    pub fn root(&self) -> InodeNumber {
        InodeNumber::ROOT
    }

    /// Reads and checks inode `number`.
    pub fn inode(&self, number: InodeNumber) -> Result<Inode, Error> {
        read_inode(&self.disk, &self.superblock, &self.groups, number)
    }

    /// Where `inode`'s logical block `logical` is, as a run of blocks.
    pub fn map_block(&self, inode: &Inode, logical: u64) -> Result<Run, Error> {
        map_block(&self.disk, &self.superblock, inode, logical)
    }

    /// Block and inode counts, as `statfs` reports them.
    pub fn statistics(&self) -> Statistics {
        let free_blocks: u64 = self.groups.iter().map(|group| u64::from(group.free_blocks_count)).sum();
        let free_inodes = self.groups.iter().fold(0u32, |sum, group| sum.saturating_add(group.free_inodes_count));
        Statistics {
            block_size: self.superblock.block_size,
            blocks: self.superblock.blocks_count,
            free_blocks,
            available_blocks: free_blocks.saturating_sub(self.superblock.reserved_blocks_count),
            inodes: self.superblock.inodes_count,
            free_inodes,
            name_max: crate::directory::MAX_NAME_LENGTH as u32,
        }
    }
}
