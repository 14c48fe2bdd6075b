//! The one file tree of this kernel: a namespace whose root is a tmpfs
//! filled from the initramfs, with the device nodes and directories every
//! Linux program expects, and the file systems `mount(2)` adds (ext4 on a
//! disk, more tmpfs instances), behind one lock.
//!
//! **Lock order**: the tree lock is a [`SleepLock`]: an operation on a
//! disk's file system waits for the device, so the holder may sleep, and
//! callers must hold no spinlock. Its inner spinlock ([`FS_LEVEL`], 7) is
//! held only to take and put back the tree. Copies to and from user memory
//! happen after it is released.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::format;

use core::sync::atomic::{AtomicU32, Ordering};

use spinlock::Level;
use vfs::{Errno, FileKind, MountOptions, Namespace};

use super::clock::now;
use super::ext4_mounts::{Access, Ext4Mount};
use super::sleep_lock::SleepLock;

/// The file tree's lock level.
pub const FS_LEVEL: Level = Level::new(7);

/// `st_dev` of the root tmpfs (Linux gives tmpfs anonymous device numbers, major 0).
pub const ROOT_DEVICE: (u32, u32) = (0, 1);

// Boxed: the sleep lock moves its value out and back for each operation,
// and the namespace is large (a pointer moves in two instructions; moving
// the namespace itself cost ~160 instructions of copies per call).
static TREE: SleepLock<Option<Box<Namespace>>> = SleepLock::new(FS_LEVEL, None);

/// Device numbers (Linux's).
pub mod devices {
    /// `/dev/null`
    pub const NULL: (u32, u32) = (1, 3);
    /// `/dev/zero`
    pub const ZERO: (u32, u32) = (1, 5);
    /// `/dev/random`
    pub const RANDOM: (u32, u32) = (1, 8);
    /// `/dev/urandom`
    pub const URANDOM: (u32, u32) = (1, 9);
    /// `/dev/tty` (the process's controlling terminal)
    pub const TTY: (u32, u32) = (5, 0);
    /// `/dev/console`
    pub const CONSOLE: (u32, u32) = (5, 1);
    /// `/dev/ttyS0`
    pub const SERIAL: (u32, u32) = (4, 64);
    /// `/dev/kvm` (made only when the CPUs can run guests)
    pub const KVM: (u32, u32) = (10, 232);
}

/// Builds the tree: the initramfs (if any), then what must exist.
pub fn init(initramfs: Option<&'static [u8]>) -> Result<usize, String> {
    // Program text the exec cache keeps is the system's, as the tree is.
    crate::exec_cache::charge_to_current_container();
    let mut tmpfs = crate::tmpfs_pages::new_tmpfs();
    let unpacked = match initramfs {
        Some(archive) => tmpfs.unpack(archive, now()).map_err(|error| format!("unpacking the initramfs: {error:?}"))?,
        None => 0,
    };
    let mut tree = Namespace::new(Box::new(tmpfs), ROOT_DEVICE);
    make_top_directories(&mut tree)?;
    let dev = tree.lookup(tree.root(), b"/dev", true).map_err(|error| format!("/dev: {error:?}"))?;
    make_device_nodes(&mut tree, dev)?;
    make_sys(&mut tree)?;
    TREE.with(|slot| *slot = Some(Box::new(tree)));
    Ok(unpacked)
}

/// Root on a disk (`root=/dev/vda` on the kernel command line): the ext4
/// file system on the block device `device` (a path of the boot tree)
/// becomes the root, mounted read-write with its journal replayed, and
/// the boot tree is dropped. Memory file systems cover `/dev` (the device
/// nodes), `/proc` and `/tmp` (temporary files stay off the disk), as a
/// Linux system mounts them. On any failure the boot tree stays the root.
pub fn switch_root_to_disk(device: &[u8]) -> Result<(), String> {
    let shown = String::from_utf8_lossy(device).into_owned();
    let numbers = with(|tree| crate::ext4_mounts::block_device_numbers(tree.kind(tree.lookup(tree.root(), device, true)?)?))
        .map_err(|error| format!("root={shown}: {error:?}"))?;
    let disk = crate::block_files::disk(numbers).ok_or_else(|| format!("root={shown}: no such disk"))?.clone();
    let file_system = Ext4Mount::open(disk, Access::ReadWrite).map_err(|error| format!("root={shown}: mounting its ext4: {error:?}"))?;
    let options = MountOptions { source: device.to_vec(), kind: b"ext4".to_vec(), device: numbers, read_only: false };
    let mut tree = Namespace::with_root(Box::new(file_system), options);
    let made = make_top_directories(&mut tree).and_then(|()| {
        let cover = |tree: &mut Namespace, path: &[u8], kind: &[u8]| -> Result<vfs::InodeId, String> {
            let point = tree.lookup(tree.root(), path, true).map_err(|error| format!("{}: {error:?}", String::from_utf8_lossy(path)))?;
            let mut tmpfs = crate::tmpfs_pages::new_tmpfs();
            let top = tmpfs.root();
            let permissions = tree.stat(point).map(|stat| stat.mode & 0o7777).unwrap_or(0o755);
            let _ = tmpfs.set_permissions(top, permissions, now());
            let options = MountOptions { source: kind.to_vec(), kind: kind.to_vec(), device: anonymous_device(), read_only: false };
            tree.mount(point, Box::new(tmpfs), options).map_err(|error| format!("mounting {}: {error:?}", String::from_utf8_lossy(path)))?;
            tree.lookup(tree.root(), path, true).map_err(|error| format!("{}: {error:?}", String::from_utf8_lossy(path)))
        };
        let dev = cover(&mut tree, b"/dev", b"devtmpfs")?;
        make_device_nodes(&mut tree, dev)?;
        cover(&mut tree, b"/proc", b"proc")?;
        cover(&mut tree, b"/sys", b"sysfs")?;
        make_sys(&mut tree)?;
        cover(&mut tree, b"/tmp", b"tmpfs")?;
        Ok(())
    });
    if let Err(why) = made {
        // Leave the disk clean: nothing of it is used.
        let _ = tree.quiesce_all();
        return Err(format!("root={shown}: {why}"));
    }
    TREE.with(|slot| *slot = Some(Box::new(tree)));
    Ok(())
}

