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

use spinlock::Level;
use vfs::{Errno, FileKind, Namespace, Tmpfs};

use super::clock::now;
use super::sleep_lock::SleepLock;

/// The file tree's lock level.
pub const FS_LEVEL: Level = Level::new(7);

/// `st_dev` of the root tmpfs (Linux gives tmpfs anonymous device numbers, major 0).
pub const ROOT_DEVICE: (u32, u32) = (0, 1);

static TREE: SleepLock<Option<Namespace>> = SleepLock::new(FS_LEVEL, None);

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
}

/// Builds the tree: the initramfs (if any), then what must exist.
pub fn init(initramfs: Option<&'static [u8]>) -> Result<usize, String> {
    let mut tmpfs = Tmpfs::new(now());
    let unpacked = match initramfs {
        Some(archive) => tmpfs.unpack(archive, now()).map_err(|error| format!("unpacking the initramfs: {error:?}"))?,
        None => 0,
    };
    let mut tree = Namespace::new(Box::new(tmpfs), ROOT_DEVICE);
    let root = tree.root();
    for (name, permissions) in [("dev", 0o755), ("tmp", 0o1777), ("proc", 0o555), ("etc", 0o755), ("root", 0o700)] {
        if tree.child_of(root, name.as_bytes()).is_none() {
            tree.create(root, name.as_bytes(), FileKind::Directory, permissions, now()).map_err(|error| format!("/{name}: {error:?}"))?;
        }
    }
    let dev = tree.lookup(root, b"/dev", true).map_err(|error| format!("/dev: {error:?}"))?;
    let nodes = [
        ("null", devices::NULL, 0o666),
        ("zero", devices::ZERO, 0o666),
        ("random", devices::RANDOM, 0o666),
        ("urandom", devices::URANDOM, 0o666),
        ("tty", devices::TTY, 0o666),
        ("console", devices::CONSOLE, 0o600),
        ("ttyS0", devices::SERIAL, 0o660),
    ];
    for (name, (major, minor), permissions) in nodes {
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
    TREE.with(|slot| *slot = Some(tree));
    Ok(unpacked)
}

/// Runs `operation` on the tree under its lock (`ENOENT` before `init`).
/// The caller must hold no spinlock: the operation may wait for a disk.
pub fn with<R>(operation: impl FnOnce(&mut Namespace) -> Result<R, Errno>) -> Result<R, Errno> {
    TREE.with(|slot| match slot.as_mut() {
        Some(tree) => operation(tree),
        None => Err(Errno::ENOENT),
    })
}

/// Before power-off or restart: every file system's storage left clean
/// (ext4 checkpointed, its journal empty, `needs_recovery` clear), so the
/// next mount has nothing to replay. A failure is logged.
pub fn quiesce_all() {
    if let Err(error) = with(|tree| tree.quiesce_all()) {
        crate::kernel_log::note(format_args!("leaving the file systems clean: {error:?}"));
    }
}
