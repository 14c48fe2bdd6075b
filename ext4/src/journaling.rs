//! The ext4 side of the jbd2 journal, in ordered mode: every operation's
//! file data goes in place first, its metadata joins the running jbd2
//! transaction, and blocks reach their home locations only at checkpoint.
//!
//! States: **idle** (the log is empty on disk, `RECOVER` clear; the area
//! waits) and **active** (`RECOVER` set and durable, the jbd2 journal
//! open). An operation on an idle journal writes its data, sets `RECOVER`
//! (write, flush), opens the journal and logs its metadata. A commit
//! writes descriptors and copies, flushes (making the data written in
//! place durable too, as ordered mode needs), writes the commit block and
//! flushes again (jbd2's `write_transaction`). Quiescing commits,
//! checkpoints everything home, empties the log (`s_start = 0`, flushed)
//! and only then clears `RECOVER`: after every operation under
//! [`CommitPolicy::EveryOperation`], at unmount under
//! [`CommitPolicy::Grouped`].
//!
//! A freed block that was logged since the last full checkpoint is
//! revoked in the same transaction, so replay never writes its old
//! metadata over what it holds next; freed blocks stay unavailable to the
//! allocator until the freeing transaction commits ([`FreedBlocks`]).
//! **Must never** write a metadata block home before the commit block of
//! its transaction is durable, nor let one operation's blocks straddle two
//! transactions.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockWrites;
use crate::disk::Disk;
use crate::error::{Error, Structure};
use crate::freed_blocks::FreedBlocks;
use crate::journal_area::JournalBlocks;
use crate::journal_failure::JournalFailure;
use crate::recovery_flag::{mark_recovery, RecoveryMark};
use crate::timestamp::Timestamp;

/// When the running transaction commits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CommitPolicy {
    /// Each operation commits its own transaction and checkpoints it:
    /// every call is durable when it returns and the disk never needs
    /// recovery between calls (simple; many flushes per call).
    EveryOperation,
    /// Operations join one running transaction, committed by
    /// [`crate::Ext4::fsync`], [`crate::Ext4::sync`], unmount, or when the
    /// next operation would not fit in it (Linux's behaviour, minus the
    /// five-second timer, which belongs to the caller).
    Grouped,
}

/// Whether a commit wrote anything.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Committed {
    /// A transaction is now durable (its commit block flushed).
    Transaction,
    /// Nothing was running.
    Nothing,
}

/// The journal's life between open and unmount.
enum JournalState<D: BlockDevice> {
    /// The log is empty on disk and `RECOVER` is clear.
    Idle(JournalBlocks<D>),
    /// `RECOVER` is set; transactions may be in the log. Boxed: the
    /// journal is much larger than the other states.
    Active(alloc::boxed::Box<jbd2::Journal<JournalBlocks<D>>>),
    /// A failure consumed the journal: nothing more may be written.
    Lost,
}

/// The journal and what the file system remembers about its contents.
pub(crate) struct Journaling<D: BlockDevice> {
    state: JournalState<D>,
    policy: CommitPolicy,
    /// Features to turn on when opening (checksum v3, 64-bit tags).
    wanted: jbd2::Features,
    /// The largest transaction, in log blocks (a quarter of the log).
    limit: u64,
    /// Journaled images kept in memory before a checkpoint is forced.
    checkpoint_threshold: usize,
    block_size: u64,
    /// Blocks logged since the last full checkpoint: freeing one needs a revoke.
    logged: BTreeSet<u64>,
    freed: FreedBlocks,
    time: jbd2::CommitTime,
}

impl<D: BlockDevice> core::fmt::Debug for Journaling<D> {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = match self.state {
            JournalState::Idle(_) => "idle",
            JournalState::Active(_) => "active",
            JournalState::Lost => "lost",
        };
        write!(formatter, "Journaling({state}, {:?})", self.policy)
    }
}

impl<D: BlockDevice> Journaling<D> {
    /// An idle journal in `area`, whose log holds `capacity` blocks.
    pub(crate) fn new(area: JournalBlocks<D>, policy: CommitPolicy, wanted: jbd2::Features, capacity: u32) -> Self {
        let block_size = u64::from(jbd2::JournalArea::block_size(&area));
        Self {
            state: JournalState::Idle(area),
            policy,
            wanted,
            limit: u64::from(capacity / 4),
            checkpoint_threshold: (capacity as usize / 2).clamp(64, 4096),
            block_size,
            logged: BTreeSet::new(),
            freed: FreedBlocks::default(),
            time: jbd2::CommitTime::default(),
        }
    }

    /// The commit policy chosen at open.
    pub(crate) fn policy(&self) -> CommitPolicy {
        self.policy
    }

    /// Blocks the allocator must not hand out yet.
    pub(crate) fn freed(&self) -> &FreedBlocks {
        &self.freed
    }

    /// Log blocks `blocks` logged blocks and `revokes` revoke records take
    /// at most (jbd2 packs at least this many tags and records per block).
    fn log_blocks(&self, blocks: u64, revokes: u64) -> u64 {
        let tags_per_descriptor = (self.block_size.saturating_sub(32) / 32).max(1);
        let records_per_block = (self.block_size.saturating_sub(32) / 16).max(1);
        blocks + blocks.div_ceil(tags_per_descriptor) + revokes.div_ceil(records_per_block) + 2
    }

