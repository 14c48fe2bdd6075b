//! Why an operation failed: device errors, damaged structures (which one,
//! which check), features this crate refuses, and the caller's own mistakes,
//! each mapped to the Linux errno the system-call layer returns.
//!
//! Descriptions are fixed data (`&'static str` and numbers) formatted on
//! demand, so building an error never allocates. **Must never** describe a
//! corruption without naming the structure it was found in.

use core::fmt;

use crate::block_device::IoError;
use crate::features::FeatureNames;
use crate::journal_failure::JournalFailure;

/// Linux errno values this crate maps to.
pub mod errno {
    /// Operation not permitted.
    pub const EPERM: i32 = 1;
    /// No such file or directory.
    pub const ENOENT: i32 = 2;
    /// I/O error.
    pub const EIO: i32 = 5;
    /// File exists.
    pub const EEXIST: i32 = 17;
    /// Not a directory.
    pub const ENOTDIR: i32 = 20;
    /// Is a directory.
    pub const EISDIR: i32 = 21;
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// File too large.
    pub const EFBIG: i32 = 27;
    /// No space left on device (blocks or inodes).
    pub const ENOSPC: i32 = 28;
    /// Read-only file system.
    pub const EROFS: i32 = 30;
    /// Too many links.
    pub const EMLINK: i32 = 31;
    /// File name too long.
    pub const ENAMETOOLONG: i32 = 36;
    /// Directory not empty.
    pub const ENOTEMPTY: i32 = 39;
    /// Bad message: Linux's `EFSBADCRC`, a checksum mismatch.
    pub const EBADMSG: i32 = 74;
    /// Operation not supported.
    pub const EOPNOTSUPP: i32 = 95;
    /// Stale file handle: the inode is not in use.
    pub const ESTALE: i32 = 116;
    /// Structure needs cleaning: Linux's `EFSCORRUPTED`.
    pub const EUCLEAN: i32 = 117;
}

/// Everything that can go wrong.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Error {
    /// The device failed.
    Io(IoError),
    /// An on-disk structure failed a check.
    Corrupted(Corruption),
    /// The file system or a file uses something this crate does not read.
    Unsupported(Unsupported),
    /// No entry with that name.
    NotFound,
    /// A path component or a directory argument is not a directory.
    NotADirectory,
    /// `read_link` on something that is not a symbolic link.
    NotASymlink,
    /// `read` on a file type with no data (device, FIFO, socket).
    NoData,
    /// A name longer than 255 bytes.
    NameTooLong,
    /// A path that is empty or does not start with `/`.
    NotAbsolute,
    /// An inode number of 0 or above `s_inodes_count`.
    InodeOutOfRange(u32),
    /// The inode is free (link count 0): a stale reference.
    InodeNotInUse(u32),
    /// A write on a file system mounted [`crate::Mount::ReadOnly`].
    ReadOnly,
    /// No free block or no free inode left.
    NoSpace,
    /// The name already exists in the directory.
    Exists,
    /// `rmdir` (or a rename over) a directory that still has entries.
    NotEmpty,
    /// A file operation (write, truncate, link, unlink) on a directory.
    IsADirectory,
    /// Past the largest file size, or an extent tree deeper than this
    /// crate builds (2 levels below the inode).
    FileTooLarge,
    /// A link count would pass its limit (65000 without `dir_nlink`).
    TooManyLinks,
    /// An argument the operation cannot take (the text says which).
    InvalidArgument(&'static str),
    /// An operation POSIX forbids whoever asks (a hard link to a directory).
    NotPermitted(&'static str),
    /// The journal cannot be used, replayed or written.
    Journal(JournalFailure),
}

impl Error {
    /// The Linux errno for this error.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Io(_) => errno::EIO,
            Error::Corrupted(corruption) if corruption.problem == Problem::ChecksumMismatch => errno::EBADMSG,
            Error::Corrupted(_) => errno::EUCLEAN,
            Error::Unsupported(Unsupported::Features(_)) => errno::EINVAL,
            Error::Unsupported(_) => errno::EOPNOTSUPP,
            Error::NotFound => errno::ENOENT,
            Error::NotADirectory => errno::ENOTDIR,
            Error::NotASymlink | Error::NoData | Error::NotAbsolute | Error::InodeOutOfRange(_) => errno::EINVAL,
            Error::NameTooLong => errno::ENAMETOOLONG,
            Error::InodeNotInUse(_) => errno::ESTALE,
            Error::ReadOnly => errno::EROFS,
            Error::NoSpace => errno::ENOSPC,
            Error::Exists => errno::EEXIST,
            Error::NotEmpty => errno::ENOTEMPTY,
            Error::IsADirectory => errno::EISDIR,
            Error::FileTooLarge => errno::EFBIG,
            Error::TooManyLinks => errno::EMLINK,
            Error::InvalidArgument(_) => errno::EINVAL,
            Error::NotPermitted(_) => errno::EPERM,
            Error::Journal(failure) => failure.errno(),
        }
    }

    /// A corruption of `structure` found by `problem`.
    pub(crate) fn corrupted(structure: Structure, problem: Problem) -> Self {
        Error::Corrupted(Corruption { structure, problem })
    }

    /// A field or relation of `structure` that fails the check `what`.
    pub(crate) fn invalid(structure: Structure, what: &'static str) -> Self {
        Self::corrupted(structure, Problem::Invalid(what))
    }
}

