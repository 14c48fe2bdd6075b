//! What a file system offers the namespace: the [`FileSystem`] trait.
//!
//! A file system names its inodes with its own [`InodeNumber`]s and knows
//! nothing of mounts: the [`Namespace`](crate::Namespace) joins file
//! systems at mount points and turns numbers into [`InodeId`]s. Reading
//! (lookups, status, data, listings, link targets) every file system
//! provides; every changing operation has a default that answers `EROFS`,
//! so a read-only file system implements only the reading half.
//!
//! **Must never** panic on any number, name or offset a caller passes: an
//! inode that does not exist is `ENOENT`, a damaged on-disk structure an
//! errno (`EIO`, `EUCLEAN`, `EBADMSG`) for that one operation.
//!
//! [`InodeId`]: crate::InodeId

use alloc::borrow::Cow;
use alloc::vec::Vec;

use crate::inode::{FileKind, InodeNumber, Stat, Timestamp};
use crate::Errno;

/// `statfs` figures of a file system.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Statistics {
    /// `f_type`: the file system's magic number (tmpfs 0x0102_1994, ext4 0xEF53).
    pub magic: u64,
    /// `f_bsize` and `f_frsize`: bytes per block.
    pub block_size: u64,
    /// `f_blocks`: blocks for data.
    pub blocks: u64,
    /// `f_bfree`: free blocks.
    pub free_blocks: u64,
    /// `f_bavail`: free blocks an unprivileged user may take.
    pub available_blocks: u64,
    /// `f_files`: inodes.
    pub files: u64,
    /// `f_ffree`: free inodes.
    pub free_files: u64,
    /// `f_namelen`: the longest name.
    pub name_max: u64,
    /// `f_fsid`.
    pub id: u64,
}

/// A file system: a tree of inodes under [`root`](FileSystem::root).
///
/// Reading takes `&self`, changing `&mut self`: whoever holds the
/// namespace decides how these are serialised.
pub trait FileSystem: Send {
    /// The root directory.
    fn root(&self) -> InodeNumber;

    /// The kind of `inode`.
    fn kind(&self, inode: InodeNumber) -> Result<FileKind, Errno>;

    /// The status of `inode` (its `file_system_device` is left for the
    /// namespace to fill).
    fn stat(&self, inode: InodeNumber) -> Result<Stat, Errno>;

    /// The entry `name` of `directory` (with `.` and `..`), `None` if
    /// there is none; `ENOTDIR` if `directory` is not one.
    fn child(&self, directory: InodeNumber, name: &[u8]) -> Result<Option<InodeNumber>, Errno>;

