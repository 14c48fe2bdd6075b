//! File permission checks for system calls: who the caller is to a file
//! (its file-system ids, or its real ids for `access`), and the checks of
//! `linux_abi::credentials` applied to inodes — reading and writing a file,
//! executing it, changing a directory's entries (write and search on the
//! directory, and the sticky bit's rule), changing a file's mode or times
//! (its owner or root) and owner (`may_chown`). New files are given the
//! creator's file-system user and group.
//!
//! Path lookup checks search permission on each directory it passes
//! ([`search_rule`]).


use linux_abi::credentials::{may_access, Accessor, UNCHANGED};
use linux_abi::Errno;
use vfs::InodeId;

use super::Call;
use crate::clock::now;
use crate::fs;

pub use linux_abi::credentials::want;

/// The caller as file checks see it: (uid, gid, supplementary groups);
/// with `real`, its real ids (`access`), else its file-system ids.
fn caller(call: &Call<'_>, real: bool) -> (u32, u32, alloc::sync::Arc<alloc::vec::Vec<u32>>) {
    let state = call.process.state();
    let credentials = state.credentials;
    let (uid, gid) = if real { (credentials.user.real, credentials.group.real) } else { (credentials.user.file_system, credentials.group.file_system) };
    (uid, gid, state.groups.clone())
}

/// Which directories the caller may look into while resolving a path:
/// those whose search bit its file-system ids are given (root: all).
pub fn search_rule(call: &Call<'_>) -> impl Fn(&vfs::Stat) -> bool {
    let (uid, gid, groups) = caller(call, false);
    move |stat: &vfs::Stat| {
        let who = Accessor { uid, gid, groups: &groups };
        may_access(&who, stat.uid, stat.gid, stat.mode & 0o7777, true, want::EXECUTE)
    }
}

/// EACCES unless the caller may have `wanted` (`want` bits) of `inode`;
/// EROFS first for writing a file, directory or link on a read-only mount
/// (Linux's `sb_permission`: device nodes stay writable).
pub fn check(call: &Call<'_>, inode: InodeId, wanted: u32, real: bool) -> Result<(), Errno> {
    let (uid, gid, groups) = caller(call, real);
    let (stat, read_only) = fs::with(|tree| Ok((tree.stat(inode)?, tree.is_read_only(inode)?)))?;
    if wanted & want::WRITE != 0 && read_only && matches!(stat.mode & 0o170000, 0o100000 | 0o040000 | 0o120000) {
        return Err(Errno::EROFS);
    }
    let who = Accessor { uid, gid, groups: &groups };
    if may_access(&who, stat.uid, stat.gid, stat.mode & 0o7777, stat.mode & 0o170000 == 0o040000, wanted) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// Adding or removing an entry of `directory`: write and search on it.
pub fn check_directory_change(call: &Call<'_>, directory: InodeId) -> Result<(), Errno> {
    check(call, directory, want::WRITE | want::EXECUTE, false)
}

/// Removing or replacing `victim` from `directory`: as
/// [`check_directory_change`], and in a sticky directory (such as /tmp)
/// only the victim's owner, the directory's owner or root may (EPERM).
pub fn check_removal(call: &Call<'_>, directory: InodeId, victim: InodeId) -> Result<(), Errno> {
    check_directory_change(call, directory)?;
    let (uid, _, _) = caller(call, false);
    let (directory_stat, victim_stat) = fs::with(|tree| Ok((tree.stat(directory)?, tree.stat(victim)?)))?;
    if directory_stat.mode & 0o1000 != 0 && uid != 0 && uid != directory_stat.uid && uid != victim_stat.uid {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Changing `inode`'s mode or times explicitly: its owner or root (EPERM).
pub fn check_owner(call: &Call<'_>, inode: InodeId) -> Result<(), Errno> {
    let (uid, _, _) = caller(call, false);
    let owner = fs::with(|tree| tree.stat(inode))?.uid;
    if uid == 0 || uid == owner {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// `chown` of `inode` to `owner`/`group` (`UNCHANGED`: leave), after
/// Linux's rules.
pub fn change_owner(call: &Call<'_>, inode: InodeId, owner: u32, group: u32) -> Result<(), Errno> {
    let (uid, gid, groups) = caller(call, false);
    let stat = fs::with(|tree| tree.stat(inode))?;
    linux_abi::credentials::may_chown(&Accessor { uid, gid, groups: &groups }, (stat.uid, stat.gid), (owner, group))?;
    if owner == UNCHANGED && group == UNCHANGED {
        return Ok(());
    }
    let pick = |id: u32| (id != UNCHANGED).then_some(id);
    fs::with(|tree| tree.set_owner(inode, pick(owner), pick(group), now()))
}

/// Gives a file the caller just made to its file-system user and group
/// (root's files are made root's already).
pub fn own_new(call: &Call<'_>, inode: InodeId) -> Result<(), Errno> {
    let (uid, gid, _) = caller(call, false);
    if uid == 0 && gid == 0 {
        return Ok(());
    }
    fs::with(|tree| {
        let kept_mode = tree.stat(inode)?.mode & 0o7777;
        tree.set_owner(inode, Some(uid), Some(gid), now())?;
        // A new file keeps the mode it was made with (set_owner's clearing
        // of set-user-ID is for a change of owner, not a birth).
        tree.set_permissions(inode, kept_mode, now())
    })
}
