//! Inodes: what a name in the tree points to.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// A mounted file system's number in a [`Namespace`](crate::Namespace)
/// (the root file system is 0).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FileSystemId(pub u32);

/// An inode's number inside its own file system: what `stat` reports as
/// `st_ino` (tmpfs: its arena slot plus 1; ext4: the on-disk number).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct InodeNumber(pub u64);

/// An inode of the namespace: the file system holding it and its number
/// there. Two file systems may use the same number; the pair is unique.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct InodeId {
    /// Which mounted file system.
    pub file_system: FileSystemId,
    /// Which inode in it.
    pub number: InodeNumber,
}

impl InodeId {
    /// Inode `number` of `file_system`.
    pub const fn new(file_system: FileSystemId, number: InodeNumber) -> Self {
        Self { file_system, number }
    }
}

/// A point in time: seconds and nanoseconds since the epoch (the ABI's).
pub use linux_abi::Timestamp;

/// What kind of file an inode is (the `S_IFMT` part of its mode).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A character device (major, minor).
    CharDevice(u32, u32),
    /// A block device (major, minor).
    BlockDevice(u32, u32),
    /// A named pipe.
    Fifo,
    /// A Unix-domain socket's name (`bind`).
    Socket,
}

impl FileKind {
    /// The `S_IFMT` bits.
    pub fn mode_bits(self) -> u32 {
        match self {
            FileKind::Regular => 0o100_000,
            FileKind::Directory => 0o040_000,
            FileKind::Symlink => 0o120_000,
            FileKind::CharDevice(..) => 0o020_000,
            FileKind::BlockDevice(..) => 0o060_000,
            FileKind::Fifo => 0o010_000,
            FileKind::Socket => 0o140_000,
        }
    }

    /// The `d_type` of a directory entry (`DT_*`).
    pub fn dirent_type(self) -> u8 {
        match self {
            FileKind::Regular => 8,
            FileKind::Directory => 4,
            FileKind::Symlink => 10,
            FileKind::CharDevice(..) => 2,
            FileKind::BlockDevice(..) => 6,
            FileKind::Fifo => 1,
            FileKind::Socket => 12,
        }
    }
}

/// A file's bytes: borrowed from the initramfs until first changed.
pub(crate) enum Data {
    Borrowed(&'static [u8]),
    Paged(crate::pages::PagedData),
}

impl Data {
    /// Bytes in the file.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Data::Borrowed(bytes) => bytes.len() as u64,
            Data::Paged(pages) => pages.len(),
        }
    }

    /// Copies from `offset` into `buffer`; how many bytes (0 at the end).
    pub(crate) fn read(&self, offset: u64, buffer: &mut [u8]) -> usize {
        match self {
            Data::Borrowed(bytes) => {
                let start = offset.min(bytes.len() as u64) as usize;
                let count = buffer.len().min(bytes.len() - start);
                buffer[..count].copy_from_slice(&bytes[start..start + count]);
                count
            }
            Data::Paged(pages) => pages.read(offset, buffer),
        }
    }
}

/// What an inode holds.
pub(crate) enum Contents {
    Directory { entries: BTreeMap<Vec<u8>, InodeNumber>, parent: InodeNumber },
    Regular(Data),
    Symlink(Vec<u8>),
    Device,
}

/// One inode.
pub(crate) struct Inode {
    pub(crate) kind: FileKind,
    pub(crate) permissions: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) links: u32,
    /// Open file descriptions naming it (the kernel counts them): an
    /// unlinked inode lives until the last is closed.
    pub(crate) opened: u32,
    pub(crate) accessed: Timestamp,
    pub(crate) modified: Timestamp,
    pub(crate) changed: Timestamp,
    pub(crate) contents: Contents,
}

/// What `stat` reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stat {
    /// Inode number.
    pub inode: u64,
    /// Kind and permission bits.
    pub mode: u32,
    /// Hard links.
    pub links: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device numbers of a device node (`st_rdev`).
    pub device: (u32, u32),
    /// Device numbers of the file system holding it (`st_dev`): a
    /// [`Namespace`](crate::Namespace) fills them in from the mount.
    pub file_system_device: (u32, u32),
    /// Size in bytes.
    pub size: u64,
    /// 512-byte blocks used.
    pub blocks: u64,
    /// Last access.
    pub accessed: Timestamp,
    /// Last change of contents.
    pub modified: Timestamp,
    /// Last change of the inode.
    pub changed: Timestamp,
}
