//! Mounting: `mount(2)` of `ext4` (a disk, read-write or, with
//! `MS_RDONLY`, read-only) and `tmpfs` (a fresh instance), `MS_REMOUNT`
//! between read-only and read-write, `umount2(2)`,
//! `statfs(2)`/`fstatfs(2)` with each file system's own figures, and
//! making changes durable: `sync(2)`, `syncfs(2)` (`/proc/mounts` is
//! `procfs.rs`'s, `fsync` is `files.rs`'s).
//!
//! `proc`, `devtmpfs` and `sysfs` are what they were: `/proc` and `/dev`
//! exist in the root tmpfs from boot, so mounting them on an existing
//! directory is accepted and changes nothing.
//!
//! ext4 read-write replays its journal at mount; a disk or file system
//! that can only be read is `EROFS` without `MS_RDONLY`, the answer Linux
//! gives for a read-only device (BusyBox's and util-linux's `mount` then
//! retry read-only by themselves). `umount2` leaves the disk clean (the
//! journal checkpointed and emptied).

use alloc::boxed::Box;
use alloc::vec::Vec;

use linux_abi::Errno;
use vfs::{FileKind, MountOptions};

use super::paths::{lookup_at, path_in, AT_FDCWD};
use super::{value, Call, CallResult};
use crate::clock::now;
use crate::ext4_mounts::{block_device_numbers, Access, Ext4Mount};
use crate::fs;

const MS_RDONLY: u64 = 1;
const MS_REMOUNT: u64 = 0x20;
const UMOUNT_NOFOLLOW: u64 = 8;
/// `statfs`'s `f_flags`: the figures are valid, the mount read-only.
const ST_VALID: u64 = 0x20;
const ST_RDONLY: u64 = 1;

/// `mount(source, target, type, flags, data)`.
pub fn mount(call: &mut Call<'_>) -> CallResult {
    let target = path_in(call, call.argument(1))?;
    let kind = if call.argument(2) != 0 { call.string_in(call.argument(2), 64)? } else { Vec::new() };
    let point = lookup_at(call, AT_FDCWD as u64, &target, true)?;
    if fs::with(|tree| tree.kind(point))? != FileKind::Directory {
        return Err(Errno::ENOTDIR);
    }
    let flags = call.argument(3);
    if flags & MS_REMOUNT != 0 {
        return remount(call, point, flags);
    }
    match kind.as_slice() {
        b"proc" | b"devtmpfs" | b"sysfs" => value(0),
        b"tmpfs" => mount_tmpfs(call, point, flags),
        b"ext4" => mount_ext4(call, point, flags),
        _ => Err(Errno::ENODEV),
    }
}

/// `mount(…, MS_REMOUNT [| MS_RDONLY], …)`: the mount whose root is
/// `point` (`EINVAL` for another directory) becomes read-only or
/// read-write; stores through shared mappings are written back before it
/// goes read-only. Other flags and the data string are accepted and
/// change nothing.
fn remount(call: &Call<'_>, point: vfs::InodeId, flags: u64) -> CallResult {
    must_be_root(call)?;
    let read_only = flags & MS_RDONLY != 0;
    fs::with(|tree| {
        if read_only {
            crate::page_cache::write_back_all(tree)?;
        }
        tree.remount(point, read_only)
    })?;
    value(0)
}

