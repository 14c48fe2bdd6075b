//! The namespace: the file tree processes see, made of file systems joined
//! at mount points. Every operation takes [`InodeId`]s and goes to the
//! file system the inode names; path resolution (in `paths.rs`) crosses
//! mounts through the [`MountTable`].
//!
//! Rules Linux keeps here rather than in file systems: a read-only mount
//! refuses every change with `EROFS` (after `EEXIST` for a name that is
//! taken, as `mkdir` on Linux checks that first); `rename` and `link`
//! between two file systems are `EXDEV`; a mount point cannot be removed
//! or renamed (`EBUSY`); each file system has its own `st_dev`.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::file_system::{FileSystem, Statistics};
use crate::inode::{FileKind, FileSystemId, InodeId, Stat, Timestamp};
use crate::mounts::{Mount, MountTable};
use crate::Errno;

/// One entry of a directory listing.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DirectoryEntry {
    /// The name.
    pub name: Vec<u8>,
    /// Its inode, as its directory's file system has it (a mount point's
    /// entry names the covered directory, as Linux's `readdir` does).
    pub inode: InodeId,
    /// Its kind.
    pub kind: FileKind,
}

/// How a file system is mounted.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MountOptions {
    /// The source `/proc/mounts` shows (`/dev/vda`, `tmpfs`).
    pub source: Vec<u8>,
    /// The file system type (`ext4`, `tmpfs`).
    pub kind: Vec<u8>,
    /// The device numbers `stat` reports as `st_dev` for its files.
    pub device: (u32, u32),
    /// Every change refused with `EROFS`.
    pub read_only: bool,
}

/// A file system of the namespace.
struct Instance {
    file_system: Box<dyn FileSystem>,
    device: (u32, u32),
    read_only: bool,
    /// Open file descriptions naming its inodes (`umount` waits for none).
    open: u64,
}

/// File systems and the mounts joining them.
pub struct Namespace {
    instances: Vec<Option<Instance>>,
    pub(crate) mounts: MountTable,
    root: InodeId,
    /// What the root file system is, as `/proc/mounts` shows it.
    root_source: Vec<u8>,
    root_kind: Vec<u8>,
}

impl Namespace {
    /// A namespace whose root is the root of `file_system` (file system 0),
    /// the boot-time `rootfs` (an initramfs unpacked into memory).
    pub fn new(file_system: Box<dyn FileSystem>, device: (u32, u32)) -> Self {
        let options = MountOptions { source: b"rootfs".to_vec(), kind: b"rootfs".to_vec(), device, read_only: false };
        Self::with_root(file_system, options)
    }

    /// A namespace whose root is `file_system` (file system 0) mounted as
    /// `options` say (root on a disk: `/dev/vda`, `ext4`).
    pub fn with_root(file_system: Box<dyn FileSystem>, options: MountOptions) -> Self {
        let root = InodeId::new(FileSystemId(0), file_system.root());
        let instance = Instance { file_system, device: options.device, read_only: options.read_only, open: 0 };
        Self { instances: alloc::vec![Some(instance)], mounts: MountTable::new(), root, root_source: options.source, root_kind: options.kind }
    }

    /// The root file system's source and type (`rootfs`, or `/dev/vda`
    /// and `ext4`).
    pub fn root_mount(&self) -> (&[u8], &[u8]) {
        (&self.root_source, &self.root_kind)
    }

    /// The root directory.
    pub fn root(&self) -> InodeId {
        self.root
    }

    /// The mounts, oldest first.
    pub fn mounts(&self) -> &[Mount] {
        self.mounts.mounts()
    }

    /// Mounts `file_system` on the directory `point`; returns its id. The
    /// root directory cannot be covered (`EBUSY`).
    pub fn mount(&mut self, point: InodeId, file_system: Box<dyn FileSystem>, options: MountOptions) -> Result<FileSystemId, Errno> {
        if self.kind(point)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        if point == self.root {
            return Err(Errno::EBUSY);
        }
        let slot = self.instances.iter().position(Option::is_none);
        let index = match slot {
            Some(index) => index,
            None => {
                self.instances.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                self.instances.push(None);
                self.instances.len() - 1
            }
        };
        let id = FileSystemId(u32::try_from(index).map_err(|_| Errno::ENOMEM)?);
        let root = InodeId::new(id, file_system.root());
        let read_only = options.read_only;
        self.mounts.add(Mount { point, root, source: options.source, kind: options.kind, read_only })?;
        self.instances[index] = Some(Instance { file_system, device: options.device, read_only, open: 0 });
        Ok(id)
    }