/// The directories every Linux program expects at the top of the tree.
fn make_top_directories(tree: &mut Namespace) -> Result<(), String> {
    let root = tree.root();
    for (name, permissions) in [("dev", 0o755), ("tmp", 0o1777), ("proc", 0o555), ("sys", 0o555), ("etc", 0o755), ("root", 0o700)] {
        if tree.child_of(root, name.as_bytes()).is_none() {
            tree.create(root, name.as_bytes(), FileKind::Directory, permissions, now()).map_err(|error| format!("/{name}: {error:?}"))?;
        }
    }
    Ok(())
}

/// `/sys`'s files (`sysfs.rs`), for the CPUs online now.
fn make_sys(tree: &mut Namespace) -> Result<(), String> {
    let sys = tree.lookup(tree.root(), b"/sys", true).map_err(|error| format!("/sys: {error:?}"))?;
    crate::sysfs::populate(tree, sys, machine::percpu::online_count()).map_err(|error| format!("/sys: {error:?}"))
}

/// The device nodes of `/dev` (the directory `dev`): the character
/// devices every program expects and one block device per disk.
fn make_device_nodes(tree: &mut Namespace, dev: vfs::InodeId) -> Result<(), String> {
    let nodes = [
        ("null", devices::NULL, 0o666),
        ("zero", devices::ZERO, 0o666),
        ("random", devices::RANDOM, 0o666),
        ("urandom", devices::URANDOM, 0o666),
        ("tty", devices::TTY, 0o666),
        ("console", devices::CONSOLE, 0o600),
        ("ttyS0", devices::SERIAL, 0o660),
        ("kvm", devices::KVM, 0o666),
    ];
    for (name, (major, minor), permissions) in nodes {
        if name == "kvm" && !machine::svm::available() {
            continue;
        }
        if tree.child_of(dev, name.as_bytes()).is_none() {
            tree.create(dev, name.as_bytes(), FileKind::CharDevice(major, minor), permissions, now())
                .map_err(|error| format!("/dev/{name}: {error:?}"))?;
        }
    }
    for (name, (major, minor)) in crate::block_files::nodes() {
        if tree.child_of(dev, name.as_bytes()).is_none() {
            tree.create(dev, name.as_bytes(), FileKind::BlockDevice(major, minor), 0o600, now())
                .map_err(|error| format!("/dev/{name}: {error:?}"))?;
        }
    }
    Ok(())
}

/// Anonymous device numbers for memory file systems (major 0, as Linux
/// gives tmpfs; the boot tree's is minor 1).
pub fn anonymous_device() -> (u32, u32) {
    // Relaxed: only uniqueness matters.
    (0, NEXT_ANONYMOUS_MINOR.fetch_add(1, Ordering::Relaxed))
}

static NEXT_ANONYMOUS_MINOR: AtomicU32 = AtomicU32::new(2);

/// Runs `operation` on the tree under its lock (`ENOENT` before `init`).
/// The caller must hold no spinlock: the operation may wait for a disk.
pub fn with<R>(operation: impl FnOnce(&mut Namespace) -> Result<R, Errno>) -> Result<R, Errno> {
    TREE.with(|slot| match slot.as_mut() {
        Some(tree) => operation(tree),
        None => Err(Errno::ENOENT),
    })
}

/// How often changes not yet made durable are committed (Linux ext4's
/// default `commit=5`): a power cut loses at most this much work.
pub const COMMIT_INTERVAL_NANOSECONDS: u64 = 5_000_000_000;

/// Starts the commit thread: every [`COMMIT_INTERVAL_NANOSECONDS`] it
/// makes every file system's changes durable, as `sync(2)` does (a disk
/// with nothing written since its last flush is not even flushed). A
/// failure is logged, and the next round tries again.
pub fn start_commit_timer() -> Result<(), sched::SpawnError> {
    sched::spawn("fs-commit", || loop {
        let deadline = machine::timer::uptime_nanoseconds().saturating_add(COMMIT_INTERVAL_NANOSECONDS);
        sched::sleep_until(deadline, || false);
        if let Err(error) = with(|tree| {
            let written = crate::page_cache::write_back_all(tree);
            tree.sync_all().and(written)
        }) {
            crate::kernel_log::note(format_args!("periodic commit: {error:?}"));
        }
    })
    .map(drop)
}

/// Before power-off or restart: every file system's storage left clean
/// (ext4 checkpointed, its journal empty, `needs_recovery` clear), so the
/// next mount has nothing to replay. A failure is logged.
pub fn quiesce_all() {
    if let Err(error) = with(|tree| {
        let written = crate::page_cache::write_back_all(tree);
        tree.quiesce_all().and(written)
    }) {
        crate::kernel_log::note(format_args!("leaving the file systems clean: {error:?}"));
    }
}
