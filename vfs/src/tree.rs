//! The tmpfs proper: the inode arena and every operation that changes
//! names or contents. Link counts follow Linux: a file has one per name,
//! a directory two plus one per subdirectory. An inode goes when it has
//! no name and no open file description.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::inode::{Contents, Data, FileKind, Inode, InodeNumber, Stat, Timestamp};
use crate::pages::{HeapPages, PageStore, PagedData, PAGE_BYTES};
use crate::paths::MAX_NAME;
use crate::Errno;

/// An in-memory file system.
pub struct Tmpfs {
    inodes: Vec<Option<Inode>>,
    free: Vec<u32>,
    root: InodeNumber,
    /// Bytes of the pages its files hold, for `statfs`.
    bytes: u64,
    /// Where file data lives.
    store: Arc<dyn PageStore>,
    /// Where the last listing stopped: (directory, position, the name not
    /// yet visited there, or none when it reached the end). A listing read
    /// in pieces (`getdents`) resumes at that name in O(log n) instead of
    /// skipping `position` entries again, and its last, empty piece costs
    /// nothing.
    resume: core::cell::RefCell<Option<(InodeNumber, usize, Option<Vec<u8>>)>>,
}

impl Tmpfs {
    /// An empty file system: a root directory (mode 0755) and nothing
    /// else, its files' data on the heap.
    pub fn new(now: Timestamp) -> Self {
        Self::with_page_store(now, Arc::new(HeapPages))
    }

    /// An empty file system whose files' data lives in pages of `store`.
    pub fn with_page_store(now: Timestamp, store: Arc<dyn PageStore>) -> Self {
        let root = Inode {
            kind: FileKind::Directory,
            permissions: 0o755,
            uid: 0,
            gid: 0,
            links: 2,
            opened: 0,
            accessed: now,
            modified: now,
            changed: now,
            contents: Contents::Directory { entries: BTreeMap::new(), parent: InodeNumber(1) },
        };
        Self { inodes: alloc::vec![Some(root)], free: Vec::new(), root: InodeNumber(1), bytes: 0, store, resume: core::cell::RefCell::new(None) }
    }

    /// The root directory.
    pub fn root(&self) -> InodeNumber {
        self.root
    }

    /// How many inodes exist.
    pub fn inode_count(&self) -> usize {
        self.inodes.len() - self.free.len()
    }

    pub(crate) fn inode(&self, id: InodeNumber) -> Result<&Inode, Errno> {
        slot(id).and_then(|slot| self.inodes.get(slot)).and_then(Option::as_ref).ok_or(Errno::ENOENT)
    }

    fn inode_mut(&mut self, id: InodeNumber) -> Result<&mut Inode, Errno> {
        slot(id).and_then(|slot| self.inodes.get_mut(slot)).and_then(Option::as_mut).ok_or(Errno::ENOENT)
    }

    /// The kind of `id`.
    pub fn kind(&self, id: InodeNumber) -> Result<FileKind, Errno> {
        Ok(self.inode(id)?.kind)
    }

    /// The `stat` record of `id`.
    pub fn stat(&self, id: InodeNumber) -> Result<Stat, Errno> {
        let inode = self.inode(id)?;
        let size = match &inode.contents {
            Contents::Regular(data) => data.len(),
            Contents::Symlink(target) => target.len() as u64,
            Contents::Directory { entries, .. } => 4096.max(entries.len() as u64 * 32),
            Contents::Device => 0,
        };
        let device = match inode.kind {
            FileKind::CharDevice(major, minor) | FileKind::BlockDevice(major, minor) => (major, minor),
            _ => (0, 0),
        };
        Ok(Stat {
            inode: id.0,
            mode: inode.kind.mode_bits() | inode.permissions,
            links: inode.links,
            uid: inode.uid,
            gid: inode.gid,
            device,
            file_system_device: (0, 0),
            size,
            blocks: size.div_ceil(512),
            accessed: inode.accessed,
            modified: inode.modified,
            changed: inode.changed,
        })
    }

