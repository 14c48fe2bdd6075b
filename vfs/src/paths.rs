//! Path resolution, as Linux's `namei`: components split on `/`, empty
//! ones skipped, `.` and `..` (the root's parent is the root), symbolic
//! links followed in the middle always and at the end on request, at
//! most [`MAX_SYMLINK_DEPTH`] of them in one resolution. The walk crosses
//! mounts where Linux does: entering the file system mounted on a name it
//! reaches, and leaving a mounted root by `..` (see `mounts.rs`).

use alloc::vec::Vec;

use crate::inode::{FileKind, InodeId};
use crate::{Errno, Namespace, Stat};

/// Longest path accepted, the NUL included (`PATH_MAX`).
pub const MAX_PATH: usize = 4096;
/// Longest component (`NAME_MAX`).
pub const MAX_NAME: usize = 255;
/// Most symbolic links one resolution follows (Linux: 40).
pub const MAX_SYMLINK_DEPTH: u32 = 40;

/// Where a path leads: the directory holding its last component, that
/// component's name, and the inode if the name exists.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Resolved {
    /// The directory the last component is looked up in.
    pub parent: InodeId,
    /// The last component (`.` for the root or a path of slashes).
    pub name: Vec<u8>,
    /// What the name names, if it exists.
    pub inode: Option<InodeId>,
    /// The path ended with `/` (the result must be a directory).
    pub trailing_slash: bool,
}

impl Namespace {
    /// The inode `path` names, relative to `start` unless absolute;
    /// `follow_last`: a symbolic link at the end is followed.
    pub fn lookup(&self, start: InodeId, path: &[u8], follow_last: bool) -> Result<InodeId, Errno> {
        self.resolve(start, path, follow_last)?.inode.ok_or(Errno::ENOENT)
    }

    /// Resolves `path` up to its last component (see [`Resolved`]): what
    /// create, unlink, rename and friends need.
    pub fn resolve(&self, start: InodeId, path: &[u8], follow_last: bool) -> Result<Resolved, Errno> {
        self.resolve_as(start, path, follow_last, &|_| true)
    }

    /// As [`resolve`](Self::resolve), for a caller that may only look into
    /// directories `may_search` allows (their search bit): EACCES at the
    /// first it may not.
    pub fn resolve_as(&self, start: InodeId, path: &[u8], follow_last: bool, may_search: &dyn Fn(&Stat) -> bool) -> Result<Resolved, Errno> {
        let mut depth = 0;
        self.walk(start, path, follow_last, &mut depth, may_search)
    }

