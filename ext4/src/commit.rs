//! Where a finished operation's blocks go, and the calls that make
//! changes durable: [`Ext4::fsync`], [`Ext4::sync`], [`Ext4::checkpoint`]
//! and [`Ext4::unmount`].
//!
//! With a journal, `Ext4::commit` hands the blocks to the journal (data in
//! place, metadata logged; see `journaling`); without one (ext2-style
//! file systems) it writes data, then metadata, in place. A journal
//! failure after anything was written aborts the journal, as the kernel
//! does: the file system turns read-only ([`JournalFailure::Aborted`])
//! and what was committed stays recoverable. **Must never** return from
//! `fsync` or `sync` before everything done before the call is durable.

use crate::block_device::BlockDevice;
use crate::error::{Error, Structure};
use crate::features::{Mount, ReadOnlyReason};
use crate::filesystem::Ext4;
use crate::journal_failure::JournalFailure;
use crate::journaling::Committed;
use crate::timestamp::Timestamp;
use crate::transaction::Changes;

impl<D: BlockDevice> Ext4<D> {
    /// Makes every change made before this call durable, `inode`'s data
    /// and the metadata that reaches it (its inode, its directory entry,
    /// the bitmaps) included: the running transaction commits as a whole,
    /// as in Linux's ext4.
    pub fn fsync(&mut self, inode: crate::InodeNumber) -> Result<(), Error> {
        self.inode(inode)?;
        self.sync()
    }

    /// Makes every change made before this call durable: commits the
    /// running transaction (its commit block flushed) or, with nothing to
    /// commit, flushes the device.
    pub fn sync(&mut self) -> Result<(), Error> {
        self.require_writable()?;
        let committed = match self.journal.as_mut() {
            Some(journal) => journal.commit(&mut self.disk),
            None => Ok(Committed::Nothing),
        };
        match self.abort_on_failure(committed)? {
            Committed::Transaction => Ok(()),
            Committed::Nothing => self.disk.flush(),
        }
    }

    /// Commits, writes everything home and empties the journal, clearing
    /// `needs_recovery`: the disk is then clean, as after an unmount, and
    /// the file system stays open.
    pub fn checkpoint(&mut self) -> Result<(), Error> {
        self.require_writable()?;
        let quiesced = match self.journal.as_mut() {
            Some(journal) => journal.quiesce(&mut self.disk),
            None => Ok(()),
        };
        self.abort_on_failure(quiesced)?;
        self.disk.flush()
    }

    /// Leaves the disk clean ([`Ext4::checkpoint`]) and gives the device
    /// back. A read-only file system is given back untouched.
    pub fn unmount(mut self) -> Result<D, Error> {
        if self.mount == Mount::ReadWrite {
            self.checkpoint()?;
        }
        Ok(self.into_device())
    }

    pub(crate) fn require_writable(&self) -> Result<(), Error> {
        match self.mount {
            Mount::ReadWrite => Ok(()),
            Mount::ReadOnly(ReadOnlyReason::Journal(JournalFailure::Aborted)) => {
                Err(Error::Journal(JournalFailure::Aborted))
            }
            Mount::ReadOnly(_) => Err(Error::ReadOnly),
        }
    }

    /// Refuses, before anything is written, changes no journal
    /// transaction could hold.
    pub(crate) fn check_fits(&self, changes: &Changes) -> Result<(), Error> {
        match &self.journal {
            Some(journal) => journal.check_fits(&changes.writes),
            None => Ok(()),
        }
    }

    /// The one place blocks reach the disk (see the module documentation);
    /// then the in-memory descriptors and superblock follow.
    pub(crate) fn commit(&mut self, changes: Changes, now: Timestamp) -> Result<(), Error> {
        let applied = match self.journal.as_mut() {
            Some(journal) => journal.apply(&mut self.disk, &changes.writes, now),
            None => self.write_in_place(&changes),
        };
        for (group, descriptor, bytes) in &changes.groups {
            self.groups.replace(*group, *descriptor, bytes);
        }
        self.superblock = changes.superblock;
        self.abort_on_failure(applied)
    }

    fn write_in_place(&self, changes: &Changes) -> Result<(), Error> {
        for (block, bytes) in changes.writes.in_order() {
            self.disk.write_blocks(block, bytes, Structure::Superblock)?;
        }
        Ok(())
    }

    /// Passes `result` on; a failure makes the file system read-only for
    /// good (the journal's state no longer matches memory).
    fn abort_on_failure<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if result.is_err() && self.journal.is_some() {
            self.mount = Mount::ReadOnly(ReadOnlyReason::Journal(JournalFailure::Aborted));
        }
        result
    }
}
