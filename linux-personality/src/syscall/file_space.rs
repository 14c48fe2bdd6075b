//! Calls about a file's space and its page cache: `fallocate`,
//! `fadvise64` and `memfd_create` (an anonymous tmpfs file). The tmpfs
//! keeps every byte in memory, so advice has nothing to change and
//! preallocation is a size change at most.

use caps::Placement;
use vfs::FileKind;

use super::files::{descriptor, install};
use super::{value, Call, CallResult};
use crate::clock::now;
use crate::fs;
use crate::open_files::{flags, Backing, OpenFile};
use linux_abi::Errno;

/// The inode a call about file space may act on: EBADF for a bad
/// descriptor, ESPIPE for a pipe or socket, `not_regular` for a directory
/// or a device.
fn regular_file(call: &Call<'_>, fd: u64, not_regular: Errno) -> Result<(alloc::sync::Arc<OpenFile>, vfs::InodeId), Errno> {
    let file = descriptor(call, fd)?;
    let inode = match file.backing {
        Backing::Inode(inode) => inode,
        Backing::PipeReader(_) | Backing::PipeWriter(_) | Backing::Socket(_) => return Err(Errno::ESPIPE),
        _ => return Err(not_regular),
    };
    if fs::with(|tree| tree.kind(inode))? != FileKind::Regular {
        return Err(if fs::with(|tree| tree.kind(inode))? == FileKind::Directory { Errno::EISDIR } else { not_regular });
    }
    Ok((file, inode))
}

/// `fadvise64(fd, offset, length, advice)`: checked and accepted.
pub fn fadvise(call: &mut Call<'_>) -> CallResult {
    let (fd, length, advice) = (call.argument(0), call.argument(2) as i64, call.argument(3));
    let file = descriptor(call, fd)?;
    if matches!(file.backing, Backing::PipeReader(_) | Backing::PipeWriter(_) | Backing::Socket(_)) {
        return Err(Errno::ESPIPE);
    }
    if advice > 5 || length < 0 {
        return Err(Errno::EINVAL);
    }
    value(0)
}

/// `fallocate(fd, mode, offset, length)`: mode 0 grows the file to cover
/// the range, FALLOC_FL_KEEP_SIZE keeps its size (nothing to reserve),
/// FALLOC_FL_PUNCH_HOLE (with KEEP_SIZE) zeroes the range; other modes
/// EOPNOTSUPP.
pub fn fallocate(call: &mut Call<'_>) -> CallResult {
    const KEEP_SIZE: u64 = 1;
    const PUNCH_HOLE: u64 = 2;
    let (fd, mode, offset, length) = (call.argument(0), call.argument(1), call.argument(2) as i64, call.argument(3) as i64);
    if offset < 0 || length <= 0 {
        return Err(Errno::EINVAL);
    }
    let end = (offset as u64).checked_add(length as u64).filter(|end| *end <= i64::MAX as u64).ok_or(Errno::EFBIG)?;
    let (file, inode) = regular_file(call, fd, Errno::ENODEV)?;
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    if mode & KEEP_SIZE == 0 {
        super::files::check_file_size(call, end)?;
    }
    match mode {
        0 => {
            let size = fs::with(|tree| tree.stat(inode))?.size;
            if end > size {
                fs::with(|tree| crate::page_cache::truncate(tree, inode, end))?;
            }
        }
        KEEP_SIZE => {}
        mode if mode == PUNCH_HOLE | KEEP_SIZE => {
            crate::file_mappings::write_back(inode)?;
            let size = fs::with(|tree| tree.stat(inode))?.size;
            let stop = end.min(size);
            let zeroes = [0u8; 4096];
            let mut at = offset as u64;
            while at < stop {
                let chunk = (stop - at).min(zeroes.len() as u64) as usize;
                fs::with(|tree| {
                    tree.overwrite(inode, at, &zeroes[..chunk])?;
                    crate::page_cache::written(inode, at, &zeroes[..chunk]);
                    Ok(())
                })?;
                at += chunk as u64;
            }
        }
        // PUNCH_HOLE must come with KEEP_SIZE: Linux answers EOPNOTSUPP.
        _ => return Err(Errno::EOPNOTSUPP),
    }
    value(0)
}

/// `memfd_create(name, flags)`: a regular tmpfs file no directory names,
/// open for reading and writing. MFD_CLOEXEC; MFD_ALLOW_SEALING is
/// accepted (no seals are kept: `F_ADD_SEALS` is EINVAL); EINVAL for a
/// name over 249 bytes or other flags.
pub fn memfd_create(call: &mut Call<'_>) -> CallResult {
    const MFD_CLOEXEC: u64 = 1;
    const MFD_ALLOW_SEALING: u64 = 2;
    let name = call.string_in(call.argument(0), 4096)?;
    let memfd_flags = call.argument(1);
    if name.len() > 249 || memfd_flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING) != 0 {
        return Err(Errno::EINVAL);
    }
    // Made, opened and unlinked under one hold of the tree: no one sees it.
    let inode = fs::with(|tree| {
        let root = tree.root();
        let hidden = alloc::format!(".memfd-{}", call.pid());
        let inode = tree.create(root, hidden.as_bytes(), FileKind::Regular, 0o777, now())?;
        tree.opened(inode)?;
        tree.unlink(root, hidden.as_bytes(), now())?;
        Ok(inode)
    })?;
    install(call, OpenFile::new(Backing::Inode(inode), flags::O_RDWR), Placement::LowestFrom(0), memfd_flags & MFD_CLOEXEC != 0)
}