    /// Unmounts the file system whose mounted root is `root` (what the
    /// mount point resolves to): `EINVAL` if it is not one, `EBUSY` while
    /// files are open there or another mount lies inside it. Returns it.
    pub fn unmount(&mut self, root: InodeId) -> Result<Box<dyn FileSystem>, Errno> {
        let file_system = self.mounts.mounted_at(root).ok_or(Errno::EINVAL)?.root.file_system;
        if self.mounts.has_mounts_inside(file_system) || self.instance(file_system)?.open > 0 {
            return Err(Errno::EBUSY);
        }
        self.mounts.remove(file_system);
        let instance = self.instances.get_mut(file_system.0 as usize).and_then(Option::take).ok_or(Errno::EINVAL)?;
        Ok(instance.file_system)
    }

    /// `mount -o remount`: the file system whose root is `root` (the
    /// namespace's root too) becomes read-only or read-write. `EINVAL` for
    /// a directory that is no mount's root; the file system may refuse
    /// (`EROFS`, `EBUSY`), and then nothing changes.
    pub fn remount(&mut self, root: InodeId, read_only: bool) -> Result<(), Errno> {
        if root != self.root && self.mounts.mounted_at(root).is_none() {
            return Err(Errno::EINVAL);
        }
        let instance = self.instance_mut(root.file_system)?;
        if instance.read_only != read_only {
            instance.file_system.remount(read_only)?;
            instance.read_only = read_only;
        }
        if let Some(mount) = self.mounts.mounted_at_mut(root) {
            mount.read_only = read_only;
        }
        Ok(())
    }

    /// Makes `id`'s data durable (`fsync`, `fdatasync`).
    pub fn sync_file(&mut self, id: InodeId) -> Result<(), Errno> {
        self.instance_mut(id.file_system)?.file_system.sync_file(id.number)
    }

    /// Makes every change to `inode`'s file system durable (`syncfs`).
    pub fn sync_file_system(&mut self, inode: InodeId) -> Result<(), Errno> {
        self.instance_mut(inode.file_system)?.file_system.sync()
    }

    /// Makes every change to every file system durable (`sync`); the
    /// first failure is reported after all were tried.
    pub fn sync_all(&mut self) -> Result<(), Errno> {
        self.each_file_system(|file_system| file_system.sync())
    }

    /// Leaves every file system's storage clean (before power-off); the
    /// first failure is reported after all were tried.
    pub fn quiesce_all(&mut self) -> Result<(), Errno> {
        self.each_file_system(|file_system| file_system.quiesce())
    }

    fn each_file_system(&mut self, mut operation: impl FnMut(&mut dyn FileSystem) -> Result<(), Errno>) -> Result<(), Errno> {
        let mut outcome = Ok(());
        for instance in self.instances.iter_mut().flatten() {
            let result = operation(&mut *instance.file_system);
            if outcome.is_ok() {
                outcome = result;
            }
        }
        outcome
    }

    /// Whether changes to `inode`'s file system are refused.
    pub fn is_read_only(&self, inode: InodeId) -> Result<bool, Errno> {
        Ok(self.instance(inode.file_system)?.read_only)
    }

    /// The `statfs` figures of `inode`'s file system.
    pub fn statistics(&self, inode: InodeId) -> Result<Statistics, Errno> {
        Ok(self.instance(inode.file_system)?.file_system.statistics())
    }

    fn instance(&self, id: FileSystemId) -> Result<&Instance, Errno> {
        self.instances.get(id.0 as usize).and_then(Option::as_ref).ok_or(Errno::ENOENT)
    }

    fn instance_mut(&mut self, id: FileSystemId) -> Result<&mut Instance, Errno> {
        self.instances.get_mut(id.0 as usize).and_then(Option::as_mut).ok_or(Errno::ENOENT)
    }

    pub(crate) fn file_system(&self, id: FileSystemId) -> Result<&dyn FileSystem, Errno> {
        Ok(&*self.instance(id)?.file_system)
    }

    /// The file system of `id` for a change: `EROFS` if mounted read-only.
    fn writable(&mut self, id: FileSystemId) -> Result<&mut dyn FileSystem, Errno> {
        let instance = self.instance_mut(id)?;
        if instance.read_only {
            return Err(Errno::EROFS);
        }
        Ok(&mut *instance.file_system)
    }

