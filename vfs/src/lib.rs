//! Lamina's file tree: an in-memory file system (tmpfs) with Linux
//! semantics, the root of every process's view of files.
//!
//! **Provides** [`Tmpfs`]: inodes (directories, regular files, symbolic
//! links, character devices, FIFOs) in an arena, named by [`InodeId`];
//! path resolution as Linux does it (`.`, `..`, symbolic links with a
//! depth limit, trailing slashes, `ENOTDIR`/`ENOENT`/`ELOOP`/
//! `ENAMETOOLONG`); create, mkdir, symlink, mknod, link, unlink, rmdir,
//! rename; reading, writing and truncating files; directory listing;
//! [`Stat`] records. Files unpacked from the initramfs keep borrowing the
//! archive's bytes until first written.
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

mod inode;
mod paths;
mod populate;
mod tree;

pub use inode::{FileKind, InodeId, Stat, Timestamp};
pub use linux_abi::Errno;
pub use paths::{Resolved, MAX_PATH, MAX_SYMLINK_DEPTH};
pub use populate::UnpackError;
pub use tree::{DirectoryEntry, Tmpfs};

#[cfg(test)]
mod tests;
