//! Mounts: resolution entering and leaving them, per-file-system device
//! numbers, the rules across and at mount points, read-only mounts and
//! unmounting.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::{Errno, FileKind, FileSystem, InodeId, InodeNumber, MountOptions, Namespace, Stat, Statistics, Timestamp, Tmpfs};

const NOW: Timestamp = Timestamp { seconds: 1_700_000_000, nanoseconds: 0 };

fn options(source: &[u8], read_only: bool, minor: u32) -> MountOptions {
    MountOptions { source: source.to_vec(), kind: b"tmpfs".to_vec(), device: (0, minor), read_only }
}

/// `/bin/busybox`, `/mnt` (with `/mnt/hidden`, covered once mounted) and
/// a second tmpfs on `/mnt` holding `/a/b/file`, `/a/up` → `..`,
/// `/a/out` → `/bin/busybox`.
fn mounted() -> (Namespace, InodeId) {
    let mut fs = Namespace::new(Box::new(Tmpfs::new(NOW)), (0, 1));
    let root = fs.root();
    let bin = fs.create(root, b"bin", FileKind::Directory, 0o755, NOW).unwrap();
    fs.create(bin, b"busybox", FileKind::Regular, 0o755, NOW).unwrap();
    let mnt = fs.create(root, b"mnt", FileKind::Directory, 0o755, NOW).unwrap();
    fs.create(mnt, b"hidden", FileKind::Regular, 0o644, NOW).unwrap();
    let mut second = Tmpfs::new(NOW);
    let second_root = second.root();
    let a = second.create(second_root, b"a", FileKind::Directory, 0o755, NOW).unwrap();
    let b = second.create(a, b"b", FileKind::Directory, 0o755, NOW).unwrap();
    second.create(b, b"file", FileKind::Regular, 0o644, NOW).unwrap();
    second.symlink(a, b"up", b"..", NOW).unwrap();
    second.symlink(a, b"out", b"/bin/busybox", NOW).unwrap();
    fs.mount(mnt, Box::new(second), options(b"second", false, 2)).unwrap();
    (fs, mnt)
}

#[test]
fn resolution_enters_a_mount_and_leaves_it_by_dot_dot() {
    let (fs, mnt) = mounted();
    let root = fs.root();
    let mounted_root = fs.lookup(root, b"/mnt", true).unwrap();
    assert_ne!(mounted_root, mnt, "/mnt is the mounted root, not the covered directory");
    assert_ne!(mounted_root.file_system, root.file_system);
    assert_eq!(fs.lookup(root, b"/mnt/.", true), Ok(mounted_root));
    assert_eq!(fs.lookup(root, b"/mnt/..", true), Ok(root), "out of the mount, then up");
    assert_eq!(fs.lookup(root, b"/mnt/a/b/../../..", true), Ok(root));
    assert_eq!(fs.lookup(root, b"/mnt/hidden", true), Err(Errno::ENOENT), "covered by the mount");
    let b = fs.lookup(root, b"/mnt/a/b", true).unwrap();
    assert_eq!(fs.lookup(b, b"../../../bin", true), fs.lookup(root, b"/bin", true), "relative, from inside");
    assert_eq!(fs.lookup(root, b"/mnt/a/up", true), Ok(mounted_root), "a link's .. climbs inside the mount");
    assert_eq!(fs.lookup(root, b"/mnt/a/up/..", true), Ok(root));
    assert_eq!(fs.lookup(root, b"/mnt/a/out", true), fs.lookup(root, b"/bin/busybox", true), "an absolute link leaves it");
    assert_eq!(fs.child_of(root, b"mnt"), Some(mounted_root));
    let resolved = fs.resolve(root, b"/mnt/a/new", true).unwrap();
    assert_eq!((resolved.parent.file_system, resolved.inode), (mounted_root.file_system, None));
}

#[test]
fn paths_of_files_in_a_mount_go_through_its_point() {
    let (fs, _) = mounted();
    let root = fs.root();
    let b = fs.lookup(root, b"/mnt/a/b", true).unwrap();
    assert_eq!(fs.path_of(b), Ok(b"/mnt/a/b".to_vec()));
    assert_eq!(fs.path_of(fs.lookup(root, b"/mnt", true).unwrap()), Ok(b"/mnt".to_vec()));
    let file = fs.lookup(root, b"/mnt/a/b/file", true).unwrap();
    assert_eq!(fs.some_path_of(file), Ok(b"/mnt/a/b/file".to_vec()));
}

