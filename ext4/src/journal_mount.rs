//! Opening a journaled file system: replay a journal left in use, then
//! attach the journal every later change goes through.
//!
//! [`Ext4::open_with`] and [`Access::ReadWrite`], as the kernel's
//! `ext4_load_journal` and e2fsck do:
//! - `needs_recovery` set: [`jbd2::recover`] replays the committed
//!   transactions, then `RECOVER` is cleared (superblock rewritten with
//!   its checksum, flushed) and everything is read again. If recovery
//!   fails the open is refused with [`JournalFailure::Recovery`] and
//!   nothing is reset, as the kernel refuses the mount ("error loading
//!   journal"): e2fsck can still look at the log.
//! - `needs_recovery` clear but the log not empty: the log is stale and is
//!   discarded ([`jbd2::discard_log`], the kernel's `jbd2_journal_wipe`).
//! - a journal this crate cannot write (unsupported journal features such
//!   as fast commit, a damaged or external journal): mounted read-only,
//!   [`ReadOnlyReason::Journal`] naming why; if it also needs recovery,
//!   the open is refused instead (the log cannot be replayed).
//!
//! [`Access::ReadOnly`] and [`Ext4::open`] never write while opening (a
//! journal needing recovery is reported, as before journaling existed).
//! **Must never** write to a file system opened read-only, nor mount one
//! read-write whose journal still holds transactions.

use alloc::sync::Arc;

use crate::block_device::BlockDevice;
use crate::error::Error;
use crate::features::{compatible, Mount, ReadOnlyReason};
use crate::filesystem::Ext4;
use crate::inode::InodeNumber;
use crate::journal_area::{read_journal_superblock, JournalBlocks};
use crate::journal_failure::JournalFailure;
use crate::journaling::{CommitPolicy, Journaling};
use crate::recovery_flag::{mark_recovery, RecoveryMark};
use crate::superblock::Superblock;

/// Whether an open may write.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    /// Never write, not even to replay the journal.
    ReadOnly,
    /// Replay the journal if needed and allow changes.
    ReadWrite,
}

impl<D: BlockDevice> Ext4<D> {
    /// Opens the file system on `device` for `access`, journaling changes
    /// with `policy` (see the module documentation for recovery).
    pub fn open_with(device: D, access: Access, policy: CommitPolicy) -> Result<Self, Error> {
        let file_system = Self::read_device(Arc::new(device))?;
        match access {
            Access::ReadOnly => Ok(file_system.read_only(ReadOnlyReason::Requested)),
            Access::ReadWrite => file_system.recover_then_attach(policy),
        }
    }

    /// The commit policy, if changes go through a journal.
    pub fn commit_policy(&self) -> Option<CommitPolicy> {
        self.journal.as_ref().map(Journaling::policy)
    }

    fn read_only(mut self, reason: ReadOnlyReason) -> Self {
        if self.mount == Mount::ReadWrite {
            self.mount = Mount::ReadOnly(reason);
        }
        self
    }

    fn has_journal(&self) -> bool {
        self.superblock.compatible_features & compatible::HAS_JOURNAL != 0
    }

    fn recover_then_attach(self, policy: CommitPolicy) -> Result<Self, Error> {
        let replayable = matches!(self.mount, Mount::ReadWrite | Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
        if !replayable {
            return Ok(self);
        }
        if !self.has_journal() {
            if self.superblock.needs_recovery() {
                return Err(Error::Journal(JournalFailure::NotInternal));
            }
            return Ok(self);
        }
        if !self.superblock.needs_recovery() {
            self.discard_stale_log();
            return Ok(self.attach_journal(policy));
        }
        let area = self.journal_area().map_err(Error::Journal)?;
        jbd2::recover(&area, self.disk.home()).map_err(|error| Error::Journal(JournalFailure::Recovery(error)))?;
        mark_recovery(self.disk.home(), RecoveryMark::NotNeeded)?;
        drop(area);
        let device = self.disk.into_shared_device();
        Ok(Self::read_device(device)?.attach_journal(policy))
    }

    /// Empties a log left in use while `RECOVER` is clear (the kernel's
    /// journal wipe); a journal that cannot be read is left for
    /// [`Ext4::attach_journal`] to report.
    fn discard_stale_log(&self) {
        let Ok(area) = self.journal_area() else { return };
        if read_journal_superblock(&area).is_ok_and(|superblock| superblock.start != 0) {
            let _ = jbd2::discard_log(&area);
        }
    }

    /// Attaches the journal to a file system that may be written: read-only
    /// instead if the journal cannot be used or still holds a log.
    pub(crate) fn attach_journal(mut self, policy: CommitPolicy) -> Self {
        if self.mount != Mount::ReadWrite || !self.has_journal() {
            return self;
        }
        match self.load_journal(policy) {
            Ok(journal) => self.journal = Some(journal),
            Err(None) => self.mount = Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery),
            Err(Some(failure)) => self.mount = Mount::ReadOnly(ReadOnlyReason::Journal(failure)),
        }
        self
    }

    /// The journal, idle; `Err(None)` if its log is not empty.
    fn load_journal(&self, policy: CommitPolicy) -> Result<Journaling<D>, Option<JournalFailure>> {
        let area = self.journal_area()?;
        let journal_superblock = read_journal_superblock(&area)?;
        if journal_superblock.start != 0 {
            return Err(None);
        }
        let wanted = match journal_superblock.version {
            jbd2::format::superblock::SuperblockVersion::Version1 => jbd2::Features::default(),
            jbd2::format::superblock::SuperblockVersion::Version2 => wanted_features(&self.superblock),
        };
        let capacity = journal_superblock.max_length.saturating_sub(journal_superblock.first);
        Ok(Journaling::new(area, policy, wanted, capacity))
    }

    /// The journal inode's blocks.
    fn journal_area(&self) -> Result<JournalBlocks<D>, JournalFailure> {
        if self.superblock.journal_inode == 0 {
            return Err(JournalFailure::NotInternal);
        }
        let inode = self.inode(InodeNumber(self.superblock.journal_inode)).map_err(JournalFailure::from_error)?;
        JournalBlocks::map(&self.disk, &self.superblock, &inode)
    }
}

/// The journal features ext4 turns on, as the kernel's
/// `set_journal_csum_feature_set`: checksum v3 with `metadata_csum`, and
/// 64-bit block numbers on a 64-bit file system.
fn wanted_features(superblock: &Superblock) -> jbd2::Features {
    let mut incompat = 0;
    if matches!(superblock.checksums, crate::superblock::Checksums::Crc32c { .. }) {
        incompat |= jbd2::Features::INCOMPAT_CSUM_V3;
    }
    if superblock.has_64bit() {
        incompat |= jbd2::Features::INCOMPAT_64BIT;
    }
    jbd2::Features { incompat, ..jbd2::Features::default() }
}
