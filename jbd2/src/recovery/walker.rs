//! Walking the log block by block, as the top of the kernel's
//! `do_one_pass` loop does for every pass.
//!
//! Each step reads the block at the next position, wraps the position,
//! and classifies the block: a descriptor, commit or revoke block of the
//! expected transaction, or the end of the log (no magic, another
//! sequence, an unknown type). A position past the journal is an error,
//! like the kernel's `jread`. **Must never** walk forever: every block
//! read or skipped counts against a bound of twice the log's length (an
//! honest log is walked in at most its length plus one block; the kernel
//! has no bound and can circle a crafted log for ever).

use alloc::vec::Vec;

use crate::error::RecoveryError;
use crate::format::header::{BlockHeader, BlockType};
use crate::log_context::LogContext;
use crate::storage::JournalArea;

/// What the block just read is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Record {
    /// A descriptor block of the expected transaction.
    Descriptor,
    /// A commit block of the expected transaction.
    Commit,
    /// A revoke block of the expected transaction.
    Revoke,
    /// Not part of the log: the walk is over.
    End,
}

/// Whether a data block could be read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DataBlock {
    /// The buffer holds it.
    Read,
    /// Its position is outside the journal or the read failed.
    Unreadable,
}

/// A position in the log and the transaction expected there.
pub(crate) struct LogWalker<'a, A: JournalArea> {
    area: &'a A,
    context: &'a LogContext,
    next_sequence: u32,
    next_position: u64,
    record_position: u64,
    blocks_walked: u64,
    block: Vec<u8>,
}

impl<'a, A: JournalArea> LogWalker<'a, A> {
    /// A walk from the superblock's `s_start` and `s_sequence`.
    pub fn new(area: &'a A, context: &'a LogContext) -> LogWalker<'a, A> {
        LogWalker {
            area,
            context,
            next_sequence: context.superblock.sequence,
            next_position: u64::from(context.superblock.start),
            record_position: u64::from(context.superblock.start),
            blocks_walked: 0,
            block: context.block_buffer(),
        }
    }

    /// The transaction expected next.
    pub fn next_sequence(&self) -> u32 {
        self.next_sequence
    }

    /// The position of the next block.
    pub fn next_position(&self) -> u64 {
        self.next_position
    }

    /// The position of the metadata block the last
    /// [`LogWalker::next_record`] read.
    pub fn record_position(&self) -> u64 {
        self.record_position
    }

    /// The metadata block the last [`LogWalker::next_record`] read.
    pub fn block(&self) -> &[u8] {
        &self.block
    }

    /// A commit block was accepted: the next transaction is expected.
    pub fn commit_accepted(&mut self) {
        self.next_sequence = self.next_sequence.wrapping_add(1);
    }

    fn count(&mut self, blocks: u64) -> Result<(), RecoveryError> {
        self.blocks_walked = self.blocks_walked.saturating_add(blocks);
        let bound = 2 * u64::from(self.context.geometry.capacity()) + 2;
        if self.blocks_walked > bound {
            return Err(RecoveryError::LogLongerThanJournal);
        }
        Ok(())
    }

    /// Reads the block at `position` into `buffer` (kernel `jread`).
    fn read(&self, position: u64, buffer: &mut [u8]) -> Result<(), RecoveryError> {
        if !self.context.geometry.contains(position) {
            return Err(RecoveryError::PositionOutsideJournal(position));
        }
        Ok(self.area.read_block(position, buffer)?)
    }

    /// Reads the next block and says what it is.
    pub fn next_record(&mut self) -> Result<Record, RecoveryError> {
        self.count(1)?;
        let mut block = core::mem::take(&mut self.block);
        let read = self.read(self.next_position, &mut block);
        self.block = block;
        read?;
        self.record_position = self.next_position;
        self.next_position = self.context.geometry.advance(self.next_position, 1);
        let Some(header) = BlockHeader::decode(&self.block) else {
            return Ok(Record::End);
        };
        if header.sequence != self.next_sequence {
            return Ok(Record::End);
        }
        Ok(match header.block_type {
            BlockType::Descriptor => Record::Descriptor,
            BlockType::Commit => Record::Commit,
            BlockType::Revoke => Record::Revoke,
            _ => Record::End,
        })
    }

    /// Steps over `count` data blocks without reading them.
    pub fn skip(&mut self, count: u64) -> Result<(), RecoveryError> {
        self.count(count)?;
        self.next_position = self.context.geometry.advance(self.next_position, count);
        Ok(())
    }

    /// Reads the next data block into `buffer` and steps past it; the
    /// position advances even when the read fails, as in the kernel, and
    /// the failure is the caller's to count.
    pub fn read_data(&mut self, buffer: &mut [u8]) -> Result<DataBlock, RecoveryError> {
        self.count(1)?;
        let position = self.next_position;
        self.next_position = self.context.geometry.advance(position, 1);
        Ok(match self.read(position, buffer) {
            Ok(()) => DataBlock::Read,
            Err(_) => DataBlock::Unreadable,
        })
    }
}