#[test]
fn each_file_system_reports_its_own_device() {
    let (fs, _) = mounted();
    let root = fs.root();
    let inside = fs.stat(fs.lookup(root, b"/mnt/a", true).unwrap()).unwrap();
    let outside = fs.stat(fs.lookup(root, b"/bin", true).unwrap()).unwrap();
    assert_eq!((outside.file_system_device, inside.file_system_device), ((0, 1), (0, 2)));
}

#[test]
fn names_cannot_move_or_link_across_mounts_nor_remove_a_mount_point() {
    let (mut fs, mnt) = mounted();
    let root = fs.root();
    let busybox = fs.lookup(root, b"/bin/busybox", true).unwrap();
    let bin = fs.lookup(root, b"/bin", true).unwrap();
    let a = fs.lookup(root, b"/mnt/a", true).unwrap();
    assert_eq!(fs.rename(bin, b"busybox", a, b"busybox", NOW), Err(Errno::EXDEV));
    assert_eq!(fs.link(a, b"busybox", busybox, NOW), Err(Errno::EXDEV));
    assert_eq!(fs.rmdir(root, b"mnt", NOW), Err(Errno::EBUSY));
    assert_eq!(fs.rename(root, b"mnt", root, b"moved", NOW), Err(Errno::EBUSY));
    assert_eq!(fs.rename(root, b"bin", root, b"mnt", NOW), Err(Errno::EBUSY));
    assert_eq!(fs.mount(root, Box::new(Tmpfs::new(NOW)), options(b"x", false, 3)), Err(Errno::EBUSY), "not on /");
    assert_eq!(fs.mount(busybox, Box::new(Tmpfs::new(NOW)), options(b"x", false, 3)), Err(Errno::ENOTDIR));
    // Inside the mount, names move as in any tmpfs.
    fs.rename(a, b"b", a, b"c", NOW).unwrap();
    assert!(fs.lookup(root, b"/mnt/a/c/file", true).is_ok());
    assert_eq!(fs.kind(mnt), Ok(FileKind::Directory));
}

#[test]
fn a_read_only_mount_refuses_every_change_but_reads() {
    let mut fs = Namespace::new(Box::new(Tmpfs::new(NOW)), (0, 1));
    let root = fs.root();
    let mnt = fs.create(root, b"mnt", FileKind::Directory, 0o755, NOW).unwrap();
    let mut disk = Tmpfs::new(NOW);
    let disk_root = disk.root();
    let file = disk.create(disk_root, b"file", FileKind::Regular, 0o644, NOW).unwrap();
    disk.write(file, 0, b"data", NOW).unwrap();
    disk.create(disk_root, b"dir", FileKind::Directory, 0o755, NOW).unwrap();
    fs.mount(mnt, Box::new(disk), options(b"disk", true, 2)).unwrap();
    let top = fs.lookup(root, b"/mnt", true).unwrap();
    let file = fs.lookup(root, b"/mnt/file", true).unwrap();
    let mut buffer = [0u8; 8];
    assert_eq!(fs.read(file, 0, &mut buffer), Ok(4));
    assert_eq!(fs.is_read_only(file), Ok(true));
    assert_eq!(fs.is_read_only(root), Ok(false));
    assert_eq!(fs.create(top, b"new", FileKind::Regular, 0o644, NOW), Err(Errno::EROFS));
    assert_eq!(fs.create(top, b"dir", FileKind::Directory, 0o755, NOW), Err(Errno::EEXIST), "EEXIST first, as mkdir");
    assert_eq!(fs.symlink(top, b"link", b"file", NOW), Err(Errno::EROFS));
    assert_eq!(fs.unlink(top, b"file", NOW), Err(Errno::EROFS));
    assert_eq!(fs.unlink(top, b"missing", NOW), Err(Errno::EROFS), "EROFS before ENOENT, as unlink");
    assert_eq!(fs.rmdir(top, b"dir", NOW), Err(Errno::EROFS));
    assert_eq!(fs.rename(top, b"file", top, b"other", NOW), Err(Errno::EROFS));
    assert_eq!(fs.link(top, b"other", file, NOW), Err(Errno::EROFS));
    assert_eq!(fs.write(file, 0, b"x", NOW), Err(Errno::EROFS));
    assert_eq!(fs.truncate(file, 0, NOW), Err(Errno::EROFS));
    assert_eq!(fs.set_permissions(file, 0o600, NOW), Err(Errno::EROFS));
    assert_eq!(fs.set_owner(file, Some(1), None, NOW), Err(Errno::EROFS));
    assert_eq!(fs.set_times(file, NOW, NOW, NOW), Err(Errno::EROFS));
    assert_eq!(fs.contents(file).as_deref(), Ok(&b"data"[..]));
}