    /// Creates `name` in `directory`: a regular file, directory, device
    /// node, FIFO or socket name (symbolic links: [`symlink`](Self::symlink)).
    pub fn create(&mut self, directory: InodeNumber, name: &[u8], kind: FileKind, permissions: u32, now: Timestamp) -> Result<InodeNumber, Errno> {
        let contents = match kind {
            FileKind::Regular => Contents::Regular(Data::Paged(PagedData::default())),
            FileKind::Directory => Contents::Directory { entries: BTreeMap::new(), parent: directory },
            FileKind::CharDevice(..) | FileKind::BlockDevice(..) | FileKind::Fifo | FileKind::Socket => Contents::Device,
            FileKind::Symlink => return Err(Errno::EINVAL),
        };
        self.add(directory, name, kind, permissions & 0o7777, contents, now)
    }

    /// Creates the symbolic link `name` → `target` in `directory`.
    pub fn symlink(&mut self, directory: InodeNumber, name: &[u8], target: &[u8], now: Timestamp) -> Result<InodeNumber, Errno> {
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let mut owned = Vec::new();
        owned.try_reserve_exact(target.len()).map_err(|_| Errno::ENOSPC)?;
        owned.extend_from_slice(target);
        self.add(directory, name, FileKind::Symlink, 0o777, Contents::Symlink(owned), now)
    }

    /// A file whose bytes stay borrowed from `data` (the initramfs) until
    /// first written.
    pub fn create_borrowed(&mut self, directory: InodeNumber, name: &[u8], permissions: u32, data: &'static [u8], now: Timestamp) -> Result<InodeNumber, Errno> {
        self.add(directory, name, FileKind::Regular, permissions & 0o7777, Contents::Regular(Data::Borrowed(data)), now)
    }

    fn add(&mut self, directory: InodeNumber, name: &[u8], kind: FileKind, permissions: u32, contents: Contents, now: Timestamp) -> Result<InodeNumber, Errno> {
        check_name(name)?;
        if self.kind(directory)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        if self.child(directory, name).is_some() {
            return Err(Errno::EEXIST);
        }
        let mut key = Vec::new();
        key.try_reserve_exact(name.len()).map_err(|_| Errno::ENOSPC)?;
        key.extend_from_slice(name);
        let links = if kind == FileKind::Directory { 2 } else { 1 };
        let inode = Inode { kind, permissions, uid: 0, gid: 0, links, opened: 0, accessed: now, modified: now, changed: now, contents };
        let id = match self.free.pop() {
            Some(index) => {
                self.inodes[index as usize] = Some(inode);
                InodeNumber(u64::from(index) + 1)
            }
            None => {
                self.inodes.try_reserve(1).map_err(|_| Errno::ENOSPC)?;
                self.inodes.push(Some(inode));
                InodeNumber(self.inodes.len() as u64)
            }
        };
        let parent = self.inode_mut(directory)?;
        if let Contents::Directory { entries, .. } = &mut parent.contents {
            entries.insert(key, id);
        }
        parent.modified = now;
        parent.changed = now;
        if kind == FileKind::Directory {
            parent.links += 1;
        }
        Ok(id)
    }

    /// A new name `name` in `directory` for the existing non-directory `target`.
    pub fn link(&mut self, directory: InodeNumber, name: &[u8], target: InodeNumber, now: Timestamp) -> Result<(), Errno> {
        check_name(name)?;
        if self.kind(target)? == FileKind::Directory {
            return Err(Errno::EPERM);
        }
        if self.kind(directory)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        if self.child(directory, name).is_some() {
            return Err(Errno::EEXIST);
        }
        self.insert_entry(directory, name, target, now)?;
        let inode = self.inode_mut(target)?;
        inode.links += 1;
        inode.changed = now;
        Ok(())
    }

    /// Removes the non-directory `name` from `directory`.
    pub fn unlink(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        let target = self.existing(directory, name)?;
        if self.kind(target)? == FileKind::Directory {
            return Err(Errno::EISDIR);
        }
        self.remove_entry(directory, name, now)?;
        self.drop_link(target, now);
        Ok(())
    }

