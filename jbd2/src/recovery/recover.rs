//! Recovery from start to finish, and the report it gives.
//!
//! [`recover`] is the kernel's `jbd2_journal_recover` followed by what
//! e2fsck writes: the three passes, a flush of the file system, then the
//! journal superblock with `s_start = 0` (log empty), `s_sequence` one past
//! the first transaction not replayed (the kernel's
//! `++info.end_transaction`, so no stale commit block can match) and
//! `s_errno = 0` (the old value is in the report for the file system to
//! record). On an error nothing is reset, as when the kernel refuses the
//! mount; [`discard_log`] is what e2fsck then does. Running [`recover`]
//! again finds `s_start = 0` and does nothing: recovery is idempotent.
//! **Must never** reset the superblock before the replayed blocks are
//! flushed.

use crate::error::RecoveryError;
use crate::log_context::{LoadError, LogContext};
use crate::recovery::replay::replay;
use crate::recovery::revoke_pass::collect_revokes;
use crate::recovery::scan::scan;
use crate::storage::{FileSystemBlocks, JournalArea};

/// What recovery found and did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RecoveryReport {
    /// The first transaction of the log (`s_sequence` before).
    pub first_transaction: u32,
    /// The first transaction not replayed: where the log ended.
    pub end_transaction: u32,
    /// `s_sequence` after recovery.
    pub next_sequence: u32,
    /// Committed transactions replayed.
    pub transactions_replayed: u32,
    /// Blocks written to the file system.
    pub blocks_replayed: u32,
    /// Revoke records read.
    pub revoke_records: u32,
    /// Logged blocks not replayed because a revoke covered them.
    pub revoked_blocks_skipped: u32,
    /// A transaction whose commit checksum failed, ending the log there
    /// (e2fsck marks the file system as having errors).
    pub failed_commit: Option<u32>,
    /// `s_errno` as found (now cleared): an error the file system had
    /// recorded in its journal.
    pub journal_errno: i32,
}

impl From<LoadError> for RecoveryError {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::Superblock(error) => RecoveryError::Superblock(error),
            LoadError::Io(error) => RecoveryError::Io(error),
        }
    }
}

/// Replays the committed transactions of the journal in `area` into `fs`
/// and marks the journal empty.
pub fn recover<A: JournalArea, F: FileSystemBlocks>(
    area: &A,
    fs: &F,
) -> Result<RecoveryReport, RecoveryError> {
    let context = LogContext::load(area)?;
    let superblock = &context.superblock;
    let mut report = RecoveryReport {
        first_transaction: superblock.sequence,
        end_transaction: superblock.sequence,
        next_sequence: superblock.sequence,
        journal_errno: superblock.errno,
        ..RecoveryReport::default()
    };
    if superblock.start == 0 {
        return Ok(report);
    }
    let end = scan(area, &context)?;
    let (revokes, revoke_records) = collect_revokes(area, &context, &end)?;
    let replayed = replay(area, fs, &context, &end, &revokes);
    fs.flush()?;
    let counts = replayed?;
    let next_sequence = end.end_transaction.wrapping_add(1);
    let mut reset = context.superblock.clone();
    reset.start = 0;
    reset.sequence = next_sequence;
    reset.errno = 0;
    context.write_superblock(area, &reset)?;
    report.end_transaction = end.end_transaction;
    report.next_sequence = next_sequence;
    report.transactions_replayed = counts.transactions;
    report.blocks_replayed = counts.blocks_written;
    report.revoke_records = revoke_records;
    report.revoked_blocks_skipped = counts.revoked_skipped;
    report.failed_commit = end.failed_commit;
    Ok(report)
}

/// Marks the log empty without replaying it, keeping `s_sequence`: what
/// e2fsck does after a failed recovery (whatever replay already wrote
/// stays written), and what the kernel's `jbd2_journal_wipe` does when
/// ext4's `needs_recovery` flag is clear but `s_start` is not 0. Whether
/// to [`recover`] or discard is the file system's decision.
pub fn discard_log<A: JournalArea>(area: &A) -> Result<(), RecoveryError> {
    let context = LogContext::load(area)?;
    let mut reset = context.superblock.clone();
    reset.start = 0;
    Ok(context.write_superblock(area, &reset)?)
}