/// A file system that implements only the reading half: one file `f`
/// holding `hello` in its root (inode 1).
struct ReadOnlyOneFile;

impl FileSystem for ReadOnlyOneFile {
    fn root(&self) -> InodeNumber {
        InodeNumber(1)
    }

    fn kind(&self, inode: InodeNumber) -> Result<FileKind, Errno> {
        match inode.0 {
            1 => Ok(FileKind::Directory),
            2 => Ok(FileKind::Regular),
            _ => Err(Errno::ENOENT),
        }
    }

    fn stat(&self, inode: InodeNumber) -> Result<Stat, Errno> {
        let kind = self.kind(inode)?;
        let size = if kind == FileKind::Regular { 5 } else { 0 };
        Ok(Stat { inode: inode.0, mode: kind.mode_bits() | 0o755, links: 1, uid: 0, gid: 0, device: (0, 0), file_system_device: (0, 0), size, blocks: 0, accessed: NOW, modified: NOW, changed: NOW })
    }

    fn child(&self, directory: InodeNumber, name: &[u8]) -> Result<Option<InodeNumber>, Errno> {
        if self.kind(directory)? != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        Ok(match name {
            b"." | b".." => Some(InodeNumber(1)),
            b"f" => Some(InodeNumber(2)),
            _ => None,
        })
    }

    fn read(&self, inode: InodeNumber, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
        if self.kind(inode)? != FileKind::Regular {
            return Err(Errno::EISDIR);
        }
        let data = b"hello".get(offset.min(5) as usize..).unwrap_or_default();
        let count = data.len().min(buffer.len());
        buffer[..count].copy_from_slice(&data[..count]);
        Ok(count)
    }

    fn read_link(&self, _inode: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        Err(Errno::EINVAL)
    }

    fn visit_entries(&self, directory: InodeNumber, start: usize, visit: &mut dyn FnMut(&[u8], InodeNumber, FileKind) -> bool) -> Result<usize, Errno> {
        self.child(directory, b".")?;
        let entries: [(&[u8], u64, FileKind); 3] = [(b".", 1, FileKind::Directory), (b"..", 1, FileKind::Directory), (b"f", 2, FileKind::Regular)];
        let mut position = start;
        for (name, number, kind) in entries.iter().skip(start) {
            if !visit(name, InodeNumber(*number), *kind) {
                break;
            }
            position += 1;
        }
        Ok(position)
    }

    fn statistics(&self) -> Statistics {
        Statistics { magic: 0x1234, ..Statistics::default() }
    }
}

#[test]
fn a_file_system_that_only_reads_answers_erofs_even_mounted_read_write() {
    let mut fs = Namespace::new(Box::new(Tmpfs::new(NOW)), (0, 1));
    let root = fs.root();
    let mnt = fs.create(root, b"mnt", FileKind::Directory, 0o755, NOW).unwrap();
    fs.mount(mnt, Box::new(ReadOnlyOneFile), options(b"one", false, 2)).unwrap();
    let top = fs.lookup(root, b"/mnt", true).unwrap();
    let file = fs.lookup(root, b"/mnt/f", true).unwrap();
    assert_eq!(fs.contents(file).as_deref(), Ok(&b"hello"[..]), "the default contents reads the file whole");
    assert_eq!(fs.create(top, b"g", FileKind::Regular, 0o644, NOW), Err(Errno::EROFS));
    assert_eq!(fs.write(file, 0, b"x", NOW), Err(Errno::EROFS));
    assert_eq!(fs.unlink(top, b"f", NOW), Err(Errno::EROFS));
    assert_eq!(fs.statistics(file).map(|figures| figures.magic), Ok(0x1234));
    assert_eq!(fs.lookup(root, b"/mnt/f/..", true), Err(Errno::ENOTDIR));
    assert_eq!(fs.lookup(root, b"/mnt/..", true), Ok(root));
    assert_eq!(fs.path_of(top), Ok(b"/mnt".to_vec()));
    let names: Vec<Vec<u8>> = fs.list(top).unwrap().into_iter().map(|entry| entry.name).collect();
    assert_eq!(names, [b".".to_vec(), b"..".to_vec(), b"f".to_vec()]);
}

