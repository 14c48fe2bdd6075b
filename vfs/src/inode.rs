//! Inodes: what a name in the tree points to.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// An inode's name in the arena (its index; also its inode number less 1).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct InodeId(pub u32);

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
    Owned(Vec<u8>),
}

impl Data {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Data::Borrowed(bytes) => bytes,
            Data::Owned(bytes) => bytes,
        }
    }
}

/// What an inode holds.
pub(crate) enum Contents {
    Directory { entries: BTreeMap<Vec<u8>, InodeId>, parent: InodeId },
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
    /// Device numbers of a device node.
    pub device: (u32, u32),
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
