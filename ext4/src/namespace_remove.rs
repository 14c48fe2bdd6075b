//! Removing and moving names inside a transaction: unlink, rmdir (empty
//! directories only) and rename (within or between directories, replacing
//! an existing target the way POSIX allows), and freeing an inode whose
//! last name is gone.
//!
//! An inode whose link count reaches zero is freed at once: its blocks
//! released, `i_dtime` set, its bit cleared. There are no open-file
//! references at this layer (the VFS keeps an unlinked open file alive
//! and calls unlink last), so there is no orphan list yet. **Must never**
//! move a directory into its own subtree, or remove "." or "..".

use crate::block_device::BlockDevice;
use crate::error::{Error, Unsupported};
use crate::inode::{FileType, Inode, InodeNumber};
use crate::inode_allocator::InodeUse;
use crate::timestamp::Timestamp;
use crate::transaction::Transaction;

impl<D: BlockDevice> Transaction<'_, D> {
    /// Removes the non-directory `name` from `parent`.
    pub(crate) fn unlink(&mut self, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        let victim = self.named(parent, name)?;
        if victim.file_type == FileType::Directory {
            return Err(Error::IsADirectory);
        }
        self.remove_entry(parent, name, now)?;
        self.drop_link(victim.number, now)
    }

    /// Removes the empty directory `name` from `parent`.
    pub(crate) fn remove_directory(&mut self, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        let victim = self.named(parent, name)?;
        if victim.file_type != FileType::Directory {
            return Err(Error::NotADirectory);
        }
        if !self.is_empty_directory(&victim)? {
            return Err(Error::NotEmpty);
        }
        self.remove_entry(parent, name, now)?;
        self.free_unlinked(victim, now, InodeUse::Directory)?;
        let mut parent_inode = self.read_inode(parent)?;
        self.drop_subdirectory_link(&mut parent_inode);
        self.write_inode(&parent_inode)
    }

    /// Moves `from_name` in `from` to `to_name` in `to`, replacing what
    /// `to_name` named if POSIX allows.
    pub(crate) fn rename(
        &mut self,
        (from, from_name): (InodeNumber, &[u8]),
        (to, to_name): (InodeNumber, &[u8]),
        now: Timestamp,
    ) -> Result<(), Error> {
        crate::directory_writer::check_name(to_name)?;
        let moving = self.named(from, from_name)?;
        let target_directory = self.read_inode(to)?;
        if target_directory.file_type != FileType::Directory {
            return Err(Error::NotADirectory);
        }
        let is_directory = moving.file_type == FileType::Directory;
        if is_directory && from != to {
            self.refuse_own_subtree(moving.number, to)?;
        }
        if let Some(existing) = self.find_entry(&target_directory, to_name)? {
            if existing.inode == moving.number {
                return Ok(());
            }
            self.replace_target(to, to_name, existing.inode, is_directory, now)?;
        }
        self.remove_entry(from, from_name, now)?;
        self.add_entry(to, to_name, moving.number, moving.file_type, now)?;
        if is_directory && from != to {
            self.set_parent_entry(moving.number, to)?;
            let mut old_parent = self.read_inode(from)?;
            self.drop_subdirectory_link(&mut old_parent);
            self.write_inode(&old_parent)?;
            let mut new_parent = self.read_inode(to)?;
            self.add_subdirectory_link(&mut new_parent)?;
            self.write_inode(&new_parent)?;
        }
        let mut moved = self.read_inode(moving.number)?;
        moved.change_time = now;
        self.write_inode(&moved)
    }

    /// Removes the rename target `name` (inode `victim`) of `parent`.
    fn replace_target(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        victim: InodeNumber,
        moving_directory: bool,
        now: Timestamp,
    ) -> Result<(), Error> {
        let victim_inode = self.read_inode(victim)?;
        match (moving_directory, victim_inode.file_type == FileType::Directory) {
            (true, true) => self.remove_directory(parent, name, now),
            (false, false) => self.unlink(parent, name, now),
            (true, false) => Err(Error::NotADirectory),
            (false, true) => Err(Error::IsADirectory),
        }
    }

    /// Refuses moving directory `moving` under `destination` if
    /// `destination` is `moving` or inside it (walking ".." to the root).
    fn refuse_own_subtree(&mut self, moving: InodeNumber, destination: InodeNumber) -> Result<(), Error> {
        let mut current = destination;
        for _ in 0..self.superblock.inodes_count {
            if current == moving {
                return Err(Error::InvalidArgument("a directory cannot move into itself"));
            }
            if current == InodeNumber::ROOT {
                return Ok(());
            }
            let directory = self.read_inode(current)?;
            let parent = self.find_entry(&directory, b"..")?.ok_or(Error::NotFound)?;
            current = parent.inode;
        }
        Err(Error::InvalidArgument("directory loop"))
    }

    /// The inode `name` names in `parent`.
    fn named(&mut self, parent: InodeNumber, name: &[u8]) -> Result<Inode, Error> {
        let directory = self.read_inode(parent)?;
        let found = self.find_entry(&directory, name)?.ok_or(Error::NotFound)?;
        self.read_inode(found.inode)
    }

    /// One name of non-directory `number` is gone: one link less, freed at 0.
    fn drop_link(&mut self, number: InodeNumber, now: Timestamp) -> Result<(), Error> {
        let mut inode = self.read_inode(number)?;
        inode.links_count = inode.links_count.saturating_sub(1);
        inode.change_time = now;
        if inode.links_count > 0 {
            return self.write_inode(&inode);
        }
        self.free_unlinked(inode, now, InodeUse::Other)
    }

    /// Frees an inode with no names left: blocks, then the inode itself.
    fn free_unlinked(&mut self, mut inode: Inode, now: Timestamp, usage: InodeUse) -> Result<(), Error> {
        if inode.file_acl != 0 {
            return Err(Error::Unsupported(Unsupported::ExtendedAttributeBlock));
        }
        self.release_blocks(&mut inode)?;
        inode.links_count = 0;
        inode.size = 0;
        inode.deletion_time = now.seconds as u32;
        inode.change_time = now;
        self.write_inode(&inode)?;
        self.free_inode(inode.number, usage)
    }
}
