//! The mount table: which directory each mounted file system's root
//! covers, and the two crossings path resolution makes (Linux's
//! `follow_mount` and `follow_dotdot`).
//!
//! A mount covers a directory (its *point*) with the root of another file
//! system: a walk that reaches the point continues at that root
//! ([`MountTable::entered`]), and `..` at that root goes to the point
//! first ([`MountTable::left`]) and from there to the point's parent.
//! Mounting again on a covered point stacks: the new mount covers the
//! previous mount's root, and the walk enters the last one.
//!
//! **Invariant**: every mount's root belongs to a file system no other
//! mount has, and a point is never inside the file system it leads to, so
//! both crossings end (each step changes file system towards the root's or
//! away from it, and the table is finite).

use alloc::vec::Vec;

use crate::inode::{FileSystemId, InodeId};

/// One mount.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Mount {
    /// The directory it covers.
    pub point: InodeId,
    /// The mounted file system's root.
    pub root: InodeId,
    /// What was mounted (`/dev/vda`, `tmpfs`, …), as `/proc/mounts` shows it.
    pub source: Vec<u8>,
    /// The file system type (`ext4`, `tmpfs`).
    pub kind: Vec<u8>,
    /// Mounted read-only.
    pub read_only: bool,
}

/// Every mount of a namespace, oldest first.
#[derive(Default, Debug)]
pub struct MountTable {
    mounts: Vec<Mount>,
}

impl MountTable {
    /// No mounts.
    pub const fn new() -> Self {
        Self { mounts: Vec::new() }
    }

    /// The mounts, oldest first.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    /// Where a walk that reached `inode` goes on: the root of the last
    /// mount on it (and of the mounts stacked on that root), else itself.
    pub fn entered(&self, mut inode: InodeId) -> InodeId {
        while let Some(mount) = self.mounts.iter().rev().find(|mount| mount.point == inode) {
            inode = mount.root;
        }
        inode
    }

    /// Where `..` is looked up from `directory`: if it is a mounted root,
    /// the point it covers (repeated for stacked mounts), else itself.
    pub fn left(&self, mut directory: InodeId) -> InodeId {
        while let Some(mount) = self.mounts.iter().find(|mount| mount.root == directory) {
            directory = mount.point;
        }
        directory
    }

    /// The mount whose root is `root`.
    pub fn mounted_at(&self, root: InodeId) -> Option<&Mount> {
        self.mounts.iter().find(|mount| mount.root == root)
    }

    /// The mount whose root is `root`, to change.
    pub(crate) fn mounted_at_mut(&mut self, root: InodeId) -> Option<&mut Mount> {
        self.mounts.iter_mut().find(|mount| mount.root == root)
    }

    /// The mount of file system `file_system`.
    pub fn of(&self, file_system: FileSystemId) -> Option<&Mount> {
        self.mounts.iter().find(|mount| mount.root.file_system == file_system)
    }

    /// Whether some mount covers `inode`.
    pub fn is_point(&self, inode: InodeId) -> bool {
        self.mounts.iter().any(|mount| mount.point == inode)
    }

    /// Whether a mount's point lies in `file_system` (it cannot go first).
    pub fn has_mounts_inside(&self, file_system: FileSystemId) -> bool {
        self.mounts.iter().any(|mount| mount.point.file_system == file_system)
    }

    /// Records `mount` (the caller checked the invariant).
    pub(crate) fn add(&mut self, mount: Mount) -> Result<(), crate::Errno> {
        self.mounts.try_reserve(1).map_err(|_| crate::Errno::ENOMEM)?;
        self.mounts.push(mount);
        Ok(())
    }

    /// Forgets the mount of `file_system`.
    pub(crate) fn remove(&mut self, file_system: FileSystemId) -> Option<Mount> {
        let index = self.mounts.iter().position(|mount| mount.root.file_system == file_system)?;
        Some(self.mounts.remove(index))
    }
}