fn must_be_root(call: &Call<'_>) -> Result<(), Errno> {
    if call.process.state().credentials.user.effective != 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// A fresh tmpfs, its root as the `mode=`, `uid=` and `gid=` options say
/// (`size=` and `nr_inodes=` are accepted and not enforced).
fn mount_tmpfs(call: &Call<'_>, point: vfs::InodeId, flags: u64) -> CallResult {
    must_be_root(call)?;
    let source = if call.argument(0) != 0 { call.string_in(call.argument(0), vfs::MAX_PATH - 1)? } else { b"none".to_vec() };
    let data = if call.argument(4) != 0 { call.string_in(call.argument(4), 4096)? } else { Vec::new() };
    let mut tmpfs = linux_objects::tmpfs_pages::new_tmpfs();
    let root = tmpfs.root();
    let (mut mode, mut uid, mut gid) = (0o1777, 0, 0);
    for option in data.split(|&byte| byte == b',').filter(|option| !option.is_empty()) {
        let (name, number) = match option.iter().position(|&byte| byte == b'=') {
            Some(at) => (&option[..at], &option[at + 1..]),
            None => (option, &b""[..]),
        };
        let radix = if name == b"mode" { 8 } else { 10 };
        let parsed = core::str::from_utf8(number).ok().and_then(|text| u32::from_str_radix(text, radix).ok());
        match (name, parsed) {
            (b"mode", Some(parsed)) => mode = parsed & 0o7777,
            (b"uid", Some(parsed)) => uid = parsed,
            (b"gid", Some(parsed)) => gid = parsed,
            (b"size" | b"nr_inodes" | b"nr_blocks", _) => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    tmpfs.set_permissions(root, mode, now())?;
    tmpfs.set_owner(root, Some(uid), Some(gid), now())?;
    let options = MountOptions { source, kind: b"tmpfs".to_vec(), device: fs::anonymous_device(), read_only: flags & MS_RDONLY != 0 };
    fs::with(|tree| tree.mount(point, Box::new(tmpfs), options))?;
    value(0)
}

/// The ext4 file system on the block device `source`: read-only with
/// `MS_RDONLY`, else read-write.
fn mount_ext4(call: &Call<'_>, point: vfs::InodeId, flags: u64) -> CallResult {
    must_be_root(call)?;
    let source = path_in(call, call.argument(0))?;
    let device = lookup_at(call, AT_FDCWD as u64, &source, true)?;
    let numbers = block_device_numbers(fs::with(|tree| tree.kind(device))?)?;
    let disk = crate::block_files::disk(numbers).ok_or(Errno::ENXIO)?.clone();
    let mounted = fs::with(|tree| Ok(tree.mounts().iter().any(|mount| mount.source == source)))?;
    if mounted {
        return Err(Errno::EBUSY);
    }
    let read_only = flags & MS_RDONLY != 0;
    let access = if read_only { Access::ReadOnly } else { Access::ReadWrite };
    let file_system = Ext4Mount::open(disk, access)?;
    let options = MountOptions { source, kind: b"ext4".to_vec(), device: numbers, read_only };
    fs::with(|tree| tree.mount(point, Box::new(file_system), options))?;
    value(0)
}

/// `umount2(target, flags)`: `EINVAL` for what is not a mount, `EBUSY`
/// while a file is open there, a process works there or a mount lies
/// inside (`MNT_DETACH` waits for nothing yet: it is `EBUSY` too).
pub fn umount2(call: &mut Call<'_>) -> CallResult {
    must_be_root(call)?;
    let target = path_in(call, call.argument(0))?;
    let flags = call.argument(1);
    if flags & !0xF != 0 {
        return Err(Errno::EINVAL);
    }
    let root = lookup_at(call, AT_FDCWD as u64, &target, flags & UMOUNT_NOFOLLOW == 0)?;
    let file_system = root.file_system;
    if crate::process::all().iter().any(|process| process.state().cwd.file_system == file_system) && file_system != fs::with(|tree| Ok(tree.root()))?.file_system {
        return Err(Errno::EBUSY);
    }
    fs::with(|tree| {
        let unmounted = tree.unmount(root)?;
        // Its inode numbers mean nothing now (and may come back).
        crate::page_cache::forget_file_system(file_system);
        unmounted.unmount()
    })?;
    value(0)
}

/// `sync()`: every file system's changes made durable (errors are not
/// reported: `sync` cannot fail).
pub fn sync() -> CallResult {
    let _ = fs::with(|tree| {
        let written = crate::page_cache::write_back_all(tree);
        tree.sync_all().and(written)
    });
    value(0)
}

/// `syncfs(fd)`: the changes to the file system holding `fd`'s file (a
/// pipe's or socket's has nothing to write back).
pub fn syncfs(call: &mut Call<'_>) -> CallResult {
    let file = crate::open_files::file(call.process.native.space(), call.argument(0))?;
    if let Some(inode) = file.inode() {
        fs::with(|tree| {
            crate::page_cache::write_back_all(tree)?;
            tree.sync_file_system(inode)
        })?;
    }
    value(0)
}

/// `statfs(path, buffer)` and (`by_descriptor`) `fstatfs(fd, buffer)`:
/// the figures of the file system holding the file. A tmpfs's size is the
/// machine's free memory.
pub fn statfs(call: &mut Call<'_>, by_descriptor: bool) -> CallResult {
    let inode = if by_descriptor {
        let file = crate::open_files::file(call.process.native.space(), call.argument(0))?;
        file.inode()
    } else {
        let path = path_in(call, call.argument(0))?;
        Some(lookup_at(call, AT_FDCWD as u64, &path, true)?)
    };
    let (mut figures, read_only) = match inode {
        Some(inode) => fs::with(|tree| Ok((tree.statistics(inode)?, tree.is_read_only(inode)?)))?,
        // Pipes, sockets and anonymous inodes: Linux answers for their
        // pseudo file systems; ours are counted like a tmpfs.
        None => (vfs::Statistics { magic: vfs::TMPFS_MAGIC, block_size: 4096, name_max: 255, ..Default::default() }, false),
    };
    if figures.magic == vfs::TMPFS_MAGIC {
        let free = kernel_objects::physical_memory::free_frames();
        figures = vfs::Statistics { blocks: free * 2, free_blocks: free, available_blocks: free, files: 1 << 20, free_files: 1 << 19, ..figures };
    }
    let mut record = [0u8; 120];
    let mut put = |at: usize, value: u64| record[at..at + 8].copy_from_slice(&value.to_le_bytes());
    put(0, figures.magic);
    put(8, figures.block_size);
    put(16, figures.blocks);
    put(24, figures.free_blocks);
    put(32, figures.available_blocks);
    put(40, figures.files);
    put(48, figures.free_files);
    // f_fsid as Linux's u64_to_fsid: the low half first.
    put(56, figures.id);
    put(64, figures.name_max);
    put(72, figures.block_size);
    put(80, ST_VALID | if read_only { ST_RDONLY } else { 0 });
    call.write_out(call.argument(1), &record)?;
    value(0)
}