impl From<IoError> for Error {
    fn from(error: IoError) -> Self {
        Error::Io(error)
    }
}

/// A damaged on-disk structure.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Corruption {
    /// Where the damage is.
    pub structure: Structure,
    /// Which check failed.
    pub problem: Problem,
}

/// The on-disk structure a corruption was found in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Structure {
    /// The primary superblock, or the geometry it describes.
    Superblock,
    /// The descriptor of this block group.
    GroupDescriptor(u32),
    /// This inode (including its in-inode extent root or block map).
    Inode(u32),
    /// A non-root extent tree node of this inode at this block.
    ExtentNode {
        /// The file.
        inode: u32,
        /// The node's block.
        block: u64,
    },
    /// An indirect block of this inode's block map.
    IndirectBlock {
        /// The file.
        inode: u32,
        /// The indirect block.
        block: u64,
    },
    /// A block of this directory, by its index within the directory.
    DirectoryBlock {
        /// The directory.
        inode: u32,
        /// The logical block within the directory.
        logical_block: u32,
    },
    /// This symbolic link's target.
    Symlink(u32),
    /// The block bitmap of this group.
    BlockBitmap(u32),
    /// The inode bitmap of this group.
    InodeBitmap(u32),
    /// A block of the journal, or one it puts home.
    Journal,
}

/// The check a structure failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Problem {
    /// The stored checksum does not match the contents.
    ChecksumMismatch,
    /// The magic number is wrong.
    BadMagic,
    /// This field or relation is out of range (the text says which).
    Invalid(&'static str),
}

/// What this crate refuses to read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unsupported {
    /// `incompat` features not implemented (or unknown).
    Features(FeatureNames),
    /// A `metadata_csum` checksum algorithm other than crc32c (1).
    ChecksumType(u8),
    /// Changing the data of a file without an extent tree (ext2/ext3
    /// block maps are read, not written).
    BlockMapWrite,
    /// Freeing an inode that has an extended attribute block.
    ExtendedAttributeBlock,
}

