//! Pass 3: write every logged block of the accepted transactions to its
//! home location, in log order (kernel `do_one_pass(PASS_REPLAY)`).
//!
//! Per tag, in the kernel's order: read the logged copy (a failed read is
//! counted and skipped); skip it if revoked by its own or a later
//! transaction; skip it if its v2/v3 tag checksum fails (counted: Linux
//! replays the rest, then reports EFSBADCRC); restore the magic of an
//! escaped block; write it. Later copies of a block overwrite earlier
//! ones, so the result is each block's last unrevoked copy. **Must
//! never** write a block the revoke table covers.

use alloc::vec::Vec;

use crate::error::{Pass, RecoveryError};
use crate::format::escape::unescape;
use crate::format::tag::{BlockTag, TAG_ESCAPED};
use crate::log_context::LogContext;
use crate::recovery::revoke_pass::{check_descriptor, check_pass_end};
use crate::recovery::revoke_table::RevokeTable;
use crate::recovery::scan::LogEnd;
use crate::recovery::sequence::tid_at_or_after;
use crate::recovery::walker::{DataBlock, LogWalker, Record};
use crate::storage::{FileSystemBlocks, JournalArea};

/// What replay did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct ReplayCounts {
    pub transactions: u32,
    pub blocks_written: u32,
    pub revoked_skipped: u32,
    pub bad_checksums: u32,
    pub unreadable: u32,
}

/// Replays the transactions before `end.end_transaction` into `fs`.
pub(crate) fn replay<A: JournalArea, F: FileSystemBlocks>(
    area: &A,
    fs: &F,
    context: &LogContext,
    end: &LogEnd,
    revokes: &RevokeTable,
) -> Result<ReplayCounts, RecoveryError> {
    let mut walker = LogWalker::new(area, context);
    let mut counts = ReplayCounts::default();
    let mut data = context.block_buffer();
    while !tid_at_or_after(walker.next_sequence(), end.end_transaction) {
        match walker.next_record()? {
            Record::End => break,
            Record::Descriptor => {
                check_descriptor(&walker, context)?;
                let tags: Vec<BlockTag> = context.tags(walker.block()).collect();
                for tag in tags {
                    replay_one(
                        &mut walker,
                        fs,
                        context,
                        revokes,
                        &tag,
                        &mut data,
                        &mut counts,
                    )?;
                }
            }
            Record::Commit => {
                counts.transactions = counts.transactions.saturating_add(1);
                walker.commit_accepted();
            }
            Record::Revoke => {}
        }
    }
    if counts.bad_checksums > 0 || counts.unreadable > 0 {
        return Err(RecoveryError::DataBlocksSkipped {
            bad_checksums: counts.bad_checksums,
            unreadable: counts.unreadable,
        });
    }
    check_pass_end(Pass::Replay, walker.next_sequence(), end)?;
    Ok(counts)
}

/// Replays the data block that `tag` describes.
fn replay_one<A: JournalArea, F: FileSystemBlocks>(
    walker: &mut LogWalker<'_, A>,
    fs: &F,
    context: &LogContext,
    revokes: &RevokeTable,
    tag: &BlockTag,
    data: &mut [u8],
    counts: &mut ReplayCounts,
) -> Result<(), RecoveryError> {
    if walker.read_data(data)? == DataBlock::Unreadable {
        counts.unreadable = counts.unreadable.saturating_add(1);
        return Ok(());
    }
    let sequence = walker.next_sequence();
    if revokes.is_revoked(tag.fs_block, sequence) {
        counts.revoked_skipped = counts.revoked_skipped.saturating_add(1);
        return Ok(());
    }
    if !context
        .checksummer
        .data_is_valid(sequence, data, tag.checksum)
    {
        counts.bad_checksums = counts.bad_checksums.saturating_add(1);
        return Ok(());
    }
    if tag.has(TAG_ESCAPED) {
        unescape(data);
    }
    fs.write_fs_block(tag.fs_block, data)?;
    counts.blocks_written = counts.blocks_written.saturating_add(1);
    Ok(())
}
