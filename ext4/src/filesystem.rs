//! The file system as a whole: [`Ext4::open`] reads and checks the
//! superblock and the group descriptors and decides how the file system may
//! be used (with a journal: see `journal_mount`); inodes, statistics and
//! block mapping hang off the result.
//! Reading files, directories, links and paths lives in the sibling modules
//! `file_data`, `directory_reader`, `symlink` and `path`, each an `impl` of
//! [`Ext4`].
//!
//! **Must never** hand out an [`Ext4`] whose geometry, descriptors or
//! features failed a check: everything below relies on them.

use alloc::sync::Arc;

use crate::block_device::{BlockDevice, SECTOR_SIZE};
use crate::disk::{read_bytes, Disk};
use crate::error::{Error, Structure, Unsupported};
use crate::features::{mount_policy, Mount};
use crate::group_descriptors::GroupDescriptors;
use crate::inode::{Inode, InodeNumber};
use crate::inode_table::read_inode;
use crate::journaling::{CommitPolicy, Journaling};
use crate::mapping::{map_block, Run};
use crate::superblock::{Superblock, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE};

/// An opened ext4 (or ext2/ext3) file system on a device.
#[derive(Debug)]
pub struct Ext4<D: BlockDevice> {
    pub(crate) disk: Disk<D>,
    pub(crate) superblock: Superblock,
    pub(crate) groups: GroupDescriptors,
    pub(crate) mount: Mount,
    /// The journal, when the file system has one and may be written.
    pub(crate) journal: Option<Journaling<D>>,
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
    /// Reads and checks the superblock and group descriptors of `device`,
    /// writing nothing. A journal needing recovery makes the file system
    /// read-only ([`crate::ReadOnlyReason::JournalNeedsRecovery`]: use
    /// [`Ext4::open_with`] and [`crate::Access::ReadWrite`] to replay it);
    /// otherwise changes are journaled with
    /// [`CommitPolicy::EveryOperation`], so the disk is clean between calls.
    pub fn open(device: D) -> Result<Self, Error> {
        let file_system = Self::read_device(Arc::new(device))?;
        Ok(file_system.attach_journal(CommitPolicy::EveryOperation))
    }

    /// Reads and checks the superblock and group descriptors, deciding the
    /// mount by the feature sets alone; no journal attached yet.
    pub(crate) fn read_device(device: Arc<D>) -> Result<Self, Error> {
        let mut bytes = [0u8; SUPERBLOCK_SIZE];
        read_bytes(&*device, SUPERBLOCK_OFFSET, &mut bytes)?;
        let superblock = Superblock::parse(&bytes)?;
        let mount = mount_policy(superblock.incompatible_features, superblock.read_only_features)
            .map_err(|names| Error::Unsupported(Unsupported::Features(names)))?;
        let sectors_per_block = u64::from(superblock.block_size) / SECTOR_SIZE as u64;
        if device.sector_count() / sectors_per_block < superblock.blocks_count {
            return Err(Error::invalid(Structure::Superblock, "s_blocks_count beyond the device"));
        }
        let disk = Disk::new(device, superblock.block_size, superblock.blocks_count);
        let groups = GroupDescriptors::read(&disk, &superblock)?;
        Ok(Self { disk, superblock, groups, mount, journal: None })
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

    /// The device, giving up the file system as a power cut would: what
    /// is not yet committed is lost, and a journal left in use is replayed
    /// by the next [`Ext4::open_with`] ([`Ext4::unmount`] leaves the disk
    /// clean instead). Under [`CommitPolicy::EveryOperation`] every call
    /// is already home.
    pub fn into_device(self) -> D {
        let Ext4 { disk, journal, .. } = self;
        // The journal's area holds the only other handle on the device.
        drop(journal);
        match Arc::try_unwrap(disk.into_shared_device()) {
            Ok(device) => device,
            Err(_) => unreachable!("the file system and its journal area are the device's only holders"),
        }
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
