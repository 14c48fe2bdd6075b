//! The writing half of [`Ext4`], for the kernel's VFS: create, mkdir,
//! symlink, link, unlink, rmdir, rename, write, truncate, set_attributes,
//! sync.
//!
//! Each call is one operation: it runs in a `Transaction` that sees its own
//! changes and touches nothing on disk; if any step fails the whole call
//! changes nothing. On success [`Ext4::commit`] applies the collected
//! [`BlockWrites`](crate::BlockWrites) (data, then metadata) and updates the
//! in-memory descriptors and superblock. Group descriptors and the
//! superblock's free counts are written with every operation that changes
//! them, so [`Ext4::sync`] only has to flush the device. **Must never**
//! write on a [`Mount::ReadOnly`] file system ([`Error::ReadOnly`], EROFS).

use crate::block_device::BlockDevice;
use crate::error::{Error, Structure};
use crate::features::Mount;
use crate::filesystem::Ext4;
use crate::inode::InodeNumber;
use crate::namespace::Creation;
use crate::timestamp::Timestamp;
use crate::transaction::{Changes, Transaction};

/// Owner and permissions of a new file, directory or link.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Owner {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// What [`Ext4::set_attributes`] changes (`None` leaves a field alone);
/// the change time is always set to the call's `now`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct AttributeChanges {
    /// New permission bits (`mode & 0o7777`; the file type never changes).
    pub permissions: Option<u16>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New access time.
    pub access_time: Option<Timestamp>,
    /// New modification time.
    pub modification_time: Option<Timestamp>,
}

impl<D: BlockDevice> Ext4<D> {
    /// Creates `name` in directory `parent` with `mode` (a regular file when
    /// the type bits are 0; FIFOs, sockets and devices also allowed).
    pub fn create(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        mode: u16,
        owner: Owner,
        now: Timestamp,
    ) -> Result<InodeNumber, Error> {
        self.operate(|transaction| transaction.create(parent, name, mode, creation(owner, now)))
    }

    /// Creates the empty directory `name` in `parent`.
    pub fn mkdir(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        mode: u16,
        owner: Owner,
        now: Timestamp,
    ) -> Result<InodeNumber, Error> {
        self.operate(|transaction| transaction.make_directory(parent, name, mode, creation(owner, now)))
    }

    /// Creates the symbolic link `name` in `parent` pointing to `target`.
    pub fn symlink(
        &mut self,
        parent: InodeNumber,
        name: &[u8],
        target: &[u8],
        owner: Owner,
        now: Timestamp,
    ) -> Result<InodeNumber, Error> {
        self.operate(|transaction| transaction.make_symlink(parent, name, target, creation(owner, now)))
    }

    /// Adds the name `name` in `parent` for the existing file `target`.
    pub fn link(&mut self, target: InodeNumber, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        self.operate(|transaction| transaction.make_link(target, parent, name, now))
    }

    /// Removes the non-directory `name` from `parent` (freeing the file
    /// with its last name).
    pub fn unlink(&mut self, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        self.operate(|transaction| transaction.unlink(parent, name, now))
    }

    /// Removes the empty directory `name` from `parent`.
    pub fn rmdir(&mut self, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        self.operate(|transaction| transaction.remove_directory(parent, name, now))
    }

    /// Renames `from_name` in `from` to `to_name` in `to`.
    pub fn rename(
        &mut self,
        from: InodeNumber,
        from_name: &[u8],
        to: InodeNumber,
        to_name: &[u8],
        now: Timestamp,
    ) -> Result<(), Error> {
        self.operate(|transaction| transaction.rename((from, from_name), (to, to_name), now))
    }

    /// Writes `data` at `offset` of regular file `inode`; returns how many
    /// bytes were written (all of them, or an error).
    pub fn write(&mut self, inode: InodeNumber, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Error> {
        self.operate(|transaction| transaction.write_file(inode, offset, data, now))
    }

    /// Sets regular file `inode`'s size, freeing blocks past a smaller one.
    pub fn truncate(&mut self, inode: InodeNumber, size: u64, now: Timestamp) -> Result<(), Error> {
        self.operate(|transaction| transaction.truncate_file(inode, size, now))
    }

    /// Changes `inode`'s permissions, owner or times.
    pub fn set_attributes(
        &mut self,
        inode: InodeNumber,
        changes: AttributeChanges,
        now: Timestamp,
    ) -> Result<(), Error> {
        self.operate(|transaction| {
            let mut target = transaction.read_inode(inode)?;
            if let Some(permissions) = changes.permissions {
                target.mode = (target.mode & !0o7777) | (permissions & 0o7777);
            }
            target.uid = changes.uid.unwrap_or(target.uid);
            target.gid = changes.gid.unwrap_or(target.gid);
            target.access_time = changes.access_time.unwrap_or(target.access_time);
            target.modification_time = changes.modification_time.unwrap_or(target.modification_time);
            target.change_time = now;
            transaction.write_inode(&target)
        })
    }

    /// Makes every committed operation durable. Descriptors and the
    /// superblock are already written with each operation.
    pub fn sync(&mut self) -> Result<(), Error> {
        self.require_writable()?;
        self.disk.flush()
    }

    fn require_writable(&self) -> Result<(), Error> {
        match self.mount() {
            Mount::ReadWrite => Ok(()),
            Mount::ReadOnly(_) => Err(Error::ReadOnly),
        }
    }

    /// Runs one operation in a transaction and commits what it changed.
    fn operate<T>(&mut self, operation: impl FnOnce(&mut Transaction<'_, D>) -> Result<T, Error>) -> Result<T, Error> {
        self.require_writable()?;
        let mut transaction = Transaction::new(&self.disk, &self.superblock, &self.groups);
        let value = operation(&mut transaction)?;
        let changes = transaction.finish()?;
        self.commit(changes)?;
        Ok(value)
    }

    /// The one place blocks reach the disk: data first, then metadata
    /// (where the journal will write metadata to its log instead), then the
    /// in-memory descriptors and superblock follow.
    fn commit(&mut self, changes: Changes) -> Result<(), Error> {
        for (block, bytes) in changes.writes.in_order() {
            self.disk.write_blocks(block, bytes, Structure::Superblock)?;
        }
        for (group, descriptor, bytes) in &changes.groups {
            self.groups.replace(*group, *descriptor, bytes);
        }
        self.superblock = changes.superblock;
        Ok(())
    }
}

fn creation(owner: Owner, now: Timestamp) -> Creation {
    Creation { uid: owner.uid, gid: owner.gid, now }
}