impl fmt::Display for Structure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Structure::Superblock => formatter.write_str("superblock"),
            Structure::GroupDescriptor(group) => write!(formatter, "group descriptor {group}"),
            Structure::Inode(inode) => write!(formatter, "inode {inode}"),
            Structure::ExtentNode { inode, block } => write!(formatter, "inode {inode}: extent block {block}"),
            Structure::IndirectBlock { inode, block } => write!(formatter, "inode {inode}: indirect block {block}"),
            Structure::DirectoryBlock { inode, logical_block } => {
                write!(formatter, "directory {inode}: block {logical_block}")
            }
            Structure::Symlink(inode) => write!(formatter, "symlink {inode}"),
            Structure::BlockBitmap(group) => write!(formatter, "block bitmap of group {group}"),
            Structure::InodeBitmap(group) => write!(formatter, "inode bitmap of group {group}"),
            Structure::Journal => formatter.write_str("journal"),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::ChecksumMismatch => formatter.write_str("checksum mismatch"),
            Problem::BadMagic => formatter.write_str("bad magic number"),
            Problem::Invalid(what) => formatter.write_str(what),
        }
    }
}

impl fmt::Display for Corruption {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.structure, self.problem)
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::Features(names) => write!(formatter, "unsupported features: {names}"),
            Unsupported::ChecksumType(kind) => write!(formatter, "unsupported checksum type {kind}"),
            Unsupported::BlockMapWrite => formatter.write_str("writing a block-mapped file is not supported"),
            Unsupported::ExtendedAttributeBlock => {
                formatter.write_str("freeing extended attribute blocks is not supported")
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(error) => write!(formatter, "I/O error: {error:?}"),
            Error::Corrupted(corruption) => write!(formatter, "corrupted {corruption}"),
            Error::Unsupported(unsupported) => unsupported.fmt(formatter),
            Error::NotFound => formatter.write_str("not found"),
            Error::NotADirectory => formatter.write_str("not a directory"),
            Error::NotASymlink => formatter.write_str("not a symbolic link"),
            Error::NoData => formatter.write_str("file type has no data"),
            Error::NameTooLong => formatter.write_str("name too long"),
            Error::NotAbsolute => formatter.write_str("path is not absolute"),
            Error::InodeOutOfRange(inode) => write!(formatter, "inode {inode} out of range"),
            Error::InodeNotInUse(inode) => write!(formatter, "inode {inode} not in use"),
            Error::ReadOnly => formatter.write_str("read-only file system"),
            Error::NoSpace => formatter.write_str("no space left"),
            Error::Exists => formatter.write_str("name exists"),
            Error::NotEmpty => formatter.write_str("directory not empty"),
            Error::IsADirectory => formatter.write_str("is a directory"),
            Error::FileTooLarge => formatter.write_str("file too large"),
            Error::TooManyLinks => formatter.write_str("too many links"),
            Error::InvalidArgument(what) => write!(formatter, "invalid argument: {what}"),
            Error::NotPermitted(what) => write!(formatter, "not permitted: {what}"),
            Error::Journal(failure) => failure.fmt(formatter),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn corruption_names_structure_and_check() {
        let error = Error::corrupted(Structure::Inode(12), Problem::ChecksumMismatch);
        assert_eq!(error.to_string(), "corrupted inode 12: checksum mismatch");
        assert_eq!(error.errno(), errno::EBADMSG);
        let error = Error::invalid(Structure::DirectoryBlock { inode: 2, logical_block: 3 }, "rec_len too small");
        assert_eq!(error.to_string(), "corrupted directory 2: block 3: rec_len too small");
        assert_eq!(error.errno(), errno::EUCLEAN);
    }

    #[test]
    fn caller_errors_map_to_their_errno() {
        assert_eq!(Error::NotFound.errno(), errno::ENOENT);
        assert_eq!(Error::Io(IoError::Device).errno(), errno::EIO);
        assert_eq!(Error::InodeNotInUse(5).errno(), errno::ESTALE);
        assert_eq!(Error::ReadOnly.errno(), errno::EROFS);
        assert_eq!(Error::NoSpace.errno(), errno::ENOSPC);
        assert_eq!(Error::NameTooLong.errno(), errno::ENAMETOOLONG);
        assert_eq!(Error::Exists.errno(), errno::EEXIST);
        assert_eq!(Error::NotEmpty.errno(), errno::ENOTEMPTY);
    }
}