    /// Reads from `offset` into `buffer`; the bytes read (0 at the end).
    fn read(&self, inode: InodeNumber, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno>;

    /// The whole contents of a regular file: borrowed where the file
    /// system holds them in memory, else read.
    fn contents(&self, inode: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        let size = usize::try_from(self.stat(inode)?.size).map_err(|_| Errno::EFBIG)?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(size).map_err(|_| Errno::ENOMEM)?;
        bytes.resize(size, 0);
        let mut filled = 0;
        while filled < size {
            let count = self.read(inode, filled as u64, &mut bytes[filled..])?;
            if count == 0 {
                break;
            }
            filled += count;
        }
        bytes.truncate(filled);
        Ok(Cow::Owned(bytes))
    }

    /// A symbolic link's target (`EINVAL` for anything else).
    fn read_link(&self, inode: InodeNumber) -> Result<Cow<'_, [u8]>, Errno>;

    /// Visits the entries of `directory` from position `start` (`.` is 0,
    /// `..` is 1, then the file system's order) until `visit` declines
    /// one; returns the position of the first entry not taken.
    fn visit_entries(
        &self,
        directory: InodeNumber,
        start: usize,
        visit: &mut dyn FnMut(&[u8], InodeNumber, FileKind) -> bool,
    ) -> Result<usize, Errno>;

    /// `statfs` figures.
    fn statistics(&self) -> Statistics;

    /// Creates `name` in `directory` (not a symbolic link).
    fn create(&mut self, _directory: InodeNumber, _name: &[u8], _kind: FileKind, _permissions: u32, _now: Timestamp) -> Result<InodeNumber, Errno> {
        Err(Errno::EROFS)
    }

    /// Creates the symbolic link `name` → `target` in `directory`.
    fn symlink(&mut self, _directory: InodeNumber, _name: &[u8], _target: &[u8], _now: Timestamp) -> Result<InodeNumber, Errno> {
        Err(Errno::EROFS)
    }

    /// A new name for the non-directory `target`.
    fn link(&mut self, _directory: InodeNumber, _name: &[u8], _target: InodeNumber, _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Removes the non-directory `name` from `directory`.
    fn unlink(&mut self, _directory: InodeNumber, _name: &[u8], _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Removes the empty directory `name` from `directory`.
    fn rmdir(&mut self, _directory: InodeNumber, _name: &[u8], _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Moves `from_name` in `from` to `to_name` in `to` (both here).
    fn rename(&mut self, _from: InodeNumber, _from_name: &[u8], _to: InodeNumber, _to_name: &[u8], _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Writes `data` at `offset`, growing the file as needed.
    fn write(&mut self, _inode: InodeNumber, _offset: u64, _data: &[u8], _now: Timestamp) -> Result<usize, Errno> {
        Err(Errno::EROFS)
    }

    /// Writes `data` at `offset` inside the file, times untouched.
    fn overwrite(&mut self, _inode: InodeNumber, _offset: u64, _data: &[u8]) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Sets the file's length.
    fn truncate(&mut self, _inode: InodeNumber, _length: u64, _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Sets the permission bits.
    fn set_permissions(&mut self, _inode: InodeNumber, _permissions: u32, _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Gives the inode to `owner` and/or `group`.
    fn set_owner(&mut self, _inode: InodeNumber, _owner: Option<u32>, _group: Option<u32>, _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Sets access and modification times.
    fn set_times(&mut self, _inode: InodeNumber, _accessed: Timestamp, _modified: Timestamp, _now: Timestamp) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }

    /// Makes `inode`'s data and what reaches it durable (`fsync`); a file
    /// system with nothing to write back has nothing to do.
    fn sync_file(&mut self, _inode: InodeNumber) -> Result<(), Errno> {
        Ok(())
    }

    /// Makes every change made so far durable (`sync`, `syncfs`).
    fn sync(&mut self) -> Result<(), Errno> {
        Ok(())
    }

    /// Leaves the storage clean, as an unmount would, and stays mounted
    /// (power-off): for a journaled file system, nothing left to replay.
    fn quiesce(&mut self) -> Result<(), Errno> {
        self.sync()
    }

    /// Mounted again read-only (`read_only`) or read-write (`mount -o
    /// remount`): going read-only leaves the storage clean, as an unmount
    /// would; going read-write may be refused (`EROFS`: the storage can
    /// only be read). A memory file system has nothing to do.
    fn remount(&mut self, _read_only: bool) -> Result<(), Errno> {
        Ok(())
    }

    /// The file system leaves the namespace (`umount`): its storage is
    /// left clean and given up.
    fn unmount(self: alloc::boxed::Box<Self>) -> Result<(), Errno> {
        Ok(())
    }

    /// An open file description now names `inode`.
    fn opened(&mut self, inode: InodeNumber) -> Result<(), Errno> {
        self.kind(inode).map(drop)
    }

    /// An open file description of `inode` went away.
    fn closed(&mut self, _inode: InodeNumber) {}

    /// How many open file descriptions name `inode`, if the file system
    /// counts them.
    fn open_descriptions(&self, _inode: InodeNumber) -> Option<u32> {
        None
    }

    /// Whether the kernel should keep this file system's file data in its
    /// page cache (a disk's: reading it again costs a device request; a
    /// memory file system's data is in memory already).
    fn caches_pages(&self) -> bool {
        false
    }
}
