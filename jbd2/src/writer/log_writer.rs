//! Writing one transaction into the log, in the kernel's commit order:
//! revoke blocks, then descriptor blocks each followed by the copies of
//! the data blocks its tags name (escaped when they start with the
//! magic), a flush, the commit block, and a flush again.
//!
//! Tag checksums cover the copy as logged (escaped), as the kernel's
//! `jbd2_block_tag_csum_set` does and recovery checks. With the v1
//! `CHECKSUM` feature the commit block carries the big-endian CRC-32 of
//! every descriptor and data block, in log order. **Must never** write the
//! commit block before the flush that makes the rest durable, and never
//! hold more than one data block at a time.

use alloc::vec::Vec;

use crate::crc32_be::crc32_be_update;
use crate::format::commit_block::{encode_commit, CommitTime, TransactionCrc};
use crate::format::descriptor::{encode_descriptor, tags_per_descriptor};
use crate::format::escape::{escape, needs_escape};
use crate::format::features::BlockChecksums;
use crate::format::revoke_block::{encode_revoke, records_per_revoke_block};
use crate::format::tag::{BlockTag, TAG_ESCAPED};
use crate::log_context::LogContext;
use crate::storage::{IoError, JournalArea};
use crate::writer::transaction::TransactionBuilder;

/// Whether a logged copy had its magic zeroed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Escaping {
    /// Logged as is.
    AsIs,
    /// Logged with its first four bytes zeroed.
    Escaped,
}

/// Where one block's copy sits in the log.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LogCopy {
    pub position: u32,
    pub escaping: Escaping,
}

/// A transaction as written.
#[derive(Debug)]
pub(crate) struct WrittenTransaction {
    /// The position after its commit block: the new head of the log.
    pub next_position: u32,
    /// How many log blocks it took.
    pub log_blocks: u32,
    /// Each logged block and where its copy is.
    pub copies: Vec<(u64, LogCopy)>,
    /// The blocks it revoked.
    pub revokes: Vec<u64>,
}

/// How many log blocks a transaction of `data_blocks` blocks and
/// `revokes` revokes takes.
pub(crate) fn log_blocks_needed(context: &LogContext, data_blocks: usize, revokes: usize) -> u64 {
    let features = &context.superblock.features;
    let per_descriptor =
        tags_per_descriptor(context.block_size, context.layout, context.tail_bytes()).max(1);
    let per_revoke = records_per_revoke_block(
        context.block_size,
        features.revoke_record_bytes(),
        context.tail_bytes(),
    )
    .max(1);
    let descriptors = data_blocks.div_ceil(per_descriptor);
    let revoke_blocks = revokes.div_ceil(per_revoke);
    (revoke_blocks + descriptors + data_blocks + 1) as u64
}

/// Hands out consecutive log positions, wrapping at the end of the log.
struct LogCursor<'a> {
    context: &'a LogContext,
    position: u32,
    taken: u32,
}

impl LogCursor<'_> {
    fn take(&mut self) -> u64 {
        let position = u64::from(self.position);
        self.position = self.context.geometry.advance(position, 1) as u32;
        self.taken += 1;
        position
    }
}

/// The copy of `data` as logged, and its escaping.
fn logged_copy(data: &[u8], copy: &mut Vec<u8>) -> Escaping {
    copy.clear();
    copy.extend_from_slice(data);
    if needs_escape(data) {
        escape(copy);
        return Escaping::Escaped;
    }
    Escaping::AsIs
}

/// The tag of one block for transaction `sequence`.
fn tag_for(
    context: &LogContext,
    sequence: u32,
    fs_block: u64,
    data: &[u8],
    copy: &mut Vec<u8>,
) -> BlockTag {
    let escaping = logged_copy(data, copy);
    let flags = if escaping == Escaping::Escaped {
        TAG_ESCAPED
    } else {
        0
    };
    let full = context.checksummer.data_checksum(sequence, copy);
    let checksum = match context.checksummer.scheme() {
        BlockChecksums::Absent => 0,
        BlockChecksums::Version2 => full & 0xFFFF,
        BlockChecksums::Version3 => full,
    };
    BlockTag {
        fs_block,
        flags,
        checksum,
    }
}

/// Writes `builder` at log position `head` and commits it with `time`.
/// The caller has made room for [`log_blocks_needed`] blocks.
pub(crate) fn write_transaction<A: JournalArea>(
    area: &A,
    context: &LogContext,
    builder: &TransactionBuilder,
    head: u32,
    time: CommitTime,
) -> Result<WrittenTransaction, IoError> {
    let sequence = builder.sequence();
    let block_size = context.block_size;
    let mut cursor = LogCursor {
        context,
        position: head,
        taken: 0,
    };
    let revokes: Vec<u64> = builder.revokes().iter().copied().collect();
    let record_bytes = context.superblock.features.revoke_record_bytes();
    let per_revoke =
        records_per_revoke_block(block_size, record_bytes, context.tail_bytes()).max(1);
    for chunk in revokes.chunks(per_revoke) {
        let block = encode_revoke(
            block_size,
            sequence,
            chunk,
            record_bytes,
            &context.checksummer,
        );
        area.write_block(cursor.take(), &block)?;
    }
    let per_descriptor =
        tags_per_descriptor(block_size, context.layout, context.tail_bytes()).max(1);
    let entries: Vec<(&u64, &Vec<u8>)> = builder.blocks().iter().collect();
    // The v1 transaction CRC covers every block: only when the journal
    // has that feature (a byte-at-a-time CRC over each block was a third
    // of the time of a tree of small files).
    let wants_crc32 = context.superblock.features.has_transaction_crc32();
    let mut crc = !0u32;
    let mut copy = Vec::with_capacity(block_size);
    let mut copies = Vec::with_capacity(entries.len());
    for chunk in entries.chunks(per_descriptor) {
        let tags: Vec<BlockTag> = chunk
            .iter()
            .map(|(&fs_block, data)| tag_for(context, sequence, fs_block, data, &mut copy))
            .collect();
        let descriptor = encode_descriptor(
            block_size,
            sequence,
            &tags,
            context.layout,
            &context.superblock.uuid,
            &context.checksummer,
        );
        area.write_block(cursor.take(), &descriptor)?;
        if wants_crc32 {
            crc = crc32_be_update(crc, &descriptor);
        }
        for (&fs_block, data) in chunk {
            let escaping = logged_copy(data, &mut copy);
            let position = cursor.take();
            area.write_block(position, &copy)?;
            if wants_crc32 {
                crc = crc32_be_update(crc, &copy);
            }
            copies.push((
                fs_block,
                LogCopy {
                    position: position as u32,
                    escaping,
                },
            ));
        }
    }
    area.flush()?;
    let transaction_crc = if wants_crc32 {
        TransactionCrc::Crc32(crc)
    } else {
        TransactionCrc::Absent
    };
    let commit = encode_commit(
        block_size,
        sequence,
        time,
        transaction_crc,
        &context.checksummer,
    );
    area.write_block(cursor.take(), &commit)?;
    area.flush()?;
    Ok(WrittenTransaction {
        next_position: cursor.position,
        log_blocks: cursor.taken,
        copies,
        revokes,
    })
}