#[test]
fn unmounting_waits_for_open_files_and_inner_mounts_then_uncovers() {
    let (mut fs, mnt) = mounted();
    let root = fs.root();
    let top = fs.lookup(root, b"/mnt", true).unwrap();
    let file = fs.lookup(root, b"/mnt/a/b/file", true).unwrap();
    fs.opened(file).unwrap();
    assert!(matches!(fs.unmount(top), Err(Errno::EBUSY)), "a file is open there");
    fs.closed(file);
    let b = fs.lookup(root, b"/mnt/a/b", true).unwrap();
    fs.mount(b, Box::new(Tmpfs::new(NOW)), options(b"inner", false, 3)).unwrap();
    assert!(matches!(fs.unmount(top), Err(Errno::EBUSY)), "a mount lies inside");
    let inner = fs.lookup(root, b"/mnt/a/b", true).unwrap();
    assert_eq!(fs.path_of(inner), Ok(b"/mnt/a/b".to_vec()));
    assert_eq!(fs.lookup(root, b"/mnt/a/b/..", true), fs.lookup(root, b"/mnt/a", true));
    assert!(fs.unmount(inner).is_ok());
    assert!(matches!(fs.unmount(mnt), Err(Errno::EINVAL)), "the covered directory is not a mounted root");
    assert!(fs.unmount(top).is_ok());
    assert_eq!(fs.lookup(root, b"/mnt", true), Ok(mnt));
    assert!(fs.lookup(root, b"/mnt/hidden", true).is_ok(), "uncovered again");
    assert!(fs.mounts().is_empty());
    assert_eq!(fs.stat(file), Err(Errno::ENOENT), "inodes of an unmounted file system are gone");
}

#[test]
fn mounts_stack_and_the_last_one_is_seen() {
    let (mut fs, _) = mounted();
    let root = fs.root();
    let first = fs.lookup(root, b"/mnt", true).unwrap();
    let mut third = Tmpfs::new(NOW);
    let third_root = third.root();
    third.create(third_root, b"top", FileKind::Regular, 0o644, NOW).unwrap();
    fs.mount(first, Box::new(third), options(b"third", false, 3)).unwrap();
    let second = fs.lookup(root, b"/mnt", true).unwrap();
    assert_ne!(second, first);
    assert!(fs.lookup(root, b"/mnt/top", true).is_ok());
    assert_eq!(fs.lookup(root, b"/mnt/a", true), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(root, b"/mnt/..", true), Ok(root));
    assert_eq!(fs.path_of(second), Ok(b"/mnt".to_vec()));
    assert!(matches!(fs.unmount(first), Err(Errno::EBUSY)), "the upper mount lies on it");
    assert!(fs.unmount(second).is_ok());
    assert!(fs.lookup(root, b"/mnt/a/b/file", true).is_ok());
}

/// Counts of the durability calls a [`Durable`] file system received:
/// `sync_file`, `sync`, `quiesce`, `unmount`.
type Calls = alloc::sync::Arc<[core::sync::atomic::AtomicU32; 4]>;

/// A tmpfs that counts the durability calls it gets.
struct Durable {
    tmpfs: Tmpfs,
    calls: Calls,
}

