//! ext4 on a disk: the `ext4` crate as a [`vfs::FileSystem`], over a
//! virtio disk as its [`ext4::BlockDevice`] behind a write-back block
//! cache, mounted read-only or read-write (journaled, ordered mode,
//! transactions grouped).
//!
//! Reading is this file; the changing half (create, link, unlink, rename,
//! write, truncate, attributes, sync) is `ext4_mount_changes.rs`. A small
//! cache keeps the last inodes read; every change drops the inodes it
//! touched from it, so a read after a write never sees a stale inode. A
//! damaged structure is the `ext4` crate's errno for that one operation
//! (`EUCLEAN`, `EBADMSG` for a bad checksum, `EIO` for the device), never
//! a panic.
//!
//! Must never write to the disk of a read-only mount: its device refuses
//! writes.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::ops::ControlFlow;

use drivers::{BlockIoError, VirtioBlock};
use ext4::{BlockCache, BlockDevice, CommitPolicy, Ext4, FileType, Inode, IoError, Mount};

use crate::sleep_lock::SleepLock;
use vfs::{Errno, FileKind, FileSystem, InodeNumber, Stat, Statistics, Timestamp};

/// How a mount may use its disk (read-only, or read-write).
pub use ext4::Access;

/// `EXT4_SUPER_MAGIC`, `statfs`'s `f_type`.
pub const EXT4_MAGIC: u64 = 0xEF53;
/// Inodes the cache keeps before it starts over.
const CACHED_INODES: usize = 256;
/// Where `s_overhead_clusters` lies in the superblock.
const OVERHEAD_OFFSET: usize = 0x248;

/// A virtio disk as `ext4` sees it, behind a write-back block cache
/// (`ext4::BlockCache`: a disk with a volatile cache, flushed at every
/// journal commit point), whose lock may be held across the disk's I/O.
pub struct DiskDevice {
    raw: RawDisk,
    cache: SleepLock<BlockCache>,
}

impl DiskDevice {
    /// `disk`, for `access`, with a cache of `cache_chunks` 4 KiB chunks.
    pub fn new(disk: Arc<VirtioBlock>, access: Access, cache_chunks: usize) -> Self {
        Self { raw: RawDisk { disk, access }, cache: SleepLock::new(crate::fs::FS_LEVEL, BlockCache::new(cache_chunks)) }
    }
}

impl BlockDevice for DiskDevice {
    fn sector_count(&self) -> u64 {
        self.raw.sector_count()
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        self.cache.with(|cache| cache.read(&self.raw, first_sector, buffer))
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        self.raw.check_writable()?;
        self.cache.with(|cache| cache.write(&self.raw, first_sector, data))
    }

    fn flush(&self) -> Result<(), IoError> {
        self.cache.with(|cache| cache.flush(&self.raw))
    }
}

impl RawDisk {
    fn check_writable(&self) -> Result<(), IoError> {
        match self.access {
            Access::ReadOnly => Err(IoError::ReadOnly),
            Access::ReadWrite => Ok(()),
        }
    }
}

/// The virtio disk itself: whole sectors, written only when opened for
/// [`Access::ReadWrite`].
struct RawDisk {
    disk: Arc<VirtioBlock>,
    access: Access,
}

impl BlockDevice for RawDisk {
    fn sector_count(&self) -> u64 {
        self.disk.capacity_sectors()
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        ext4::checked_byte_range(first_sector, buffer.len(), self.sector_count())?;
        self.disk.read(first_sector, buffer).map_err(io_error)
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        self.check_writable()?;
        ext4::checked_byte_range(first_sector, data.len(), self.sector_count())?;
        self.disk.write(first_sector, data).map_err(io_error)
    }

    fn write_many(&self, pieces: &[(u64, &[u8])]) -> Result<(), IoError> {
        self.check_writable()?;
        for &(first_sector, data) in pieces {
            ext4::checked_byte_range(first_sector, data.len(), self.sector_count())?;
        }
        self.disk.write_many(pieces).map_err(io_error)
    }

