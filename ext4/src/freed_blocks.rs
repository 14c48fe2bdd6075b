//! Blocks freed by the running journal transaction, which must not be
//! handed out again until it commits.
//!
//! Why: file data is written in place before its transaction commits
//! (ordered mode). If a block freed by an uncommitted transaction were
//! reused for data, a crash before the commit would leave the old owner
//! (still the owner on disk) pointing at someone else's bytes. The kernel
//! keeps such blocks busy the same way (`ext4_mb_free_metadata`, released
//! by the commit callback). **Must never** forget a run before the
//! transaction that freed it is durable.

use alloc::collections::BTreeMap;

/// Disjoint runs of blocks, `first → end` (exclusive).
#[derive(Clone, Default, Debug)]
pub(crate) struct FreedBlocks {
    runs: BTreeMap<u64, u64>,
}

impl FreedBlocks {
    /// Adds `count` blocks from `first`.
    pub(crate) fn insert(&mut self, first: u64, count: u64) {
        let mut start = first;
        let mut end = first.saturating_add(count);
        if start == end {
            return;
        }
        if let Some((&before, &before_end)) = self.runs.range(..=start).next_back() {
            if before_end >= start {
                start = before;
                end = end.max(before_end);
            }
        }
        let overlapping: alloc::vec::Vec<(u64, u64)> =
            self.runs.range(start..=end).map(|(&run_start, &run_end)| (run_start, run_end)).collect();
        for (run_start, run_end) in overlapping {
            self.runs.remove(&run_start);
            end = end.max(run_end);
        }
        self.runs.insert(start, end);
    }

    /// Whether `block` is in one of the runs.
    pub(crate) fn contains(&self, block: u64) -> bool {
        self.runs.range(..=block).next_back().is_some_and(|(_, &end)| block < end)
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Forgets every run: the transaction that freed them committed.
    pub(crate) fn clear(&mut self) {
        self.runs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_and_answer_membership() {
        let mut freed = FreedBlocks::default();
        freed.insert(10, 5);
        freed.insert(20, 5);
        freed.insert(14, 7);
        freed.insert(3, 0);
        assert!(!freed.contains(9) && freed.contains(10) && freed.contains(24) && !freed.contains(25));
        assert!(!freed.contains(3));
        assert_eq!(freed.runs.len(), 1);
        freed.clear();
        assert!(freed.is_empty() && !freed.contains(12));
    }
}
