//! Lamina's file tree: file systems joined at mount points, with Linux
//! semantics, the root of every process's view of files.
//!
//! **Provides** the [`FileSystem`] trait (what a file system offers:
//! lookups, status, data, listings, link targets; every change `EROFS`
//! unless implemented); [`Namespace`], file systems joined by a
//! [`MountTable`], naming inodes by [`InodeId`] (file system and number),
//! dispatching each operation to the inode's file system, `EXDEV` between
//! two, `EROFS` on a read-only mount; [`Tmpfs`], the in-memory file system:
//! inodes (directories, regular files, symbolic links, character devices,
//! FIFOs) in an arena; path resolution as Linux does it, across mounts (`.`, `..`, symbolic links with a
//! depth limit, trailing slashes, `ENOTDIR`/`ENOENT`/`ELOOP`/
//! `ENAMETOOLONG`); create, mkdir, symlink, mknod, link, unlink, rmdir,
//! rename; reading, writing and truncating files; directory listing;
//! [`Stat`] records. Files unpacked from the initramfs keep borrowing the
//! archive's bytes until first written; written file data lives in pages
//! of a [`PageStore`] (the kernel's gives frames, [`HeapPages`] the heap).
//!
//! **Must never** panic on any path or argument: every refusal is an
//! [`Errno`]. Running out of memory is `ENOSPC`/`ENOMEM` and changes
//! nothing. It has no locks: the kernel keeps the tree behind one.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

mod file_system;
mod inode;
mod mounts;
mod namespace;
mod pages;
mod paths;
mod populate;
mod tmpfs_file_system;
mod tree;

pub use file_system::{FileSystem, Statistics};
pub use inode::{FileKind, FileSystemId, InodeId, InodeNumber, Stat, Timestamp};
pub use linux_abi::Errno;
pub use mounts::{Mount, MountTable};
pub use namespace::{DirectoryEntry, MountOptions, Namespace};
pub use pages::{HeapPages, Page, PageStore, MAX_FILE_BYTES, PAGE_BYTES};
pub use paths::{Resolved, MAX_NAME, MAX_PATH, MAX_SYMLINK_DEPTH};
pub use populate::UnpackError;
pub use tmpfs_file_system::TMPFS_MAGIC;
pub use tree::Tmpfs;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod mount_tests;
