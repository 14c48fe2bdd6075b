//! The journal as ext4 drives it: open a clean journal, gather operations
//! into the running transaction, commit, checkpoint, close.
//!
//! State on disk: while the journal is in use, `s_start` and `s_sequence`
//! name the oldest transaction not yet checkpointed (the tail; when all
//! are home, the head and the next ID), so a crash replays exactly the
//! committed, un-checkpointed transactions. The superblock is written
//! non-empty before the first commit block, and empty again by
//! [`Journal::close`]. The log is circular: a transaction that does not
//! fit before the tail forces a checkpoint first. One transaction may
//! take at most a quarter of the log (the kernel's
//! `j_max_transaction_buffers`). Ordered mode is the caller's: data blocks
//! are written and flushed before [`Journal::commit`].
//! **Must never** reuse log blocks still needed for recovery, nor commit a
//! transaction while one of its handles is open.

use crate::error::{JournalError, SuperblockError};
use crate::format::commit_block::CommitTime;
use crate::format::features::Features;
use crate::format::superblock::{JournalSuperblock, SuperblockVersion};
use crate::log_context::{LoadError, LogContext};
use crate::storage::{FileSystemBlocks, JournalArea};
use crate::writer::checkpoint_list::CheckpointList;
use crate::writer::log_writer::{log_blocks_needed, write_transaction};
use crate::writer::transaction::{TransactionBuilder, TransactionHandle};

/// Whether the on-disk superblock says the journal is in use.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnDisk {
    /// `s_start == 0`: nothing to recover.
    Empty,
    /// `s_start` names the tail.
    InUse,
}

/// Whether a commit had to checkpoint to make room.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Room {
    /// The transaction fitted in the free part of the log.
    Free,
    /// Earlier transactions were checkpointed first.
    MadeByCheckpoint,
}

/// A transaction now durable in the log.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CommittedTransaction {
    /// Its ID.
    pub sequence: u32,
    /// Its first log position.
    pub log_start: u32,
    /// How many log blocks it took (revoke, descriptor, data, commit).
    pub log_blocks: u32,
    /// Whether a checkpoint ran first.
    pub room: Room,
}

/// An open journal.
pub struct Journal<A: JournalArea> {
    area: A,
    context: LogContext,
    on_disk: OnDisk,
    head: u32,
    tail: u32,
    tail_sequence: u32,
    next_sequence: u32,
    last_commit_time: CommitTime,
    running: Option<TransactionBuilder>,
    checkpoints: CheckpointList,
}

/// The running transaction `handle` belongs to.
fn joined<'a>(
    running: &'a mut Option<TransactionBuilder>,
    handle: &TransactionHandle,
) -> Result<&'a mut TransactionBuilder, JournalError> {
    match running.as_mut() {
        Some(running) if running.sequence() == handle.sequence() => Ok(running),
        _ => Err(JournalError::StaleHandle),
    }
}

impl From<LoadError> for JournalError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::Superblock(error) => JournalError::Superblock(error),
            LoadError::Io(error) => JournalError::Io(error),
        }
    }
}

impl<A: JournalArea> Journal<A> {
    /// Opens the clean journal in `area` with the features it has.
    pub fn open(area: A) -> Result<Journal<A>, JournalError> {
        Journal::open_with_features(area, Features::default())
    }

    /// Opens the clean journal in `area`, turning on `wanted` features
    /// (ext4 asks for checksum v3 with `metadata_csum` and 64BIT on 64-bit
    /// file systems; a version-1 superblock can hold none). Fails with
    /// [`JournalError::NeedsRecovery`] if the log is not empty.
    pub fn open_with_features(area: A, wanted: Features) -> Result<Journal<A>, JournalError> {
        let mut context = LogContext::load(&area)?;
        if context.superblock.start != 0 {
            return Err(JournalError::NeedsRecovery);
        }
        let version_1 = context.superblock.version == SuperblockVersion::Version1;
        if version_1 && wanted != Features::default() {
            return Err(JournalError::Superblock(
                SuperblockError::UnsupportedFeatures(wanted),
            ));
        }
        let changed = context.superblock.with_features(wanted);
        if changed.features != context.superblock.features {
            let checked = JournalSuperblock::decode(&changed.encode())?;
            context.write_superblock(&area, &checked)?;
            context = LogContext::from_superblock(checked, context.geometry);
        }
        let first = context.geometry.first();
        let next_sequence = context.superblock.sequence.wrapping_add(1);
        Ok(Journal {
            area,
            context,
            on_disk: OnDisk::Empty,
            head: first,
            tail: first,
            tail_sequence: next_sequence,
            next_sequence,
            last_commit_time: CommitTime::default(),
            running: None,
            checkpoints: CheckpointList::default(),
        })
    }

    /// The features in use.
    pub fn features(&self) -> Features {
        self.context.superblock.features
    }

    /// The ID the next committed transaction gets.
    pub fn next_sequence(&self) -> u32 {
        self.next_sequence
    }

    /// The running transaction, if an operation has begun one.
    pub fn running(&self) -> Option<&TransactionBuilder> {
        self.running.as_ref()
    }

    /// Log blocks not holding un-checkpointed transactions.
    pub fn free_blocks(&self) -> u32 {
        self.context.geometry.capacity() - self.context.geometry.distance(self.tail, self.head)
    }

    /// Blocks committed but not yet written home.
    pub fn awaiting_checkpoint(&self) -> usize {
        self.checkpoints.len()
    }

    /// The largest number of log blocks one transaction may take.
    pub fn max_transaction_blocks(&self) -> u64 {
        u64::from(self.context.geometry.capacity() / 4)
    }