    /// As [`writable`](Self::writable), for making `name` in `directory`:
    /// a name that is taken is `EEXIST` even on a read-only mount.
    fn writable_for_new(&mut self, directory: InodeId, name: &[u8]) -> Result<&mut dyn FileSystem, Errno> {
        if self.is_read_only(directory)? && matches!(self.local_child(directory, name), Ok(Some(_))) {
            return Err(Errno::EEXIST);
        }
        self.writable(directory.file_system)
    }

    /// The entry `name` of `directory` in its own file system, without
    /// crossing mounts.
    pub(crate) fn local_child(&self, directory: InodeId, name: &[u8]) -> Result<Option<InodeId>, Errno> {
        let found = self.file_system(directory.file_system)?.child(directory.number, name)?;
        Ok(found.map(|number| InodeId::new(directory.file_system, number)))
    }

    /// `EBUSY` if `name` in `directory` is a mount point.
    fn not_a_point(&self, directory: InodeId, name: &[u8]) -> Result<(), Errno> {
        match self.local_child(directory, name) {
            Ok(Some(child)) if self.mounts.is_point(child) => Err(Errno::EBUSY),
            _ => Ok(()),
        }
    }

    /// The kind of `id`.
    pub fn kind(&self, id: InodeId) -> Result<FileKind, Errno> {
        self.file_system(id.file_system)?.kind(id.number)
    }

    /// The `stat` record of `id`, with its file system's device numbers.
    pub fn stat(&self, id: InodeId) -> Result<Stat, Errno> {
        let instance = self.instance(id.file_system)?;
        let mut stat = instance.file_system.stat(id.number)?;
        stat.file_system_device = instance.device;
        Ok(stat)
    }

    /// Creates `name` in `directory` (see [`FileSystem::create`]).
    pub fn create(&mut self, directory: InodeId, name: &[u8], kind: FileKind, permissions: u32, now: Timestamp) -> Result<InodeId, Errno> {
        let made = self.writable_for_new(directory, name)?.create(directory.number, name, kind, permissions, now)?;
        Ok(InodeId::new(directory.file_system, made))
    }

    /// Creates the symbolic link `name` → `target` in `directory`.
    pub fn symlink(&mut self, directory: InodeId, name: &[u8], target: &[u8], now: Timestamp) -> Result<InodeId, Errno> {
        let made = self.writable_for_new(directory, name)?.symlink(directory.number, name, target, now)?;
        Ok(InodeId::new(directory.file_system, made))
    }

    /// A new name `name` in `directory` for `target` (`EXDEV` across file systems).
    pub fn link(&mut self, directory: InodeId, name: &[u8], target: InodeId, now: Timestamp) -> Result<(), Errno> {
        if directory.file_system != target.file_system {
            return Err(Errno::EXDEV);
        }
        self.writable_for_new(directory, name)?.link(directory.number, name, target.number, now)
    }

    /// Removes the non-directory `name` from `directory`.
    pub fn unlink(&mut self, directory: InodeId, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        self.writable(directory.file_system)?;
        self.not_a_point(directory, name)?;
        self.writable(directory.file_system)?.unlink(directory.number, name, now)
    }

    /// Removes the empty directory `name` from `directory`.
    pub fn rmdir(&mut self, directory: InodeId, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        self.writable(directory.file_system)?;
        self.not_a_point(directory, name)?;
        self.writable(directory.file_system)?.rmdir(directory.number, name, now)
    }

    /// Moves `from_name` in `from` to `to_name` in `to` (`EXDEV` across
    /// file systems, `EBUSY` for a mount point on either side).
    pub fn rename(&mut self, from: InodeId, from_name: &[u8], to: InodeId, to_name: &[u8], now: Timestamp) -> Result<(), Errno> {
        if from.file_system != to.file_system {
            return Err(Errno::EXDEV);
        }
        self.writable(from.file_system)?;
        self.not_a_point(from, from_name)?;
        self.not_a_point(to, to_name)?;
        self.writable(from.file_system)?.rename(from.number, from_name, to.number, to_name, now)
    }

    /// Reads from `offset` into `buffer`; returns the bytes read.
    pub fn read(&self, id: InodeId, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
        self.file_system(id.file_system)?.read(id.number, offset, buffer)
    }

