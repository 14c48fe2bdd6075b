//! Pass 2: collect the revoke records of every transaction the scan
//! accepted (kernel `do_one_pass(PASS_REVOKE)` and `scan_revoke_records`).
//!
//! From here on a descriptor with a bad tail is an error
//! ([`RecoveryError::DescriptorChecksum`]); the scan only let it through
//! in transactions it then dropped. **Must never** write anything.

use crate::error::{Pass, RecoveryError};
use crate::format::revoke_block::RevokeRecords;
use crate::log_context::LogContext;
use crate::recovery::revoke_table::RevokeTable;
use crate::recovery::scan::LogEnd;
use crate::recovery::sequence::tid_at_or_after;
use crate::recovery::walker::{LogWalker, Record};
use crate::storage::JournalArea;

/// The revokes of transactions before `end.end_transaction`, and how many
/// records were read.
pub(crate) fn collect_revokes<A: JournalArea>(
    area: &A,
    context: &LogContext,
    end: &LogEnd,
) -> Result<(RevokeTable, u32), RecoveryError> {
    let mut walker = LogWalker::new(area, context);
    let mut table = RevokeTable::default();
    let mut records = 0u32;
    while !tid_at_or_after(walker.next_sequence(), end.end_transaction) {
        match walker.next_record()? {
            Record::End => break,
            Record::Descriptor => {
                check_descriptor(&walker, context)?;
                walker.skip(context.count_tags(walker.block()))?;
            }
            Record::Commit => walker.commit_accepted(),
            Record::Revoke => {
                let sequence = walker.next_sequence();
                let blocks = RevokeRecords::new(
                    walker.block(),
                    context.superblock.features.revoke_record_bytes(),
                    context.tail_bytes(),
                )
                .map_err(|error| RecoveryError::RevokeCountTooLarge {
                    sequence,
                    count: error.count,
                })?;
                for block in blocks {
                    table.revoke(block, sequence);
                    records = records.saturating_add(1);
                }
            }
        }
    }
    check_pass_end(Pass::Revoke, walker.next_sequence(), end)?;
    Ok((table, records))
}

/// A descriptor block outside the scan must have a valid tail.
pub(crate) fn check_descriptor<A: JournalArea>(
    walker: &LogWalker<'_, A>,
    context: &LogContext,
) -> Result<(), RecoveryError> {
    if context.checksummer.tail_is_valid(walker.block()) {
        return Ok(());
    }
    Err(RecoveryError::DescriptorChecksum {
        position: walker.record_position(),
    })
}

/// A pass must end where the scan did.
pub(crate) fn check_pass_end(pass: Pass, ended_at: u32, end: &LogEnd) -> Result<(), RecoveryError> {
    if ended_at == end.end_transaction {
        return Ok(());
    }
    Err(RecoveryError::PassesDisagree {
        pass,
        ended_at,
        expected: end.end_transaction,
    })
}