    /// Joins the running transaction (starting one if none runs).
    pub fn begin(&mut self) -> TransactionHandle {
        let sequence = self.next_sequence;
        self.running
            .get_or_insert_with(|| TransactionBuilder::new(sequence))
            .join()
    }

    /// Logs `data` as the new contents of file-system block `fs_block`.
    pub fn write_block(
        &mut self,
        handle: &TransactionHandle,
        fs_block: u64,
        data: &[u8],
    ) -> Result<(), JournalError> {
        let expected = self.context.block_size;
        if data.len() != expected {
            return Err(JournalError::WrongLength {
                expected: expected as u32,
                actual: data.len(),
            });
        }
        if fs_block > self.context.layout.max_block() {
            return Err(JournalError::BlockNumberTooLarge(fs_block));
        }
        let limit = self.max_transaction_blocks();
        let context = &self.context;
        let running = joined(&mut self.running, handle)?;
        let added = usize::from(!running.contains(fs_block));
        if log_blocks_needed(
            context,
            running.block_count() + added,
            running.revoke_count(),
        ) > limit
        {
            return Err(JournalError::TransactionFull);
        }
        running.log(fs_block, data);
        Ok(())
    }

    /// Records that `fs_block` was freed: earlier logged copies must not
    /// be replayed (nor checkpointed) over whatever it holds next.
    pub fn revoke_block(
        &mut self,
        handle: &TransactionHandle,
        fs_block: u64,
    ) -> Result<(), JournalError> {
        if fs_block > self.context.layout.max_block() {
            return Err(JournalError::BlockNumberTooLarge(fs_block));
        }
        let limit = self.max_transaction_blocks();
        let context = &self.context;
        let running = joined(&mut self.running, handle)?;
        if log_blocks_needed(context, running.block_count(), running.revoke_count() + 1) > limit {
            return Err(JournalError::TransactionFull);
        }
        running.revoke(fs_block);
        Ok(())
    }

    /// Ends an operation's membership in the running transaction.
    pub fn end(&mut self, handle: TransactionHandle) -> Result<(), JournalError> {
        joined(&mut self.running, &handle)?.leave();
        Ok(())
    }

    /// Commits the running transaction at `time`; `Ok(None)` if nothing
    /// runs or it is empty. Checkpoints first when the log is too full.
    pub fn commit<F: FileSystemBlocks>(
        &mut self,
        fs: &F,
        time: CommitTime,
    ) -> Result<Option<CommittedTransaction>, JournalError> {
        let Some(running) = self.running.take() else {
            return Ok(None);
        };
        if running.open_handles() > 0 {
            let open = running.open_handles();
            self.running = Some(running);
            return Err(JournalError::HandlesStillOpen(open));
        }
        if running.is_empty() {
            return Ok(None);
        }
        let result = self.commit_running(fs, &running, time);
        if result.is_err() {
            self.running = Some(running);
        }
        result.map(Some)
    }

    fn commit_running<F: FileSystemBlocks>(
        &mut self,
        fs: &F,
        running: &TransactionBuilder,
        time: CommitTime,
    ) -> Result<CommittedTransaction, JournalError> {
        let needed =
            log_blocks_needed(&self.context, running.block_count(), running.revoke_count());
        let room = if needed + 1 > u64::from(self.free_blocks()) {
            self.checkpoint(fs)?;
            Room::MadeByCheckpoint
        } else {
            Room::Free
        };
        if running.revoke_count() > 0 && !self.context.superblock.features.has_revoke() {
            let revoke = Features {
                incompat: Features::INCOMPAT_REVOKE,
                ..Features::default()
            };
            let changed = self.context.superblock.with_features(revoke);
            self.context = LogContext::from_superblock(changed, self.context.geometry);
            self.write_tail()?;
        } else if self.on_disk == OnDisk::Empty {
            self.write_tail()?;
        }
        let time = time.max(self.last_commit_time);
        let written = write_transaction(&self.area, &self.context, running, self.head, time)?;
        let committed = CommittedTransaction {
            sequence: running.sequence(),
            log_start: self.head,
            log_blocks: written.log_blocks,
            room,
        };
        self.checkpoints.add(&written);
        self.head = written.next_position;
        self.next_sequence = self.next_sequence.wrapping_add(1);
        self.last_commit_time = time;
        Ok(committed)
    }

    /// Writes the tail into the superblock: the log is in use from there.
    fn write_tail(&mut self) -> Result<(), JournalError> {
        let mut superblock = self.context.superblock.clone();
        superblock.start = self.tail;
        superblock.sequence = self.tail_sequence;
        self.context.write_superblock(&self.area, &superblock)?;
        self.context.superblock = superblock;
        self.on_disk = OnDisk::InUse;
        Ok(())
    }

    /// Writes every committed block home, flushes `fs`, and frees the
    /// whole log (the tail moves to the head).
    pub fn checkpoint<F: FileSystemBlocks>(&mut self, fs: &F) -> Result<(), JournalError> {
        self.checkpoints.write_home(&self.area, fs, &self.context)?;
        self.tail = self.head;
        self.tail_sequence = self.next_sequence;
        if self.on_disk == OnDisk::InUse {
            self.write_tail()?;
        }
        Ok(())
    }

    /// Checkpoints everything and marks the journal empty (`s_start = 0`),
    /// as a clean unmount does; gives the area back. A running
    /// transaction is dropped uncommitted.
    pub fn close<F: FileSystemBlocks>(mut self, fs: &F) -> Result<A, JournalError> {
        self.checkpoint(fs)?;
        let mut superblock = self.context.superblock.clone();
        superblock.start = 0;
        superblock.sequence = self.next_sequence;
        self.context.write_superblock(&self.area, &superblock)?;
        Ok(self.area)
    }
}