    /// Removes the empty directory `name` from `directory`.
    pub fn rmdir(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        match name {
            b"." => return Err(Errno::EINVAL),
            b".." => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        let target = self.existing(directory, name)?;
        if self.kind(target)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        if target == self.root {
            return Err(Errno::EBUSY);
        }
        if !self.is_empty_directory(target)? {
            return Err(Errno::ENOTEMPTY);
        }
        self.remove_entry(directory, name, now)?;
        self.inode_mut(directory)?.links -= 1;
        let inode = self.inode_mut(target)?;
        inode.links = 0;
        self.release_if_unused(target);
        Ok(())
    }

    /// Moves `from_name` in `from` to `to_name` in `to`, replacing what is
    /// there as `rename(2)` allows.
    pub fn rename(&mut self, from: InodeNumber, from_name: &[u8], to: InodeNumber, to_name: &[u8], now: Timestamp) -> Result<(), Errno> {
        if matches!(from_name, b"." | b"..") || matches!(to_name, b"." | b"..") {
            return Err(Errno::EBUSY);
        }
        check_name(to_name)?;
        let source = self.existing(from, from_name)?;
        if self.kind(to)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        let source_is_directory = self.kind(source)? == FileKind::Directory;
        if source_is_directory && self.is_within(to, source)? {
            return Err(Errno::EINVAL);
        }
        if let Some(target) = self.child(to, to_name) {
            if target == source {
                return Ok(());
            }
            let target_is_directory = self.kind(target)? == FileKind::Directory;
            match (source_is_directory, target_is_directory) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) if !self.is_empty_directory(target)? => return Err(Errno::ENOTEMPTY),
                (true, true) => self.rmdir(to, to_name, now)?,
                (false, false) => self.unlink(to, to_name, now)?,
            }
        }
        self.insert_entry(to, to_name, source, now)?;
        self.remove_entry(from, from_name, now)?;
        if source_is_directory {
            self.inode_mut(from)?.links -= 1;
            self.inode_mut(to)?.links += 1;
            if let Contents::Directory { parent, .. } = &mut self.inode_mut(source)?.contents {
                *parent = to;
            }
        }
        self.inode_mut(source)?.changed = now;
        Ok(())
    }

    /// Reads from `offset` into `buffer`; returns the bytes read (0 at the end).
    pub fn read(&self, id: InodeNumber, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
        match &self.inode(id)?.contents {
            Contents::Regular(data) => Ok(data.read(offset, buffer)),
            Contents::Directory { .. } => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Writes `data` at `offset`, growing the file (a hole in between) as
    /// needed; ENOSPC, changing nothing, when its pages cannot be had.
    pub fn write(&mut self, id: InodeNumber, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Errno> {
        self.change_pages(id, |store, pages| pages.write(store, offset, data))?;
        let inode = self.inode_mut(id)?;
        inode.modified = now;
        inode.changed = now;
        Ok(data.len())
    }

    /// Writes `data` at `offset` inside the file's length, times untouched:
    /// what was stored through a shared mapping of it, copied back (EINVAL
    /// past the end).
    pub fn overwrite(&mut self, id: InodeNumber, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EINVAL)?;
        if end > self.stat(id)?.size {
            return Err(Errno::EINVAL);
        }
        self.change_pages(id, |store, pages| pages.write(store, offset, data))
    }

    /// Sets the file's length (cutting, or growing with a hole).
    pub fn truncate(&mut self, id: InodeNumber, length: u64, now: Timestamp) -> Result<(), Errno> {
        self.change_pages(id, |_, pages| pages.set_length(length))?;
        let inode = self.inode_mut(id)?;
        inode.modified = now;
        inode.changed = now;
        Ok(())
    }

    /// Runs `change` on the pages of regular file `id` (a borrowed file
    /// is copied into pages first) and keeps the count of bytes held.
    fn change_pages(&mut self, id: InodeNumber, change: impl FnOnce(&dyn PageStore, &mut PagedData) -> Result<(), Errno>) -> Result<(), Errno> {
        let store = self.store.clone();
        let inode = self.inode_mut(id)?;
        let data = match &mut inode.contents {
            Contents::Regular(data) => data,
            Contents::Directory { .. } => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        };
        let before = match data {
            Data::Paged(pages) => pages.pages_held(),
            Data::Borrowed(_) => 0,
        };
        if let Data::Borrowed(bytes) = data {
            *data = Data::Paged(PagedData::copy_of(&*store, bytes)?);
        }
        let Data::Paged(pages) = data else { return Err(Errno::EINVAL) };
        let result = change(&*store, pages);
        let after = pages.pages_held();
        self.bytes = (self.bytes + after * PAGE_BYTES as u64).saturating_sub(before * PAGE_BYTES as u64);
        result
    }

    fn held_bytes(&self, id: InodeNumber) -> u64 {
        match self.inode(id).map(|inode| &inode.contents) {
            Ok(Contents::Regular(Data::Paged(pages))) => pages.pages_held() * PAGE_BYTES as u64,
            _ => 0,
        }
    }

    /// Bytes of the pages the tree's files hold (not counting the
    /// initramfs's bytes they still borrow).
    pub fn owned_bytes(&self) -> u64 {
        self.bytes
    }

    /// Pages its store could still give, if it knows.
    pub fn free_pages(&self) -> Option<u64> {
        self.store.free_pages()
    }

    /// The whole contents of a regular file: borrowed from the initramfs,
    /// or a copy of its pages (ENOMEM without room for one).
    pub fn contents(&self, id: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        match &self.inode(id)?.contents {
            Contents::Regular(Data::Borrowed(bytes)) => Ok(Cow::Borrowed(bytes)),
            Contents::Regular(data) => {
                let mut bytes = Vec::new();
                let length = usize::try_from(data.len()).map_err(|_| Errno::ENOMEM)?;
                bytes.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
                bytes.resize(length, 0);
                data.read(0, &mut bytes);
                Ok(Cow::Owned(bytes))
            }
            Contents::Directory { .. } => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// A symbolic link's target.
    pub fn read_link(&self, id: InodeNumber) -> Result<&[u8], Errno> {
        match &self.inode(id)?.contents {
            Contents::Symlink(target) => Ok(target),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Visits the entries of `directory` from position `start` (`.` is 0,
    /// `..` is 1, then by name) until `visit` declines one; returns the
    /// position of the first entry not taken. Nothing is copied.
    pub fn visit_entries(&self, directory: InodeNumber, start: usize, mut visit: impl FnMut(&[u8], InodeNumber, FileKind) -> bool) -> Result<usize, Errno> {
        let inode = self.inode(directory)?;
        let Contents::Directory { entries, parent } = &inode.contents else { return Err(Errno::ENOTDIR) };
        let mut position = start;
        let dots: [(&[u8], InodeNumber); 2] = [(b".", directory), (b"..", *parent)];
        for (name, id) in dots.iter().skip(start) {
            if !visit(name, *id, FileKind::Directory) {
                return Ok(position);
            }
            position += 1;
        }
        // Resume at the name the last listing stopped at, when this one
        // starts where that one stopped (positions count from the same
        // order; a name removed meanwhile resumes at the next one).
        // A listing that ended at `position` (no name) ends there again,
        // unless a name came after the last one since.
        let resumed = self.resume.borrow_mut().take().filter(|(at, stopped, _)| *at == directory && *stopped == position && position >= 2);
        let mut rest: alloc::boxed::Box<dyn Iterator<Item = (&Vec<u8>, &InodeNumber)>> = match &resumed {
            Some((_, _, Some(name))) => alloc::boxed::Box::new(entries.range::<[u8], _>((core::ops::Bound::Included(name.as_slice()), core::ops::Bound::Unbounded))),
            Some((_, _, None)) if position == entries.len() + 2 => alloc::boxed::Box::new(core::iter::empty()),
            _ => alloc::boxed::Box::new(entries.iter().skip(start.saturating_sub(2))),
        };
        for (name, &id) in &mut rest {
            if !visit(name, id, self.kind(id)?) {
                *self.resume.borrow_mut() = Some((directory, position, Some(name.clone())));
                return Ok(position);
            }
            position += 1;
        }
        *self.resume.borrow_mut() = Some((directory, position, None));
        Ok(position)
    }

    /// Sets the permission bits (`chmod`).
    pub fn set_permissions(&mut self, id: InodeNumber, permissions: u32, now: Timestamp) -> Result<(), Errno> {
        let inode = self.inode_mut(id)?;
        inode.permissions = permissions & 0o7777;
        inode.changed = now;
        Ok(())
    }

    /// Gives the inode to `owner` and/or `group` (`chown`; `None` leaves
    /// one). A regular file loses set-user-ID, and set-group-ID when it is
    /// group-executable, as on Linux.
    pub fn set_owner(&mut self, id: InodeNumber, owner: Option<u32>, group: Option<u32>, now: Timestamp) -> Result<(), Errno> {
        let inode = self.inode_mut(id)?;
        if let Some(owner) = owner {
            inode.uid = owner;
        }
        if let Some(group) = group {
            inode.gid = group;
        }
        if inode.kind == FileKind::Regular {
            inode.permissions &= !0o4000;
            if inode.permissions & 0o010 != 0 {
                inode.permissions &= !0o2000;
            }
        }
        inode.changed = now;
        Ok(())
    }

    /// Sets access and modification times (`utimensat`).
    pub fn set_times(&mut self, id: InodeNumber, accessed: Timestamp, modified: Timestamp, now: Timestamp) -> Result<(), Errno> {
        let inode = self.inode_mut(id)?;
        inode.accessed = accessed;
        inode.modified = modified;
        inode.changed = now;
        Ok(())
    }

    /// An open file description now names `id` (it outlives its names).
    pub fn opened(&mut self, id: InodeNumber) -> Result<(), Errno> {
        self.inode_mut(id)?.opened += 1;
        Ok(())
    }

    /// How many open file descriptions name `id` (None: no such inode).
    pub fn open_descriptions(&self, id: InodeNumber) -> Option<u32> {
        self.inode(id).ok().map(|inode| inode.opened)
    }

    /// An open file description of `id` went away.
    pub fn closed(&mut self, id: InodeNumber) {
        if let Ok(inode) = self.inode_mut(id) {
            inode.opened = inode.opened.saturating_sub(1);
        }
        self.release_if_unused(id);
    }

    /// The entry `name` of `directory`, with `.` and `..`, if there is one.
    pub fn child(&self, directory: InodeNumber, name: &[u8]) -> Option<InodeNumber> {
        let Ok(inode) = self.inode(directory) else { return None };
        let Contents::Directory { entries, parent } = &inode.contents else { return None };
        match name {
            b"." => Some(directory),
            b".." => Some(*parent),
            _ => entries.get(name).copied(),
        }
    }

    fn existing(&self, directory: InodeNumber, name: &[u8]) -> Result<InodeNumber, Errno> {
        if self.kind(directory)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        self.child(directory, name).ok_or(Errno::ENOENT)
    }

    fn is_empty_directory(&self, id: InodeNumber) -> Result<bool, Errno> {
        match &self.inode(id)?.contents {
            Contents::Directory { entries, .. } => Ok(entries.is_empty()),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Whether `id` is `ancestor` or lies below it.
    fn is_within(&self, mut id: InodeNumber, ancestor: InodeNumber) -> Result<bool, Errno> {
        loop {
            if id == ancestor {
                return Ok(true);
            }
            if id == self.root {
                return Ok(false);
            }
            id = self.child(id, b"..").ok_or(Errno::ENOENT)?;
        }
    }

    fn insert_entry(&mut self, directory: InodeNumber, name: &[u8], target: InodeNumber, now: Timestamp) -> Result<(), Errno> {
        let mut key = Vec::new();
        key.try_reserve_exact(name.len()).map_err(|_| Errno::ENOSPC)?;
        key.extend_from_slice(name);
        let parent = self.inode_mut(directory)?;
        let Contents::Directory { entries, .. } = &mut parent.contents else { return Err(Errno::ENOTDIR) };
        entries.insert(key, target);
        parent.modified = now;
        parent.changed = now;
        Ok(())
    }

    fn remove_entry(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        let parent = self.inode_mut(directory)?;
        let Contents::Directory { entries, .. } = &mut parent.contents else { return Err(Errno::ENOTDIR) };
        entries.remove(name).ok_or(Errno::ENOENT)?;
        parent.modified = now;
        parent.changed = now;
        Ok(())
    }

    fn drop_link(&mut self, id: InodeNumber, now: Timestamp) {
        if let Ok(inode) = self.inode_mut(id) {
            inode.links = inode.links.saturating_sub(1);
            inode.changed = now;
        }
        self.release_if_unused(id);
    }

    fn release_if_unused(&mut self, id: InodeNumber) {
        let unused = self.inode(id).is_ok_and(|inode| inode.links == 0 && inode.opened == 0);
        let Some(slot) = slot(id) else { return };
        if unused && id != self.root {
            self.bytes -= self.held_bytes(id);
            self.inodes[slot] = None;
            if self.free.try_reserve(1).is_ok() {
                self.free.push(slot as u32);
            }
        }
    }
}

/// The arena slot of inode `id` (numbers start at 1).
fn slot(id: InodeNumber) -> Option<usize> {
    usize::try_from(id.0).ok()?.checked_sub(1)
}

pub(crate) fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.len() > MAX_NAME {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
        return Err(Errno::EINVAL);
    }
    if matches!(name, b"." | b"..") {
        return Err(Errno::EEXIST);
    }
    Ok(())
}
