//! The running transaction: the blocks and revokes that every operation
//! joined to it has added, until it is committed as one unit (group
//! commit).
//!
//! An operation calls [`crate::Journal::begin`] for a
//! [`TransactionHandle`], adds blocks through it, and ends it; commit
//! waits for every handle to end so no half-done operation is committed.
//! Within a transaction each block is logged once, with its last data.
//! Logging a block cancels an earlier revoke of it, and revoking a block
//! drops it from the transaction (the kernel's `jbd2_journal_cancel_revoke`
//! and `jbd2_journal_forget`). **Must never** hold data of the wrong
//! length: the journal checks before adding.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

/// One operation's membership in the running transaction. Not `Clone`:
/// it is given back to [`crate::Journal::end`] exactly once.
#[derive(Debug, PartialEq, Eq)]
pub struct TransactionHandle {
    sequence: u32,
}

impl TransactionHandle {
    pub(crate) fn new(sequence: u32) -> TransactionHandle {
        TransactionHandle { sequence }
    }

    /// The transaction this handle joined.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }
}

/// The blocks and revokes of the running transaction.
#[derive(Debug)]
pub struct TransactionBuilder {
    sequence: u32,
    blocks: BTreeMap<u64, Vec<u8>>,
    revokes: BTreeSet<u64>,
    open_handles: u32,
}

impl TransactionBuilder {
    pub(crate) fn new(sequence: u32) -> TransactionBuilder {
        TransactionBuilder {
            sequence,
            blocks: BTreeMap::new(),
            revokes: BTreeSet::new(),
            open_handles: 0,
        }
    }

    /// Its transaction ID.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// How many distinct blocks it logs.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// How many blocks it revokes.
    pub fn revoke_count(&self) -> usize {
        self.revokes.len()
    }

    /// How many handles have not ended.
    pub fn open_handles(&self) -> u32 {
        self.open_handles
    }

    /// Whether it holds nothing to commit.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.revokes.is_empty()
    }

    /// Whether `fs_block` is already logged by it.
    pub fn contains(&self, fs_block: u64) -> bool {
        self.blocks.contains_key(&fs_block)
    }

    /// The logged blocks, by block number.
    pub(crate) fn blocks(&self) -> &BTreeMap<u64, Vec<u8>> {
        &self.blocks
    }

    /// The revoked blocks, ascending.
    pub(crate) fn revokes(&self) -> &BTreeSet<u64> {
        &self.revokes
    }

    pub(crate) fn join(&mut self) -> TransactionHandle {
        self.open_handles = self.open_handles.saturating_add(1);
        TransactionHandle::new(self.sequence)
    }

    pub(crate) fn leave(&mut self) {
        self.open_handles = self.open_handles.saturating_sub(1);
    }

    pub(crate) fn log(&mut self, fs_block: u64, data: &[u8]) {
        self.revokes.remove(&fs_block);
        self.blocks.insert(fs_block, data.to_vec());
    }

    pub(crate) fn revoke(&mut self, fs_block: u64) {
        self.blocks.remove(&fs_block);
        self.revokes.insert(fs_block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_and_revoke_cancel_each_other() {
        let mut builder = TransactionBuilder::new(3);
        let handle = builder.join();
        assert_eq!(handle.sequence(), 3);
        builder.log(10, &[1; 4]);
        builder.log(10, &[2; 4]);
        assert_eq!(builder.blocks()[&10], [2; 4]);
        builder.revoke(10);
        assert!(!builder.contains(10));
        assert_eq!(builder.revoke_count(), 1);
        builder.log(10, &[3; 4]);
        assert_eq!(builder.revoke_count(), 0);
        assert_eq!(builder.open_handles(), 1);
        builder.leave();
        assert_eq!(builder.open_handles(), 0);
    }
}
