//! The changing half of [`Ext4Mount`]: each `vfs::FileSystem` change is
//! one call of the `ext4` crate's write API (one journaled operation:
//! whole or not at all), with Linux's errno for each refusal (the crate's
//! `Error::errno`: ENOSPC, EEXIST, ENOTEMPTY, ENAMETOOLONG, EMLINK, …;
//! EXDEV and EBUSY across mounts are the namespace's). After each change
//! the inodes it touched leave the inode cache.
//!
//! Durability: changes join one running transaction
//! ([`ext4::CommitPolicy::Grouped`]); `fsync` commits it
//! ([`ext4::Ext4::fsync`]), `sync` likewise, power-off checkpoints
//! ([`ext4::Ext4::checkpoint`]: the disk left clean) and `umount` unmounts
//! ([`ext4::Ext4::unmount`]).
//!
//! A file that loses its last name while open (`rm` of a file a process
//! still reads or writes) cannot be freed yet, and the `ext4` crate has no
//! orphan list: it is moved to `lost+found` as `#<inode>` and removed when
//! its last open description closes (or at power-off). Without a
//! `lost+found` it is freed at once and its descriptions then see ENOENT.
//!
//! **Must never** write to a read-only mount (the crate refuses: EROFS)
//! nor panic on anything a damaged disk holds.

use alloc::vec::Vec;

use ext4::{AttributeChanges, Owner};
use vfs::{Errno, FileKind, FileSystem, InodeNumber, Timestamp};

use crate::ext4_mounts::{errno, Ext4Mount};

/// The most one `ext4` write operation carries: a longer `write` is
/// several operations (each whole), so that no transaction and no copy
/// of the data grows with the caller's buffer.
const WRITE_PIECE: usize = 1 << 20;

/// A new inode is root's; the system-call layer gives it to its maker.
const ROOT: Owner = Owner { uid: 0, gid: 0 };

/// `S_ISUID`, `S_ISGID`, `S_IXGRP`.
const SET_USER_ID: u32 = 0o4000;
const SET_GROUP_ID: u32 = 0o2000;
const GROUP_EXECUTE: u32 = 0o010;

/// The `ext4` crate's number for a namespace inode number.
fn on_disk(number: InodeNumber) -> Result<ext4::InodeNumber, Errno> {
    u32::try_from(number.0).map(ext4::InodeNumber).map_err(|_| Errno::ENOENT)
}

fn from_disk(number: ext4::InodeNumber) -> InodeNumber {
    InodeNumber(u64::from(number.0))
}

/// A namespace time as the inode stores it (times before 1970 were kept
/// as their two's-complement bits).
fn stamp(time: Timestamp) -> ext4::Timestamp {
    ext4::Timestamp { seconds: time.seconds as i64, nanoseconds: time.nanoseconds }
}

/// The errno of a refused change; damage and device or journal failures
/// also go to the kernel log, naming the structure.
fn failed(error: ext4::Error) -> Errno {
    if matches!(error, ext4::Error::Corrupted(_) | ext4::Error::Io(_) | ext4::Error::Journal(_) | ext4::Error::Unsupported(_)) {
        crate::kernel_log::note(format_args!("ext4: {error}"));
    }
    errno(&error)
}

impl Ext4Mount {
    /// `create`: a directory, regular file, FIFO or socket node. Device
    /// nodes are refused (EOPNOTSUPP): the crate's `create` does not store
    /// device numbers.
    pub(crate) fn make_node(&mut self, directory: InodeNumber, name: &[u8], kind: FileKind, permissions: u32, now: Timestamp) -> Result<InodeNumber, Errno> {
        let parent = on_disk(directory)?;
        let bits = (permissions & 0o7777) as u16;
        let made = match kind {
            FileKind::Directory => self.file_system.mkdir(parent, name, bits, ROOT, stamp(now)),
            FileKind::Regular | FileKind::Fifo | FileKind::Socket => self.file_system.create(parent, name, kind.mode_bits() as u16 | bits, ROOT, stamp(now)),
            FileKind::Symlink => return Err(Errno::EINVAL),
            FileKind::CharDevice(..) | FileKind::BlockDevice(..) => return Err(Errno::EOPNOTSUPP),
        };
        self.forget(&[parent.0]);
        made.map(from_disk).map_err(failed)
    }

    /// `symlink`: `name` → `target`.
    pub(crate) fn make_symlink(&mut self, directory: InodeNumber, name: &[u8], target: &[u8], now: Timestamp) -> Result<InodeNumber, Errno> {
        let parent = on_disk(directory)?;
        let made = self.file_system.symlink(parent, name, target, ROOT, stamp(now));
        self.forget(&[parent.0]);
        made.map(from_disk).map_err(failed)
    }

    /// `link`: a new name for `target`.
    pub(crate) fn add_link(&mut self, directory: InodeNumber, name: &[u8], target: InodeNumber, now: Timestamp) -> Result<(), Errno> {
        let (parent, target) = (on_disk(directory)?, on_disk(target)?);
        let linked = self.file_system.link(target, parent, name, stamp(now));
        self.forget(&[parent.0, target.0]);
        linked.map_err(failed)
    }

