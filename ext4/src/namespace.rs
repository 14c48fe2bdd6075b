//! Making names inside a transaction: new files, directories and symbolic
//! links (an inode allocated near the parent, written whole, then linked
//! into the parent), and hard links; plus the link-count rules they share.
//!
//! Link counts follow Linux: a file has at most 65000 links; a directory
//! counts "." and its subdirectories' "..", and with `dir_nlink` a count
//! that would pass 65000 becomes 1 ("many"), which is never decremented.
//! **Must never** leave a name pointing at an inode that is not written,
//! or an allocated inode without a name (the transaction is all or nothing).

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::directory_writer::check_name;
use crate::error::Error;
use crate::extent_tree_io::LoadedTree;
use crate::features::read_only_compatible;
use crate::inode::{flags, FileType, Inode, InodeNumber, BLOCK_AREA_SIZE};
use crate::inode_allocator::InodeUse;
use crate::inode_writer::{new_inode, NewInode};
use crate::symlink::MAX_TARGET_LENGTH;
use crate::timestamp::Timestamp;
use crate::transaction::Transaction;

/// Most links an inode may have (`EXT4_LINK_MAX`).
pub(crate) const LINK_MAX: u16 = 65000;
const TYPE_MASK: u16 = 0o170000;
const DIRECTORY_TYPE: u16 = 0o040000;
const SYMLINK_TYPE: u16 = 0o120000;
const REGULAR_TYPE: u16 = 0o100000;