    fn flush(&self) -> Result<(), IoError> {
        match self.access {
            Access::ReadOnly => Ok(()),
            Access::ReadWrite => self.disk.flush().map_err(io_error),
        }
    }
}

fn io_error(error: BlockIoError) -> IoError {
    match error {
        BlockIoError::OutOfRange => IoError::OutOfRange,
        BlockIoError::ReadOnly => IoError::ReadOnly,
        BlockIoError::OutOfMemory | BlockIoError::Device | BlockIoError::Broken => IoError::Device,
    }
}

/// Most 4 KiB chunks a mount's block cache holds.
const MOST_CACHE_CHUNKS: usize = 4096;

/// A mount's block cache: an eighth of the kernel heap, at most 16 MiB
/// (its chunks live on the heap; one that cannot be allocated is read or
/// written straight through).
fn cache_chunks() -> usize {
    (machine::heap::usage().1 / 8 / 4096).min(MOST_CACHE_CHUNKS)
}

/// An ext4 file system, mounted read-only or read-write.
pub struct Ext4Mount {
    pub(crate) file_system: Ext4<DiskDevice>,
    /// The disk, for a remount to open again.
    disk: Arc<VirtioBlock>,
    /// `s_overhead_clusters` (0: not recorded).
    overhead_blocks: u64,
    inodes: RefCell<BTreeMap<u32, Inode>>,
    /// Open file descriptions per inode.
    pub(crate) open: BTreeMap<u32, u32>,
    /// Files whose last name went while they were open: the name each
    /// holds in `lost+found` until its last description closes.
    pub(crate) orphans: BTreeMap<u32, Vec<u8>>,
}