    /// The freed blocks of `writes` that must be revoked.
    fn revokes(&self, writes: &BlockWrites) -> Vec<u64> {
        let mut revokes = Vec::new();
        for &(first, count) in writes.released() {
            revokes.extend(self.logged.range(first..first.saturating_add(count)).copied());
        }
        revokes
    }

    /// Refuses, before anything is written, an operation no transaction
    /// could hold.
    pub(crate) fn check_fits(&self, writes: &BlockWrites) -> Result<(), Error> {
        let needed = self.log_blocks(writes.metadata().count() as u64, self.revokes(writes).len() as u64);
        if needed > self.limit {
            return Err(Error::Journal(JournalFailure::TransactionTooLarge { log_blocks: needed, limit: self.limit }));
        }
        Ok(())
    }

    /// Applies one finished operation: data in place, metadata and revokes
    /// into the running transaction, then whatever the policy asks.
    pub(crate) fn apply(&mut self, disk: &mut Disk<D>, writes: &BlockWrites, now: Timestamp) -> Result<(), Error> {
        let revokes = self.revokes(writes);
        self.make_room(disk, writes.metadata().count() as u64, revokes.len() as u64)?;
        for (block, bytes) in writes.data() {
            disk.write_blocks(block, bytes, Structure::Superblock)?;
            disk.forget(block, 1);
        }
        self.activate(disk)?;
        let JournalState::Active(journal) = &mut self.state else {
            return Err(Error::Journal(JournalFailure::Aborted));
        };
        let handle = journal.begin();
        for (block, bytes) in writes.metadata() {
            journal.write_block(&handle, block, bytes).map_err(writer)?;
            disk.remember(block, bytes);
            self.logged.insert(block);
        }
        for block in revokes {
            journal.revoke_block(&handle, block).map_err(writer)?;
            self.logged.remove(&block);
        }
        journal.end(handle).map_err(writer)?;
        for &(first, count) in writes.released() {
            disk.forget(first, count);
            self.freed.insert(first, count);
        }
        self.time = self.time.max(commit_time(now));
        match self.policy {
            CommitPolicy::EveryOperation => self.quiesce(disk),
            CommitPolicy::Grouped => Ok(()),
        }
    }

    /// Commits the running transaction first if this operation would not
    /// fit beside it.
    fn make_room(&mut self, disk: &mut Disk<D>, blocks: u64, revokes: u64) -> Result<(), Error> {
        let JournalState::Active(journal) = &self.state else { return Ok(()) };
        let Some(running) = journal.running() else { return Ok(()) };
        let total = self.log_blocks(running.block_count() as u64 + blocks, running.revoke_count() as u64 + revokes);
        if total > self.limit {
            self.commit(disk)?;
        }
        Ok(())
    }

    /// Sets `RECOVER` (durably) and opens the journal, if idle.
    fn activate(&mut self, disk: &Disk<D>) -> Result<(), Error> {
        if !matches!(self.state, JournalState::Idle(_)) {
            return Ok(());
        }
        mark_recovery(disk.home(), RecoveryMark::Needed)?;
        let JournalState::Idle(area) = core::mem::replace(&mut self.state, JournalState::Lost) else {
            return Err(Error::Journal(JournalFailure::Aborted));
        };
        let journal = jbd2::Journal::open_with_features(area, self.wanted).map_err(writer)?;
        self.state = JournalState::Active(alloc::boxed::Box::new(journal));
        Ok(())
    }

    /// Commits the running transaction (durable when this returns), and
    /// checkpoints when too many journaled images are held in memory.
    pub(crate) fn commit(&mut self, disk: &mut Disk<D>) -> Result<Committed, Error> {
        let journal = match &mut self.state {
            JournalState::Active(journal) => journal,
            JournalState::Idle(_) => return Ok(Committed::Nothing),
            JournalState::Lost => return Err(Error::Journal(JournalFailure::Aborted)),
        };
        let committed = journal.commit(disk.home(), self.time).map_err(writer)?;
        self.freed.clear();
        if disk.journaled_count() > self.checkpoint_threshold {
            journal.checkpoint(disk.home()).map_err(writer)?;
            disk.forget_all();
            self.logged.clear();
        }
        Ok(if committed.is_some() { Committed::Transaction } else { Committed::Nothing })
    }

    /// Commits, checkpoints everything home, empties the log and clears
    /// `RECOVER`: the disk is then clean and needs no recovery.
    pub(crate) fn quiesce(&mut self, disk: &mut Disk<D>) -> Result<(), Error> {
        if !matches!(self.state, JournalState::Active(_)) {
            return match self.state {
                JournalState::Lost => Err(Error::Journal(JournalFailure::Aborted)),
                _ => Ok(()),
            };
        }
        self.commit(disk)?;
        let JournalState::Active(journal) = core::mem::replace(&mut self.state, JournalState::Lost) else {
            return Err(Error::Journal(JournalFailure::Aborted));
        };
        let area = (*journal).close(disk.home()).map_err(writer)?;
        disk.forget_all();
        self.logged.clear();
        mark_recovery(disk.home(), RecoveryMark::NotNeeded)?;
        self.state = JournalState::Idle(area);
        Ok(())
    }
}

fn writer(error: jbd2::JournalError) -> Error {
    Error::Journal(JournalFailure::Writer(error))
}

/// An inode time as a commit block's time (times before 1970 as 0).
fn commit_time(now: Timestamp) -> jbd2::CommitTime {
    jbd2::CommitTime { seconds: u64::try_from(now.seconds).unwrap_or(0), nanoseconds: now.nanoseconds }
}