/// Owner and time of a new name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Creation {
    /// Owner.
    pub(crate) uid: u32,
    /// Group.
    pub(crate) gid: u32,
    /// The caller's clock.
    pub(crate) now: Timestamp,
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// A new file (regular unless `mode` names a FIFO, socket or device)
    /// called `name` in `parent`.
    pub(crate) fn create(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        mode: u16,
        owner: Creation,
    ) -> Result<InodeNumber, Error> {
        let mode = if mode & TYPE_MASK == 0 { mode | REGULAR_TYPE } else { mode };
        let file_type = FileType::from_mode(mode).ok_or(Error::InvalidArgument("unknown file type in mode"))?;
        if matches!(file_type, FileType::Directory | FileType::Symlink) {
            return Err(Error::InvalidArgument("directories and links have their own calls"));
        }
        self.check_new_name(parent, name)?;
        let number = self.allocate_inode(parent, InodeUse::Other)?;
        let inode = self.fresh_inode(number, mode, owner);
        self.write_inode(&inode)?;
        self.add_entry(parent, name, number, file_type, owner.now)?;
        Ok(number)
    }

    /// A new, empty directory called `name` in `parent`.
    pub(crate) fn make_directory(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        mode: u16,
        owner: Creation,
    ) -> Result<InodeNumber, Error> {
        self.check_new_name(parent, name)?;
        let number = self.allocate_inode(parent, InodeUse::Directory)?;
        let mut inode = self.fresh_inode(number, (mode & !TYPE_MASK) | DIRECTORY_TYPE, owner);
        inode.links_count = 2;
        let mut tree = LoadedTree::default();
        let block = self.first_directory_block(number, parent, inode.checksum_seed);
        self.append_block(&inode, &mut tree, 0, block, BlockKind::Metadata)?;
        inode.size = self.block_size() as u64;
        self.store_extents(&mut inode, tree)?;
        self.write_inode(&inode)?;
        self.add_entry(parent, name, number, FileType::Directory, owner.now)?;
        let mut parent_inode = self.read_inode(parent)?;
        self.add_subdirectory_link(&mut parent_inode)?;
        self.write_inode(&parent_inode)?;
        Ok(number)
    }

    /// A symbolic link called `name` in `parent` to `target`: in `i_block`
    /// when shorter than 60 bytes, else in one block.
    pub(crate) fn make_symlink(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        target: &[u8],
        owner: Creation,
    ) -> Result<InodeNumber, Error> {
        if target.is_empty() {
            return Err(Error::NotFound);
        }
        if target.len() as u64 > MAX_TARGET_LENGTH || target.len() >= self.block_size() {
            return Err(Error::NameTooLong);
        }
        if target.contains(&0) {
            return Err(Error::InvalidArgument("link target holds NUL"));
        }
        self.check_new_name(parent, name)?;
        let number = self.allocate_inode(parent, InodeUse::Other)?;
        let mut inode = self.fresh_inode(number, SYMLINK_TYPE | 0o777, owner);
        if target.len() < BLOCK_AREA_SIZE {
            inode.flags &= !flags::EXTENTS;
            inode.block_area = [0; BLOCK_AREA_SIZE];
            inode.block_area[..target.len()].copy_from_slice(target);
        } else {
            let mut tree = self.load_extents(&inode)?;
            let mut block = alloc::vec![0u8; self.block_size()];
            block[..target.len()].copy_from_slice(target);
            self.append_block(&inode, &mut tree, 0, block, BlockKind::Data)?;
            self.store_extents(&mut inode, tree)?;
        }
        inode.size = target.len() as u64;
        self.write_inode(&inode)?;
        self.add_entry(parent, name, number, FileType::Symlink, owner.now)?;
        Ok(number)
    }

    /// A new name `name` in `parent` for the existing non-directory `target`.
    pub(crate) fn make_link(
        &mut self,
        target: InodeNumber,
        parent: InodeNumber,
        name: &[u8],
        now: Timestamp,
    ) -> Result<(), Error> {
        let inode = self.read_inode(target)?;
        if inode.file_type == FileType::Directory {
            return Err(Error::NotPermitted("hard link to a directory"));
        }
        if inode.links_count >= LINK_MAX {
            return Err(Error::TooManyLinks);
        }
        self.add_entry(parent, name, target, inode.file_type, now)?;
        let mut inode = self.read_inode(target)?;
        inode.links_count += 1;
        inode.change_time = now;
        self.write_inode(&inode)
    }

    /// Checks that `name` may be added to `parent`: a directory, without it.
    pub(crate) fn check_new_name(&mut self, parent: InodeNumber, name: &[u8]) -> Result<Inode, Error> {
        check_name(name)?;
        let directory = self.read_inode(parent)?;
        if directory.file_type != FileType::Directory {
            return Err(Error::NotADirectory);
        }
        if self.find_entry(&directory, name)?.is_some() {
            return Err(Error::Exists);
        }
        Ok(directory)
    }

    /// Counts a new subdirectory's ".." in `directory`.
    pub(crate) fn add_subdirectory_link(&mut self, directory: &mut Inode) -> Result<(), Error> {
        if directory.links_count == 1 {
            return Ok(());
        }
        if directory.links_count + 1 >= LINK_MAX {
            if self.superblock.read_only_features & read_only_compatible::DIR_NLINK == 0 {
                return Err(Error::TooManyLinks);
            }
            directory.links_count = 1;
            return Ok(());
        }
        directory.links_count += 1;
        Ok(())
    }

    /// Uncounts a removed subdirectory's ".." in `directory`.
    pub(crate) fn drop_subdirectory_link(&self, directory: &mut Inode) {
        if directory.links_count > 2 {
            directory.links_count -= 1;
        }
    }

    fn fresh_inode(&self, number: InodeNumber, mode: u16, owner: Creation) -> Inode {
        let fields = NewInode { mode, uid: owner.uid, gid: owner.gid, now: owner.now };
        new_inode(self.superblock, number, fields, generation(number, owner.now))
    }
}

/// An `i_generation` for a new inode: a mix of its number and the time
/// (Linux draws a random number; any value that changes on reuse will do).
fn generation(number: InodeNumber, now: Timestamp) -> u32 {
    let mut value = (now.seconds as u64) ^ (u64::from(now.nanoseconds) << 20) ^ (u64::from(number.0) << 40);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (value ^ (value >> 31)) as u32
}