impl Ext4Mount {
    /// Opens the ext4 file system on `disk` for `access` (read-write:
    /// its journal replayed first, changes grouped into transactions):
    /// `EINVAL` if there is none (or it uses features this kernel cannot
    /// read), `EROFS` for read-write when the disk or the file system can
    /// only be read, `EUCLEAN`/`EBADMSG` if its superblock, descriptors or
    /// journal are damaged, `EIO` if the disk fails.
    pub fn open(disk: Arc<VirtioBlock>, access: Access) -> Result<Self, Errno> {
        if access == Access::ReadWrite && disk.is_read_only() {
            return Err(Errno::EROFS);
        }
        let mut superblock = alloc::vec![0u8; 2048];
        disk.read(0, &mut superblock).map_err(crate::block_files::errno)?;
        let overhead = superblock.get(1024 + OVERHEAD_OFFSET..1024 + OVERHEAD_OFFSET + 4).map_or(0, |bytes| u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
        let file_system = Ext4::open_with(DiskDevice::new(disk.clone(), access, cache_chunks()), access, CommitPolicy::Grouped).map_err(|error| errno(&error))?;
        if access == Access::ReadWrite && file_system.mount() != Mount::ReadWrite {
            crate::kernel_log::note(format_args!("ext4: mounting read-write refused: {:?}", file_system.mount()));
            return Err(Errno::EROFS);
        }
        Ok(Self { file_system, disk, overhead_blocks: u64::from(overhead), inodes: RefCell::new(BTreeMap::new()), open: BTreeMap::new(), orphans: BTreeMap::new() })
    }

    /// Whether changes reach the disk (read-write, journal not aborted).
    pub(crate) fn is_writable(&self) -> bool {
        self.file_system.mount() == Mount::ReadWrite
    }

    /// Drops `numbers` from the inode cache (a change touched them).
    pub(crate) fn forget(&self, numbers: &[u32]) {
        let mut cache = self.inodes.borrow_mut();
        for number in numbers {
            cache.remove(number);
        }
    }

    /// Inode `number`, from the cache or the disk.
    pub(crate) fn inode(&self, number: InodeNumber) -> Result<Inode, Errno> {
        let number = u32::try_from(number.0).map_err(|_| Errno::ENOENT)?;
        if let Some(inode) = self.inodes.borrow().get(&number) {
            return Ok(inode.clone());
        }
        let inode = self.file_system.inode(ext4::InodeNumber(number)).map_err(|error| errno(&error))?;
        let mut cache = self.inodes.borrow_mut();
        if cache.len() >= CACHED_INODES {
            cache.clear();
        }
        cache.insert(number, inode.clone());
        Ok(inode)
    }

    fn directory(&self, number: InodeNumber) -> Result<Inode, Errno> {
        let inode = self.inode(number)?;
        if inode.file_type != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        Ok(inode)
    }
}

/// The errno of an `ext4` error (a stale inode reads as gone).
pub(crate) fn errno(error: &ext4::Error) -> Errno {
    match error {
        ext4::Error::InodeNotInUse(_) | ext4::Error::InodeOutOfRange(_) => Errno::ENOENT,
        _ => Errno(u16::try_from(error.errno()).unwrap_or(Errno::EIO.0)),
    }
}

/// The kind of an inode: its type, and for a device node the numbers kept
/// in `i_block` (the old 16-bit encoding in the first word, else the new
/// 32-bit one in the second, as Linux's `ext4_iget` reads them).
fn kind_of(inode: &Inode) -> FileKind {
    let word = |at: usize| u32::from_le_bytes([inode.block_area[at], inode.block_area[at + 1], inode.block_area[at + 2], inode.block_area[at + 3]]);
    let numbers = || {
        let old = word(0);
        if old != 0 {
            ((old >> 8) & 0xFF, old & 0xFF)
        } else {
            let new = word(4);
            ((new & 0xF_FF00) >> 8, (new & 0xFF) | ((new >> 12) & 0xF_FF00))
        }
    };
    match inode.file_type {
        FileType::Regular => FileKind::Regular,
        FileType::Directory => FileKind::Directory,
        FileType::Symlink => FileKind::Symlink,
        FileType::CharacterDevice => {
            let (major, minor) = numbers();
            FileKind::CharDevice(major, minor)
        }
        FileType::BlockDevice => {
            let (major, minor) = numbers();
            FileKind::BlockDevice(major, minor)
        }
        FileType::Fifo => FileKind::Fifo,
        FileType::Socket => FileKind::Socket,
    }
}

fn time(stamp: ext4::Timestamp) -> Timestamp {
    // Times before 1970 keep their two's-complement bits: `stat` writes
    // the field as the signed 64-bit `st_mtime`.
    Timestamp { seconds: stamp.seconds as u64, nanoseconds: stamp.nanoseconds.min(999_999_999) }
}

impl FileSystem for Ext4Mount {
    fn root(&self) -> InodeNumber {
        InodeNumber(u64::from(self.file_system.root().0))
    }

    fn kind(&self, inode: InodeNumber) -> Result<FileKind, Errno> {
        Ok(kind_of(&self.inode(inode)?))
    }

    fn stat(&self, number: InodeNumber) -> Result<Stat, Errno> {
        let inode = self.inode(number)?;
        let kind = kind_of(&inode);
        let device = match kind {
            FileKind::CharDevice(major, minor) | FileKind::BlockDevice(major, minor) => (major, minor),
            _ => (0, 0),
        };
        Ok(Stat {
            inode: number.0,
            mode: u32::from(inode.mode),
            links: u32::from(inode.links_count),
            uid: inode.uid,
            gid: inode.gid,
            device,
            file_system_device: (0, 0),
            size: inode.size,
            blocks: inode.sectors,
            accessed: time(inode.access_time),
            modified: time(inode.modification_time),
            changed: time(inode.change_time),
        })
    }

    fn child(&self, directory: InodeNumber, name: &[u8]) -> Result<Option<InodeNumber>, Errno> {
        let inode = self.directory(directory)?;
        if name == b"." {
            return Ok(Some(directory));
        }
        let found = self.file_system.lookup(&inode, name).map_err(|error| errno(&error))?;
        Ok(found.map(|number| InodeNumber(u64::from(number.0))))
    }