impl Durable {
    fn count(&self, call: usize) -> Result<(), Errno> {
        self.calls[call].fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

impl FileSystem for Durable {
    fn root(&self) -> InodeNumber {
        self.tmpfs.root()
    }

    fn kind(&self, inode: InodeNumber) -> Result<FileKind, Errno> {
        FileSystem::kind(&self.tmpfs, inode)
    }

    fn stat(&self, inode: InodeNumber) -> Result<Stat, Errno> {
        FileSystem::stat(&self.tmpfs, inode)
    }

    fn child(&self, directory: InodeNumber, name: &[u8]) -> Result<Option<InodeNumber>, Errno> {
        FileSystem::child(&self.tmpfs, directory, name)
    }

    fn read(&self, inode: InodeNumber, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
        FileSystem::read(&self.tmpfs, inode, offset, buffer)
    }

    fn read_link(&self, inode: InodeNumber) -> Result<Cow<'_, [u8]>, Errno> {
        FileSystem::read_link(&self.tmpfs, inode)
    }

    fn visit_entries(&self, directory: InodeNumber, start: usize, visit: &mut dyn FnMut(&[u8], InodeNumber, FileKind) -> bool) -> Result<usize, Errno> {
        FileSystem::visit_entries(&self.tmpfs, directory, start, visit)
    }

    fn statistics(&self) -> Statistics {
        FileSystem::statistics(&self.tmpfs)
    }

    fn sync_file(&mut self, _inode: InodeNumber) -> Result<(), Errno> {
        self.count(0)
    }

    fn sync(&mut self) -> Result<(), Errno> {
        self.count(1)
    }

    fn quiesce(&mut self) -> Result<(), Errno> {
        self.count(2)
    }

    fn unmount(self: Box<Self>) -> Result<(), Errno> {
        self.count(3)
    }
}

#[test]
fn durability_calls_reach_the_file_system_holding_the_file() {
    let mut fs = Namespace::new(Box::new(Tmpfs::new(NOW)), (0, 1));
    let root = fs.root();
    let mnt = fs.create(root, b"mnt", FileKind::Directory, 0o755, NOW).unwrap();
    let calls: Calls = alloc::sync::Arc::new(Default::default());
    let mut tmpfs = Tmpfs::new(NOW);
    let inner_root = tmpfs.root();
    tmpfs.create(inner_root, b"f", FileKind::Regular, 0o644, NOW).unwrap();
    fs.mount(mnt, Box::new(Durable { tmpfs, calls: calls.clone() }), options(b"durable", false, 2)).unwrap();
    let counts = || calls.iter().map(|count| count.load(core::sync::atomic::Ordering::Relaxed)).collect::<Vec<u32>>();
    let file = fs.lookup(root, b"/mnt/f", true).unwrap();
    assert_eq!(fs.sync_file(file), Ok(()));
    assert_eq!(fs.sync_file(mnt), Ok(()), "the root tmpfs has nothing to write back");
    assert_eq!(counts(), [1, 0, 0, 0]);
    assert_eq!(fs.sync_file_system(file), Ok(()));
    assert_eq!(fs.sync_all(), Ok(()));
    assert_eq!(fs.quiesce_all(), Ok(()));
    assert_eq!(counts(), [1, 2, 1, 0]);
    let top = fs.lookup(root, b"/mnt", true).unwrap();
    assert_eq!(fs.unmount(top).and_then(|file_system| file_system.unmount()), Ok(()));
    assert_eq!(counts(), [1, 2, 1, 1], "unmounting hands the file system its unmount");
}

#[test]
fn a_root_given_its_mount_options_names_itself_and_keeps_them() {
    let mut on_disk = Tmpfs::new(NOW);
    let top = on_disk.root();
    on_disk.create(top, b"dev", FileKind::Directory, 0o755, NOW).unwrap();
    let root_options = MountOptions { source: b"/dev/vda".to_vec(), kind: b"ext4".to_vec(), device: (254, 0), read_only: true };
    let mut fs = Namespace::with_root(Box::new(on_disk), root_options);
    assert_eq!(fs.root_mount(), (&b"/dev/vda"[..], &b"ext4"[..]));
    let root = fs.root();
    assert_eq!(fs.stat(root).unwrap().file_system_device, (254, 0));
    assert_eq!(fs.is_read_only(root), Ok(true));
    assert_eq!(fs.create(root, b"new", FileKind::Regular, 0o644, NOW), Err(Errno::EROFS));
    // A memory file system still covers /dev, as at boot with root on a disk.
    let dev = fs.lookup(root, b"/dev", true).unwrap();
    fs.mount(dev, Box::new(Tmpfs::new(NOW)), options(b"devtmpfs", false, 2)).unwrap();
    let covered = fs.lookup(root, b"/dev", true).unwrap();
    assert_ne!(covered.file_system, root.file_system);
    assert!(fs.create(covered, b"null", FileKind::CharDevice(1, 3), 0o666, NOW).is_ok());
    let boot = Namespace::new(Box::new(Tmpfs::new(NOW)), (0, 1));
    assert_eq!(boot.root_mount(), (&b"rootfs"[..], &b"rootfs"[..]));
}

#[test]
fn a_remount_turns_a_mount_read_only_and_back() {
    let (mut fs, _) = mounted();
    let root = fs.root();
    let top = fs.lookup(root, b"/mnt", true).unwrap();
    fs.remount(top, true).unwrap();
    assert_eq!(fs.is_read_only(top), Ok(true));
    assert_eq!(fs.create(top, b"refused", FileKind::Regular, 0o644, NOW), Err(Errno::EROFS));
    assert!(fs.mounts()[0].read_only, "/proc/mounts says ro");
    fs.remount(top, false).unwrap();
    assert!(fs.create(top, b"after", FileKind::Regular, 0o644, NOW).is_ok());
    assert!(!fs.mounts()[0].read_only);
    // Only a mount's root (or the namespace's) can be remounted.
    let inside = fs.lookup(root, b"/mnt/a", true).unwrap();
    assert_eq!(fs.remount(inside, true), Err(Errno::EINVAL));
    assert_eq!(fs.remount(root, true), Ok(()));
    assert_eq!(fs.create(root, b"x", FileKind::Regular, 0o644, NOW), Err(Errno::EROFS));
}
