//! The tmpfs as a [`FileSystem`]: each method is the tmpfs's own.

use alloc::borrow::Cow;

use crate::file_system::{FileSystem, Statistics};
use crate::inode::{FileKind, InodeNumber, Stat, Timestamp};
use crate::{Errno, Tmpfs};

/// `TMPFS_MAGIC`.
pub const TMPFS_MAGIC: u64 = 0x0102_1994;

impl FileSystem for Tmpfs {
    fn root(&self) -> InodeNumber {
        Tmpfs::root(self)
    }

    fn kind(&self, inode: InodeNumber) -> Result<FileKind, Errno> {
        Tmpfs::kind(self, inode)
    }

    fn stat(&self, inode: InodeNumber) -> Result<Stat, Errno> {
        Tmpfs::stat(self, inode)
    }

    fn child(&self, directory: InodeNumber, name: &[u8]) -> Result<Option<InodeNumber>, Errno> {
        if Tmpfs::kind(self, directory)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        Ok(Tmpfs::child(self, directory, name))
    }

    fn read(&self, inode: InodeNumber, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
        Tmpfs::read(self, inode, offset, buffer)
    }

    fn contents(&self, inode: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        Tmpfs::contents(self, inode)
    }

    fn read_link(&self, inode: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        Tmpfs::read_link(self, inode).map(Cow::Borrowed)
    }

    fn visit_entries(&self, directory: InodeNumber, start: usize, visit: &mut dyn FnMut(&[u8], InodeNumber, FileKind) -> bool) -> Result<usize, Errno> {
        Tmpfs::visit_entries(self, directory, start, visit)
    }

    /// Only what the tree knows: its size is the machine's free memory,
    /// which the kernel fills in.
    fn statistics(&self) -> Statistics {
        let mut statistics = Statistics { magic: TMPFS_MAGIC, block_size: 4096, name_max: crate::paths::MAX_NAME as u64, ..Statistics::default() };
        // As much as memory allows: what its files hold plus what is free.
        if let Some(free) = self.free_pages() {
            statistics.blocks = self.owned_bytes() / 4096 + free;
            statistics.free_blocks = free;
            statistics.available_blocks = free;
        }
        statistics
    }

    fn create(&mut self, directory: InodeNumber, name: &[u8], kind: FileKind, permissions: u32, now: Timestamp) -> Result<InodeNumber, Errno> {
        Tmpfs::create(self, directory, name, kind, permissions, now)
    }

    fn symlink(&mut self, directory: InodeNumber, name: &[u8], target: &[u8], now: Timestamp) -> Result<InodeNumber, Errno> {
        Tmpfs::symlink(self, directory, name, target, now)
    }

    fn link(&mut self, directory: InodeNumber, name: &[u8], target: InodeNumber, now: Timestamp) -> Result<(), Errno> {
        Tmpfs::link(self, directory, name, target, now)
    }

    fn unlink(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        Tmpfs::unlink(self, directory, name, now)
    }

    fn rmdir(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        Tmpfs::rmdir(self, directory, name, now)
    }

    fn rename(&mut self, from: InodeNumber, from_name: &[u8], to: InodeNumber, to_name: &[u8], now: Timestamp) -> Result<(), Errno> {
        Tmpfs::rename(self, from, from_name, to, to_name, now)
    }

    fn write(&mut self, inode: InodeNumber, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Errno> {
        Tmpfs::write(self, inode, offset, data, now)
    }

    fn overwrite(&mut self, inode: InodeNumber, offset: u64, data: &[u8]) -> Result<(), Errno> {
        Tmpfs::overwrite(self, inode, offset, data)
    }

    fn truncate(&mut self, inode: InodeNumber, length: u64, now: Timestamp) -> Result<(), Errno> {
        Tmpfs::truncate(self, inode, length, now)
    }

    fn set_permissions(&mut self, inode: InodeNumber, permissions: u32, now: Timestamp) -> Result<(), Errno> {
        Tmpfs::set_permissions(self, inode, permissions, now)
    }

    fn set_owner(&mut self, inode: InodeNumber, owner: Option<u32>, group: Option<u32>, now: Timestamp) -> Result<(), Errno> {
        Tmpfs::set_owner(self, inode, owner, group, now)
    }

    fn set_times(&mut self, inode: InodeNumber, accessed: Timestamp, modified: Timestamp, now: Timestamp) -> Result<(), Errno> {
        Tmpfs::set_times(self, inode, accessed, modified, now)
    }

    fn opened(&mut self, inode: InodeNumber) -> Result<(), Errno> {
        Tmpfs::opened(self, inode)
    }

    fn closed(&mut self, inode: InodeNumber) {
        Tmpfs::closed(self, inode)
    }

    fn open_descriptions(&self, inode: InodeNumber) -> Option<u32> {
        Tmpfs::open_descriptions(self, inode)
    }
}