    /// `unlink`: a file open somewhere and losing its last name becomes
    /// an orphan instead (see the module documentation).
    pub(crate) fn remove_name(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        let parent = on_disk(directory)?;
        let victim = self.child(directory, name)?.ok_or(Errno::ENOENT)?;
        if self.would_free_open_file(victim)? {
            return self.make_orphan((directory, name), victim, now);
        }
        let number = on_disk(victim)?;
        let removed = self.file_system.unlink(parent, name, stamp(now));
        self.forget(&[parent.0, number.0]);
        removed.map_err(failed)
    }

    /// `rmdir`.
    pub(crate) fn remove_directory(&mut self, directory: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Errno> {
        let parent = on_disk(directory)?;
        let victim = self.child(directory, name)?;
        let removed = self.file_system.rmdir(parent, name, stamp(now));
        self.forget(&[parent.0]);
        if let Some(victim) = victim {
            self.forget(&[on_disk(victim)?.0]);
        }
        removed.map_err(failed)
    }

    /// `rename`: a name onto another name of the same file changes
    /// nothing (POSIX); an open file it replaces becomes an orphan first.
    pub(crate) fn move_name(&mut self, (from, from_name): (InodeNumber, &[u8]), (to, to_name): (InodeNumber, &[u8]), now: Timestamp) -> Result<(), Errno> {
        let moved = self.child(from, from_name)?.ok_or(Errno::ENOENT)?;
        let replaced = self.child(to, to_name)?;
        if replaced == Some(moved) {
            return Ok(());
        }
        if let Some(replaced) = replaced {
            if self.would_free_open_file(replaced)? {
                self.make_orphan((to, to_name), replaced, now)?;
            }
        }
        let (from_directory, to_directory) = (on_disk(from)?, on_disk(to)?);
        let renamed = self.file_system.rename(from_directory, from_name, to_directory, to_name, stamp(now));
        self.forget(&[on_disk(from)?.0, on_disk(to)?.0, on_disk(moved)?.0]);
        if let Some(replaced) = replaced {
            self.forget(&[on_disk(replaced)?.0]);
        }
        renamed.map_err(failed)
    }

    /// `write`: in pieces of at most [`WRITE_PIECE`] bytes; a failure
    /// after some pieces is a short write, as on Linux.
    pub(crate) fn write_at(&mut self, inode: InodeNumber, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Errno> {
        let number = on_disk(inode)?;
        let mut done = 0;
        let mut outcome = Ok(());
        while done < data.len() {
            let end = data.len().min(done + WRITE_PIECE);
            let at = offset.checked_add(done as u64).ok_or(Errno::EFBIG)?;
            match self.file_system.write(number, at, &data[done..end], stamp(now)) {
                Ok(count) if count > 0 => done += count,
                Ok(_) => break,
                Err(error) => {
                    outcome = Err(failed(error));
                    break;
                }
            }
        }
        self.forget(&[number.0]);
        match outcome {
            Err(error) if done == 0 => Err(error),
            _ => Ok(done),
        }
    }

    /// A shared mapping's bytes written back inside the file.
    pub(crate) fn overwrite_inside(&mut self, inode: InodeNumber, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EINVAL)?;
        if end > self.stat(inode)?.size {
            return Err(Errno::EINVAL);
        }
        let written = self.write_at(inode, offset, data, crate::clock::now())?;
        if written != data.len() {
            return Err(Errno::EIO);
        }
        Ok(())
    }

    /// `truncate`.
    pub(crate) fn set_length(&mut self, inode: InodeNumber, length: u64, now: Timestamp) -> Result<(), Errno> {
        let number = on_disk(inode)?;
        let truncated = self.file_system.truncate(number, length, stamp(now));
        self.forget(&[number.0]);
        truncated.map_err(failed)
    }

    /// `chmod`.
    pub(crate) fn change_permissions(&mut self, inode: InodeNumber, permissions: u32, now: Timestamp) -> Result<(), Errno> {
        let changes = AttributeChanges { permissions: Some((permissions & 0o7777) as u16), ..AttributeChanges::default() };
        self.change_attributes(inode, changes, now)
    }

    /// `chown`: a regular file loses set-user-ID, and set-group-ID when
    /// it is group-executable, as on Linux (and the tmpfs).
    pub(crate) fn change_owner(&mut self, inode: InodeNumber, owner: Option<u32>, group: Option<u32>, now: Timestamp) -> Result<(), Errno> {
        let status = self.stat(inode)?;
        let mut permissions = status.mode & 0o7777;
        if self.kind(inode)? == FileKind::Regular {
            permissions &= !SET_USER_ID;
            if permissions & GROUP_EXECUTE != 0 {
                permissions &= !SET_GROUP_ID;
            }
        }
        let changes = AttributeChanges { permissions: Some(permissions as u16), uid: owner, gid: group, ..AttributeChanges::default() };
        self.change_attributes(inode, changes, now)
    }

    /// `utimensat`.
    pub(crate) fn change_times(&mut self, inode: InodeNumber, accessed: Timestamp, modified: Timestamp, now: Timestamp) -> Result<(), Errno> {
        let changes = AttributeChanges { access_time: Some(stamp(accessed)), modification_time: Some(stamp(modified)), ..AttributeChanges::default() };
        self.change_attributes(inode, changes, now)
    }

    fn change_attributes(&mut self, inode: InodeNumber, changes: AttributeChanges, now: Timestamp) -> Result<(), Errno> {
        let number = on_disk(inode)?;
        let changed = self.file_system.set_attributes(number, changes, stamp(now));
        self.forget(&[number.0]);
        changed.map_err(failed)
    }

    /// `fsync`/`fdatasync`: the running transaction commits (nothing to
    /// do on a read-only mount).
    pub(crate) fn sync_inode(&mut self, inode: InodeNumber) -> Result<(), Errno> {
        if !self.is_writable() {
            return Ok(());
        }
        self.file_system.fsync(on_disk(inode)?).map_err(failed)
    }

    /// `sync`/`syncfs`: the running transaction commits.
    pub(crate) fn commit_all(&mut self) -> Result<(), Errno> {
        if !self.is_writable() {
            return Ok(());
        }
        self.file_system.sync().map_err(failed)
    }

    /// Before power-off: orphans removed, everything checkpointed home and
    /// the journal emptied (the disk clean, `needs_recovery` clear).
    pub(crate) fn checkpoint_all(&mut self) -> Result<(), Errno> {
        if !self.is_writable() {
            return Ok(());
        }
        let orphans: Vec<u32> = self.orphans.keys().copied().collect();
        for orphan in orphans {
            self.bury(orphan);
        }
        self.file_system.checkpoint().map_err(failed)
    }

    /// `umount`: the disk left clean and given up (nothing is open here:
    /// the namespace refuses to unmount before, so no orphan is left).
    pub(crate) fn shut_down(self) -> Result<(), Errno> {
        self.file_system.unmount().map(drop).map_err(failed)
    }

    pub(crate) fn note_opened(&mut self, inode: InodeNumber) -> Result<(), Errno> {
        self.kind(inode)?;
        let number = on_disk(inode)?.0;
        *self.open.entry(number).or_insert(0) += 1;
        Ok(())
    }

    /// How many open descriptions name `inode`.
    pub(crate) fn open_count(&self, inode: InodeNumber) -> u32 {
        on_disk(inode).ok().and_then(|number| self.open.get(&number.0).copied()).unwrap_or(0)
    }

    pub(crate) fn note_closed(&mut self, inode: InodeNumber) {
        let Ok(number) = on_disk(inode) else { return };
        let Some(count) = self.open.get_mut(&number.0) else { return };
        *count -= 1;
        if *count == 0 {
            self.open.remove(&number.0);
            self.bury(number.0);
        }
    }

    /// Whether removing a name of `victim` frees a file that is open.
    fn would_free_open_file(&self, victim: InodeNumber) -> Result<bool, Errno> {
        let number = on_disk(victim)?.0;
        if !self.open.contains_key(&number) || !self.is_writable() {
            return Ok(false);
        }
        let status = self.stat(victim)?;
        Ok(status.links <= 1 && self.kind(victim)? != FileKind::Directory)
    }

    /// Moves `name` of the open file `victim` to `lost+found` (see the
    /// module documentation); without one, the name is simply removed.
    fn make_orphan(&mut self, (directory, name): (InodeNumber, &[u8]), victim: InodeNumber, now: Timestamp) -> Result<(), Errno> {
        let parent = on_disk(directory)?;
        let number = on_disk(victim)?;
        let lost_and_found = match self.child(self.root(), b"lost+found")? {
            Some(found) if self.kind(found)? == FileKind::Directory => on_disk(found)?,
            _ => {
                let removed = self.file_system.unlink(parent, name, stamp(now));
                self.forget(&[parent.0, number.0]);
                return removed.map_err(failed);
            }
        };
        let hidden = alloc::format!("#{}", number.0).into_bytes();
        let moved = self.file_system.rename(parent, name, lost_and_found, &hidden, stamp(now));
        self.forget(&[parent.0, lost_and_found.0, number.0]);
        moved.map_err(failed)?;
        self.orphans.insert(number.0, hidden);
        Ok(())
    }

    /// Removes orphan `number`'s hidden name, if it has one; a failure is
    /// logged (e2fsck would find the file in `lost+found`).
    fn bury(&mut self, number: u32) {
        let Some(hidden) = self.orphans.remove(&number) else { return };
        let Ok(Some(lost_and_found)) = self.child(self.root(), b"lost+found") else { return };
        let Ok(parent) = on_disk(lost_and_found) else { return };
        let now = crate::clock::now();
        if let Err(error) = self.file_system.unlink(parent, &hidden, stamp(now)) {
            crate::kernel_log::note(format_args!("ext4: removing orphan {number}: {error}"));
        }
        self.forget(&[parent.0, number]);
    }
}
