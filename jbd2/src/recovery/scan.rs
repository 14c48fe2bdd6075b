//! Pass 1: find the end of the log (kernel `do_one_pass(PASS_SCAN)`).
//!
//! The log is every transaction from `s_sequence` at `s_start` whose
//! commit block is found and valid. The kernel's rules, in its order:
//! - a descriptor or revoke block with a bad v2/v3 tail marks the
//!   transaction suspect; at its commit block, a commit time older than
//!   the previous commit means stale blocks from an earlier use of the
//!   log (the log ends there, silently), anything else is corruption
//!   ([`RecoveryError::TransactionChecksum`]);
//! - a bad commit checksum (v1 CRC or v2/v3 crc32c) ends the log before
//!   that transaction, again silently when its time goes backwards; the
//!   transaction is reported as `failed_commit` unless ASYNC_COMMIT;
//! - with v1 checksums, the CRC runs over every descriptor and data block.
//!
//! The kernel's `break` out of its `switch` goes on with the next block
//! without accepting the commit; [`scan`] does the same (`continue`).
//! **Must never** replay or write anything.

use crate::crc32_be::crc32_be_update;
use crate::error::RecoveryError;
use crate::format::commit_block::{CommitFields, CHECKSUM_SIZE_CRC32, CHECKSUM_TYPE_CRC32};
use crate::log_context::LogContext;
use crate::recovery::walker::{DataBlock, LogWalker, Record};
use crate::storage::JournalArea;

/// Where the log ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LogEnd {
    /// The first transaction not to replay.
    pub end_transaction: u32,
    /// The block after the last valid commit block.
    pub head_block: u64,
    /// A transaction whose commit checksum failed (kernel
    /// `j_failed_commit`).
    pub failed_commit: Option<u32>,
}

/// What the scan carries from block to block.
struct ScanState {
    /// 0 while unknown: the kernel's own convention for `end_transaction`.
    end_transaction: u32,
    end_head_block: u64,
    head_block: u64,
    failed_commit: Option<u32>,
    need_check_commit_time: bool,
    last_commit_time: u64,
    transaction_crc: u32,
}

/// What to do after a commit block.
enum AfterCommit {
    Accept,
    Ignore,
    EndOfLog,
}

/// Finds the end of the log of `area`.
pub(crate) fn scan<A: JournalArea>(
    area: &A,
    context: &LogContext,
) -> Result<LogEnd, RecoveryError> {
    let mut walker = LogWalker::new(area, context);
    let mut state = ScanState {
        end_transaction: 0,
        end_head_block: 0,
        head_block: walker.next_position(),
        failed_commit: None,
        need_check_commit_time: false,
        last_commit_time: 0,
        transaction_crc: !0,
    };
    loop {
        match walker.next_record()? {
            Record::End => break,
            Record::Descriptor => scan_descriptor(&mut walker, context, &mut state)?,
            Record::Revoke => {
                if !context.checksummer.tail_is_valid(walker.block()) {
                    state.need_check_commit_time = true;
                }
            }
            Record::Commit => match check_commit(&walker, context, &mut state)? {
                AfterCommit::Accept => {
                    state.head_block = walker.next_position();
                    walker.commit_accepted();
                }
                AfterCommit::Ignore => {}
                AfterCommit::EndOfLog => break,
            },
        }
    }
    if state.end_transaction == 0 {
        state.end_transaction = walker.next_sequence();
    }
    if state.end_head_block == 0 {
        state.end_head_block = state.head_block;
    }
    Ok(LogEnd {
        end_transaction: state.end_transaction,
        head_block: state.end_head_block,
        failed_commit: state.failed_commit,
    })
}

/// A descriptor block: check its tail, then run the v1 CRC over it and its
/// data blocks or step over them.
fn scan_descriptor<A: JournalArea>(
    walker: &mut LogWalker<'_, A>,
    context: &LogContext,
    state: &mut ScanState,
) -> Result<(), RecoveryError> {
    if !context.checksummer.tail_is_valid(walker.block()) {
        state.need_check_commit_time = true;
    }
    let count = context.count_tags(walker.block());
    let v1_crc = context.superblock.features.has_transaction_crc32();
    if !(v1_crc && !state.need_check_commit_time && state.end_transaction == 0) {
        return walker.skip(count);
    }
    // Kernel `calc_chksums`: a read error stops the sum, not the scan.
    state.transaction_crc = crc32_be_update(state.transaction_crc, walker.block());
    let mut data = context.block_buffer();
    for _ in 0..count {
        if walker.read_data(&mut data)? == DataBlock::Unreadable {
            break;
        }
        state.transaction_crc = crc32_be_update(state.transaction_crc, &data);
    }
    Ok(())
}

/// A commit block: the kernel's checks in its order.
fn check_commit<A: JournalArea>(
    walker: &LogWalker<'_, A>,
    context: &LogContext,
    state: &mut ScanState,
) -> Result<AfterCommit, RecoveryError> {
    let fields = CommitFields::decode(walker.block());
    let commit_time = fields.time.seconds;
    if state.need_check_commit_time {
        if commit_time >= state.last_commit_time {
            return Err(RecoveryError::TransactionChecksum {
                sequence: walker.next_sequence(),
            });
        }
        return Ok(AfterCommit::EndOfLog);
    }
    let mut checksum_failed = false;
    if context.superblock.features.has_transaction_crc32() {
        if state.end_transaction != 0 {
            state.failed_commit = Some(state.end_transaction);
            return Ok(AfterCommit::Ignore);
        }
        let found = fields.first_checksum;
        let crc_matches = state.transaction_crc == found
            && fields.checksum_type == CHECKSUM_TYPE_CRC32
            && fields.checksum_size == CHECKSUM_SIZE_CRC32;
        let unused = fields.checksum_type == 0 && fields.checksum_size == 0 && found == 0;
        checksum_failed = !(crc_matches || unused);
        if !checksum_failed {
            state.transaction_crc = !0;
        }
    }
    if checksum_failed || !context.checksummer.commit_is_valid(walker.block()) {
        if commit_time < state.last_commit_time {
            return Ok(AfterCommit::EndOfLog);
        }
        state.end_transaction = walker.next_sequence();
        state.end_head_block = state.head_block;
        if !context.superblock.features.has_async_commit() {
            state.failed_commit = Some(walker.next_sequence());
            return Ok(AfterCommit::Ignore);
        }
    }
    state.last_commit_time = commit_time;
    Ok(AfterCommit::Accept)
}