    /// Writes `data` at `offset`.
    pub fn write(&mut self, id: InodeId, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Errno> {
        self.writable(id.file_system)?.write(id.number, offset, data, now)
    }

    /// Writes `data` at `offset` inside the file, times untouched.
    pub fn overwrite(&mut self, id: InodeId, offset: u64, data: &[u8]) -> Result<(), Errno> {
        self.writable(id.file_system)?.overwrite(id.number, offset, data)
    }

    /// Sets the file's length.
    pub fn truncate(&mut self, id: InodeId, length: u64, now: Timestamp) -> Result<(), Errno> {
        self.writable(id.file_system)?.truncate(id.number, length, now)
    }

    /// The whole contents of a regular file.
    pub fn contents(&self, id: InodeId) -> Result<Cow<'_, [u8]>, Errno> {
        self.file_system(id.file_system)?.contents(id.number)
    }

    /// A symbolic link's target.
    pub fn read_link(&self, id: InodeId) -> Result<Cow<'_, [u8]>, Errno> {
        self.file_system(id.file_system)?.read_link(id.number)
    }

    /// Visits `directory`'s entries from position `start` (see
    /// [`FileSystem::visit_entries`]); entries are not crossed into mounts.
    pub fn visit_entries(&self, directory: InodeId, start: usize, mut visit: impl FnMut(&[u8], InodeId, FileKind) -> bool) -> Result<usize, Errno> {
        let file_system = directory.file_system;
        self.file_system(file_system)?.visit_entries(directory.number, start, &mut |name, number, kind| {
            visit(name, InodeId::new(file_system, number), kind)
        })
    }

    /// The entries of `directory`, `.` and `..` first.
    pub fn list(&self, directory: InodeId) -> Result<Vec<DirectoryEntry>, Errno> {
        let mut listing = Vec::new();
        let mut failed = false;
        self.visit_entries(directory, 0, |name, inode, kind| {
            if listing.try_reserve(1).is_err() {
                failed = true;
                return false;
            }
            listing.push(DirectoryEntry { name: name.to_vec(), inode, kind });
            true
        })?;
        if failed {
            return Err(Errno::ENOMEM);
        }
        Ok(listing)
    }

    /// Sets the permission bits.
    pub fn set_permissions(&mut self, id: InodeId, permissions: u32, now: Timestamp) -> Result<(), Errno> {
        self.writable(id.file_system)?.set_permissions(id.number, permissions, now)
    }

    /// Gives the inode to `owner` and/or `group`.
    pub fn set_owner(&mut self, id: InodeId, owner: Option<u32>, group: Option<u32>, now: Timestamp) -> Result<(), Errno> {
        self.writable(id.file_system)?.set_owner(id.number, owner, group, now)
    }

    /// Sets access and modification times.
    pub fn set_times(&mut self, id: InodeId, accessed: Timestamp, modified: Timestamp, now: Timestamp) -> Result<(), Errno> {
        self.writable(id.file_system)?.set_times(id.number, accessed, modified, now)
    }

    /// An open file description now names `id`.
    pub fn opened(&mut self, id: InodeId) -> Result<(), Errno> {
        let instance = self.instance_mut(id.file_system)?;
        instance.file_system.opened(id.number)?;
        instance.open += 1;
        Ok(())
    }

    /// An open file description of `id` went away.
    pub fn closed(&mut self, id: InodeId) {
        if let Ok(instance) = self.instance_mut(id.file_system) {
            instance.file_system.closed(id.number);
            instance.open = instance.open.saturating_sub(1);
        }
    }

    /// How many open file descriptions name `id`, if its file system
    /// counts them.
    pub fn open_descriptions(&self, id: InodeId) -> Option<u32> {
        self.file_system(id.file_system).ok()?.open_descriptions(id.number)
    }

    /// Whether the kernel keeps `id`'s file data in its page cache
    /// ([`FileSystem::caches_pages`]); false for an unknown file system.
    pub fn caches_pages(&self, id: InodeId) -> bool {
        self.file_system(id.file_system).is_ok_and(|file_system| file_system.caches_pages())
    }

    /// The root of `inode`'s file system, as the namespace names it.
    pub(crate) fn file_system_root(&self, inode: InodeId) -> Result<InodeId, Errno> {
        Ok(InodeId::new(inode.file_system, self.file_system(inode.file_system)?.root()))
    }
}