    fn walk(&self, start: InodeId, path: &[u8], follow_last: bool, depth: &mut u32, may_search: &dyn Fn(&Stat) -> bool) -> Result<Resolved, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if path.len() >= MAX_PATH {
            return Err(Errno::ENAMETOOLONG);
        }
        let mut directory = if path[0] == b'/' { self.root() } else { start };
        let trailing_slash = path.ends_with(b"/");
        let mut components = path.split(|byte| *byte == b'/').filter(|component| !component.is_empty()).peekable();
        if components.peek().is_none() {
            return Ok(Resolved { parent: directory, name: b".".to_vec(), inode: Some(directory), trailing_slash });
        }
        while let Some(component) = components.next() {
            if component.len() > MAX_NAME {
                return Err(Errno::ENAMETOOLONG);
            }
            if self.kind(directory)? != FileKind::Directory {
                return Err(Errno::ENOTDIR);
            }
            if !may_search(&self.stat(directory)?) {
                return Err(Errno::EACCES);
            }
            let found = self.child(directory, component)?;
            let last = components.peek().is_none();
            if last {
                let Some(inode) = found else {
                    return Ok(Resolved { parent: directory, name: component.to_vec(), inode: None, trailing_slash });
                };
                if (follow_last || trailing_slash) && self.kind(inode)? == FileKind::Symlink {
                    let mut followed = self.follow(directory, inode, depth, may_search)?;
                    followed.trailing_slash |= trailing_slash;
                    if trailing_slash && followed.inode.is_some_and(|inode| self.kind(inode) != Ok(FileKind::Directory)) {
                        return Err(Errno::ENOTDIR);
                    }
                    return Ok(followed);
                }
                if trailing_slash && self.kind(inode)? != FileKind::Directory {
                    return Err(Errno::ENOTDIR);
                }
                return Ok(Resolved { parent: directory, name: component.to_vec(), inode: Some(inode), trailing_slash });
            }
            let inode = found.ok_or(Errno::ENOENT)?;
            directory = if self.kind(inode)? == FileKind::Symlink {
                self.follow(directory, inode, depth, may_search)?.inode.ok_or(Errno::ENOENT)?
            } else {
                inode
            };
        }
        Err(Errno::ENOENT)
    }

    /// Resolves the target of the symbolic link `link` found in `directory`.
    fn follow(&self, directory: InodeId, link: InodeId, depth: &mut u32, may_search: &dyn Fn(&Stat) -> bool) -> Result<Resolved, Errno> {
        *depth += 1;
        if *depth > MAX_SYMLINK_DEPTH {
            return Err(Errno::ELOOP);
        }
        let target = self.read_link(link)?.into_owned();
        self.walk(directory, &target, true, depth, may_search)
    }

    /// The entry `name` of `directory` (with `.` and `..`), crossing
    /// mounts, if there is one.
    pub fn child_of(&self, directory: InodeId, name: &[u8]) -> Option<InodeId> {
        self.child(directory, name).ok().flatten()
    }

    /// The absolute path of `directory`, found by walking `..` up and
    /// looking each step's name up in its parent (for `getcwd`); a mounted
    /// root is named by the point it covers.
    pub fn path_of(&self, directory: InodeId) -> Result<Vec<u8>, Errno> {
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut current = self.mounts.left(directory);
        while current != self.root() {
            let parent = self.local_child(current, b"..")?.ok_or(Errno::ENOENT)?;
            if parent == current {
                // The root of a file system no longer mounted.
                return Err(Errno::ENOENT);
            }
            names.push(self.name_in(parent, current)?);
            current = self.mounts.left(parent);
        }
        Ok(joined(&names))
    }

    /// The name `child` has in `directory` (both of one file system).
    fn name_in(&self, directory: InodeId, child: InodeId) -> Result<Vec<u8>, Errno> {
        let mut found = None;
        self.visit_entries(directory, 2, |name, inode, _| {
            if inode == child {
                found = Some(name.to_vec());
            }
            found.is_none()
        })?;
        found.ok_or(Errno::ENOENT)
    }

    /// A path that names `inode`: a directory's own (its parent chain), any
    /// other file's first name found walking its file system from that
    /// file system's root (a file with several links has several;
    /// `/proc/self/fd` gives one). ENOENT for a file no name leads to any
    /// more.
    pub fn some_path_of(&self, inode: InodeId) -> Result<Vec<u8>, Errno> {
        if self.kind(inode)? == FileKind::Directory {
            return self.path_of(inode);
        }
        let mut to_visit = alloc::vec![self.file_system_root(inode)?];
        while let Some(directory) = to_visit.pop() {
            let mut subdirectories = Vec::new();
            let mut found = None;
            self.visit_entries(directory, 2, |name, child, kind| {
                if child == inode {
                    found = Some(name.to_vec());
                    return false;
                }
                if kind == FileKind::Directory {
                    subdirectories.push(child);
                }
                true
            })?;
            if let Some(name) = found {
                let mut path = self.path_of(directory)?;
                if path != b"/" {
                    path.push(b'/');
                }
                path.extend_from_slice(&name);
                return Ok(path);
            }
            to_visit.extend(subdirectories);
        }
        Err(Errno::ENOENT)
    }

    /// The entry `name` of `directory`, crossing mounts: into the last
    /// mount on what the name names, and for `..` out of a mounted root
    /// first (the root's `..` is the root).
    pub(crate) fn child(&self, directory: InodeId, name: &[u8]) -> Result<Option<InodeId>, Errno> {
        match name {
            b"." => {
                self.local_child(directory, b".")?;
                Ok(Some(directory))
            }
            b".." => {
                let directory = self.mounts.left(directory);
                if directory == self.root() {
                    return Ok(Some(directory));
                }
                Ok(self.local_child(directory, b"..")?.map(|parent| self.mounts.entered(parent)))
            }
            _ => Ok(self.local_child(directory, name)?.map(|found| self.mounts.entered(found))),
        }
    }
}

/// `/a/b/c` from the names `c`, `b`, `a` (innermost first); `/` for none.
fn joined(names: &[Vec<u8>]) -> Vec<u8> {
    let mut path = Vec::new();
    for name in names.iter().rev() {
        path.push(b'/');
        path.extend_from_slice(name);
    }
    if path.is_empty() {
        path.push(b'/');
    }
    path
}
