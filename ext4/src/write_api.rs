//! The writing half of [`Ext4`], for the kernel's VFS: create, mkdir,
//! symlink, link, unlink, rmdir, rename, write, truncate, set_attributes
//! (durability: `commit`'s [`Ext4::sync`] and [`Ext4::fsync`]).
//!
//! Each call is one operation: it runs in a `Transaction` that sees its own
//! changes and touches nothing on disk; if any step fails the whole call
//! changes nothing. On success `Ext4::commit` applies the collected
//! [`BlockWrites`](crate::BlockWrites) (through the journal when there is
//! one: all of one operation's blocks in one transaction) and updates the
//! in-memory descriptors and superblock. Group descriptors and the
//! superblock's free counts are changed with every operation that changes
//! them. **Must never** write on a [`crate::Mount::ReadOnly`] file system
//! ([`Error::ReadOnly`], EROFS).

use crate::block_device::BlockDevice;
use crate::error::Error;
use crate::filesystem::Ext4;
use crate::inode::InodeNumber;
use crate::namespace::Creation;
use crate::timestamp::Timestamp;
use crate::transaction::Transaction;

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
        self.operate(now, |transaction| transaction.create(parent, name, mode, creation(owner, now)))
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
        self.operate(now, |transaction| transaction.make_directory(parent, name, mode, creation(owner, now)))
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
        self.operate(now, |transaction| transaction.make_symlink(parent, name, target, creation(owner, now)))
    }

    /// Adds the name `name` in `parent` for the existing file `target`.
    pub fn link(&mut self, target: InodeNumber, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        self.operate(now, |transaction| transaction.make_link(target, parent, name, now))
    }

    /// Removes the non-directory `name` from `parent` (freeing the file
    /// with its last name).
    pub fn unlink(&mut self, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        self.operate(now, |transaction| transaction.unlink(parent, name, now))
    }

    /// Removes the empty directory `name` from `parent`.
    pub fn rmdir(&mut self, parent: InodeNumber, name: &[u8], now: Timestamp) -> Result<(), Error> {
        self.operate(now, |transaction| transaction.remove_directory(parent, name, now))
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
        self.operate(now, |transaction| transaction.rename((from, from_name), (to, to_name), now))
    }

    /// Writes `data` at `offset` of regular file `inode`; returns how many
    /// bytes were written (all of them, or an error).
    pub fn write(&mut self, inode: InodeNumber, offset: u64, data: &[u8], now: Timestamp) -> Result<usize, Error> {
        self.operate(now, |transaction| transaction.write_file(inode, offset, data, now))
    }

    /// Sets regular file `inode`'s size, freeing blocks past a smaller one.
    pub fn truncate(&mut self, inode: InodeNumber, size: u64, now: Timestamp) -> Result<(), Error> {
        self.operate(now, |transaction| transaction.truncate_file(inode, size, now))
    }

    /// Changes `inode`'s permissions, owner or times.
    pub fn set_attributes(
        &mut self,
        inode: InodeNumber,
        changes: AttributeChanges,
        now: Timestamp,
    ) -> Result<(), Error> {
        self.operate(now, |transaction| {
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

    /// Runs one operation in a transaction and commits what it changed.
    /// With a journal, a freed block is not reused before the transaction
    /// that freed it commits; an operation short of space for that reason
    /// commits the running transaction and runs again.
    fn operate<T>(
        &mut self,
        now: Timestamp,
        operation: impl Fn(&mut Transaction<'_, D>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match self.try_operate(now, &operation) {
            Err(Error::NoSpace) if self.journal.as_ref().is_some_and(|journal| !journal.freed().is_empty()) => {
                self.sync()?;
                self.try_operate(now, &operation)
            }
            result => result,
        }
    }

    fn try_operate<T>(
        &mut self,
        now: Timestamp,
        operation: &impl Fn(&mut Transaction<'_, D>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.require_writable()?;
        let mut transaction = Transaction::new(&self.disk, &self.superblock, &self.groups);
        if let Some(journal) = &self.journal {
            transaction = transaction.journaled(journal.freed());
        }
        let value = operation(&mut transaction)?;
        let changes = transaction.finish()?;
        self.check_fits(&changes)?;
        self.commit(changes, now)?;
        Ok(value)
    }
}

fn creation(owner: Owner, now: Timestamp) -> Creation {
    Creation { uid: owner.uid, gid: owner.gid, now }
}
