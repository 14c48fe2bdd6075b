//! The one file tree of this kernel: a tmpfs filled from the initramfs,
//! with the device nodes and directories every Linux program expects,
//! behind one lock.
//!
//! **Lock order**: the tree lock ([`FS_LEVEL`], 7) is taken with no
//! other of this layer's locks held, and under it only the heap; copies
//! to and from user memory happen after it is released.

use alloc::string::String;
use alloc::format;

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vfs::{Errno, FileKind, Tmpfs};

use super::clock::now;

/// The file tree's lock level.
pub const FS_LEVEL: Level = Level::new(7);

static TREE: KernelTicketLock<Option<Tmpfs>> = KernelTicketLock::new(FS_LEVEL, None);

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
    let mut tree = Tmpfs::new(now());
    let unpacked = match initramfs {
        Some(archive) => tree.unpack(archive, now()).map_err(|error| format!("unpacking the initramfs: {error:?}"))?,
        None => 0,
    };
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
    *TREE.lock() = Some(tree);
    Ok(unpacked)
}

/// Runs `operation` on the tree under its lock (`ENOENT` before `init`).
pub fn with<R>(operation: impl FnOnce(&mut Tmpfs) -> Result<R, Errno>) -> Result<R, Errno> {
    match TREE.lock().as_mut() {
        Some(tree) => operation(tree),
        None => Err(Errno::ENOENT),
    }
}