    fn read(&self, number: InodeNumber, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
        let inode = self.inode(number)?;
        match inode.file_type {
            FileType::Regular => self.file_system.read(&inode, offset, buffer).map_err(|error| errno(&error)),
            FileType::Directory => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    fn read_link(&self, number: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        let inode = self.inode(number)?;
        if inode.file_type != FileType::Symlink {
            return Err(Errno::EINVAL);
        }
        self.file_system.read_link(&inode).map(Cow::Owned).map_err(|error| errno(&error))
    }

    /// `.` and `..` first, then the other entries in on-disk order.
    fn visit_entries(&self, directory: InodeNumber, start: usize, visit: &mut dyn FnMut(&[u8], InodeNumber, FileKind) -> bool) -> Result<usize, Errno> {
        let inode = self.directory(directory)?;
        let parent = self.child(directory, b"..")?.unwrap_or(directory);
        let mut position = start;
        let dots: [(&[u8], InodeNumber); 2] = [(b".", directory), (b"..", parent)];
        for (name, number) in dots.iter().skip(start) {
            if !visit(name, *number, FileKind::Directory) {
                return Ok(position);
            }
            position += 1;
        }
        let mut index = 2;
        let mut failure = None;
        let walked = self.file_system.visit_directory(&inode, &mut |entry| {
            if entry.name == b"." || entry.name == b".." {
                return ControlFlow::Continue(());
            }
            index += 1;
            if index <= position {
                return ControlFlow::Continue(());
            }
            let number = InodeNumber(u64::from(entry.inode.0));
            let kind = match entry.file_type {
                Some(FileType::CharacterDevice | FileType::BlockDevice) | None => match self.kind(number) {
                    Ok(kind) => kind,
                    Err(error) => {
                        failure = Some(error);
                        return ControlFlow::Break(());
                    }
                },
                Some(file_type) => kind_of_type(file_type),
            };
            if !visit(entry.name, number, kind) {
                return ControlFlow::Break(());
            }
            position += 1;
            ControlFlow::Continue(())
        });
        walked.map_err(|error| errno(&error))?;
        match failure {
            Some(error) => Err(error),
            None => Ok(position),
        }
    }

    /// As Linux's `ext4_statfs`: the data blocks are the file system's
    /// less its overhead (as `mkfs` recorded it), the available ones the
    /// free less the superuser's reserve and the 2% (at most 4096 blocks)
    /// an extent file system keeps back for itself.
    fn statistics(&self) -> Statistics {
        let figures = self.file_system.statistics();
        let superblock = self.file_system.superblock();
        let reserve = if superblock.has_extents() { (figures.blocks / 50).min(4096) } else { 0 };
        let held_back = superblock.reserved_blocks_count.saturating_add(reserve);
        let uuid = superblock.uuid;
        let half = |at: usize| u64::from_le_bytes([uuid[at], uuid[at + 1], uuid[at + 2], uuid[at + 3], uuid[at + 4], uuid[at + 5], uuid[at + 6], uuid[at + 7]]);
        let overhead = if self.overhead_blocks < figures.blocks { self.overhead_blocks } else { 0 };
        Statistics {
            magic: EXT4_MAGIC,
            block_size: u64::from(figures.block_size),
            blocks: figures.blocks - overhead,
            free_blocks: figures.free_blocks,
            available_blocks: figures.free_blocks.saturating_sub(held_back),
            files: u64::from(figures.inodes),
            free_files: u64::from(figures.free_inodes),
            name_max: u64::from(figures.name_max),
            id: half(0) ^ half(8),
        }
    }

    fn create(&mut self, directory: InodeNumber, name: &[u8], kind: FileKind, permissions: u32, now: Timestamp) -> Result<InodeNumber, Errno> {
        self.make_node(directory, name, kind, permissions, now)
    }

    fn symlink(&mut self, directory: InodeNumber, name: &[u8], target: &[u8], now: Timestamp) -> Result<InodeNumber, Errno> {
        self.make_symlink(directory, name, target, now)
    }

    fn link(&mut self, directory: InodeNumber, name: &[u8], target: InodeNumber, now: Timestamp) -> Result<(), Errno> {
        self.add_link(directory, name, target, now)
    }

    fn unlink(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        self.remove_name(directory, name, now)
    }

    fn rmdir(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        self.remove_directory(directory, name, now)
    }

    fn rename(&mut self, from: InodeNumber, from_name: &[u8], to: InodeNumber, to_name: &[u8], now: Timestamp) -> Result<(), Errno> {
        self.move_name((from, from_name), (to, to_name), now)
    }

    fn write(&mut self, inode: InodeNumber, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Errno> {
        self.write_at(inode, offset, data, now)
    }

    fn overwrite(&mut self, inode: InodeNumber, offset: u64, data: &[u8]) -> Result<(), Errno> {
        self.overwrite_inside(inode, offset, data)
    }

    fn truncate(&mut self, inode: InodeNumber, length: u64, now: Timestamp) -> Result<(), Errno> {
        self.set_length(inode, length, now)
    }

    fn set_permissions(&mut self, inode: InodeNumber, permissions: u32, now: Timestamp) -> Result<(), Errno> {
        self.change_permissions(inode, permissions, now)
    }

    fn set_owner(&mut self, inode: InodeNumber, owner: Option<u32>, group: Option<u32>, now: Timestamp) -> Result<(), Errno> {
        self.change_owner(inode, owner, group, now)
    }

    fn set_times(&mut self, inode: InodeNumber, accessed: Timestamp, modified: Timestamp, now: Timestamp) -> Result<(), Errno> {
        self.change_times(inode, accessed, modified, now)
    }

    fn sync_file(&mut self, inode: InodeNumber) -> Result<(), Errno> {
        self.sync_inode(inode)
    }

    fn sync(&mut self) -> Result<(), Errno> {
        self.commit_all()
    }

    fn quiesce(&mut self) -> Result<(), Errno> {
        self.checkpoint_all()
    }

    /// Read-only: every change checkpointed first (the disk left as an
    /// unmount leaves it; `EBUSY` while an unlinked file is still open),
    /// then the file system opened again for reading. Read-write: opened
    /// again for writing (its journal replayed; `EROFS` when the disk or
    /// the file system can only be read). A refusal changes nothing.
    fn remount(&mut self, read_only: bool) -> Result<(), Errno> {
        let access = if read_only {
            if !self.orphans.is_empty() {
                return Err(Errno::EBUSY);
            }
            self.checkpoint_all()?;
            Access::ReadOnly
        } else {
            Access::ReadWrite
        };
        let reopened = Ext4Mount::open(self.disk.clone(), access)?;
        self.file_system = reopened.file_system;
        self.inodes.borrow_mut().clear();
        Ok(())
    }

    fn unmount(self: alloc::boxed::Box<Self>) -> Result<(), Errno> {
        (*self).shut_down()
    }

    fn opened(&mut self, inode: InodeNumber) -> Result<(), Errno> {
        self.note_opened(inode)
    }

    fn caches_pages(&self) -> bool {
        true
    }

    fn closed(&mut self, inode: InodeNumber) {
        self.note_closed(inode)
    }

    fn open_descriptions(&self, inode: InodeNumber) -> Option<u32> {
        Some(self.open_count(inode))
    }
}

fn kind_of_type(file_type: FileType) -> FileKind {
    match file_type {
        FileType::Regular => FileKind::Regular,
        FileType::Directory => FileKind::Directory,
        FileType::Symlink => FileKind::Symlink,
        FileType::Fifo => FileKind::Fifo,
        FileType::Socket => FileKind::Socket,
        FileType::CharacterDevice => FileKind::CharDevice(0, 0),
        FileType::BlockDevice => FileKind::BlockDevice(0, 0),
    }
}

/// What `mount` needs of a source path's inode: a block device's numbers.
pub fn block_device_numbers(kind: FileKind) -> Result<(u32, u32), Errno> {
    match kind {
        FileKind::BlockDevice(major, minor) => Ok((major, minor)),
        _ => Err(Errno::ENOTBLK),
    }
}
