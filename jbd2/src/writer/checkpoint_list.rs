//! The blocks committed to the log but not yet written home, and the
//! checkpoint that writes them.
//!
//! For each file-system block, only its latest logged copy counts; a later
//! revoke drops it, so a checkpoint never writes a freed (and possibly
//! reused) block over its new contents. The copies are read back from the
//! log rather than kept in memory. **Must never** let the log's tail move
//! past a transaction before its blocks are home and flushed: the journal
//! updates `s_start` only after [`CheckpointList::write_home`] returns.

use alloc::collections::BTreeMap;

use crate::format::escape::unescape;
use crate::log_context::LogContext;
use crate::storage::{FileSystemBlocks, IoError, JournalArea};
use crate::writer::log_writer::{Escaping, LogCopy, WrittenTransaction};

/// Committed blocks awaiting their checkpoint.
#[derive(Default, Debug)]
pub(crate) struct CheckpointList {
    homes: BTreeMap<u64, LogCopy>,
}

impl CheckpointList {
    /// Adds a transaction just committed.
    pub fn add(&mut self, written: &WrittenTransaction) {
        for block in &written.revokes {
            self.homes.remove(block);
        }
        for &(block, copy) in &written.copies {
            self.homes.insert(block, copy);
        }
    }

    /// How many blocks await their checkpoint.
    pub fn len(&self) -> usize {
        self.homes.len()
    }

    /// Writes every block home, flushes `fs`, and empties the list.
    pub fn write_home<A: JournalArea, F: FileSystemBlocks>(
        &mut self,
        area: &A,
        fs: &F,
        context: &LogContext,
    ) -> Result<(), IoError> {
        let mut block = context.block_buffer();
        for (&fs_block, copy) in &self.homes {
            area.read_block(u64::from(copy.position), &mut block)?;
            if copy.escaping == Escaping::Escaped {
                unescape(&mut block);
            }
            fs.write_fs_block(fs_block, &block)?;
        }
        fs.flush()?;
        self.homes.clear();
        Ok(())
    }
}
