//! The revoke table built by pass 2: for each revoked file-system block,
//! the latest transaction that revoked it (kernel `jbd2_journal_set_revoke`
//! and `jbd2_journal_test_revoke`).
//!
//! A logged block is not replayed when a revoke of it comes from its own
//! transaction or a later one. **Must never** grow beyond one entry per
//! revoke record read (records are bounded by the log's size).

use alloc::collections::BTreeMap;

use crate::recovery::sequence::tid_after;

/// Revoked blocks and the last transaction revoking each.
#[derive(Default, Debug)]
pub(crate) struct RevokeTable {
    latest: BTreeMap<u64, u32>,
}

impl RevokeTable {
    /// Records that transaction `sequence` revokes `block`.
    pub fn revoke(&mut self, block: u64, sequence: u32) {
        let latest = self.latest.entry(block).or_insert(sequence);
        if tid_after(sequence, *latest) {
            *latest = sequence;
        }
    }

    /// Whether `block` logged by transaction `sequence` must be skipped.
    pub fn is_revoked(&self, block: u64, sequence: u32) -> bool {
        self.latest
            .get(&block)
            .is_some_and(|&latest| !tid_after(sequence, latest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revoke_covers_its_own_and_earlier_transactions_only() {
        let mut table = RevokeTable::default();
        table.revoke(10, 5);
        table.revoke(10, 3);
        assert!(table.is_revoked(10, 4));
        assert!(table.is_revoked(10, 5));
        assert!(!table.is_revoked(10, 6));
        assert!(!table.is_revoked(11, 1));
    }
}
