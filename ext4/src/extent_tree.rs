//! A file's extents as one sorted list, the form writes change: look a
//! logical block up, cut a range out (returning the physical runs it
//! held), insert a new run (merged with its neighbours when they continue
//! it on disk). Loading a tree into a list and storing a list as a tree is
//! `extent_tree_io`.
//!
//! Invariant: extents are sorted, do not overlap, are non-empty and no
//! longer than 32768 blocks (32767 when unwritten), and end by 2^32.
//! **Must never** break the invariant, whatever the caller asks.

use alloc::vec::Vec;

use crate::bytes::put_le16;
use crate::extents::MAGIC;
use crate::inode::BLOCK_AREA_SIZE;

/// Longest initialised extent.
const MAX_WRITTEN: u32 = 32768;
/// Longest unwritten extent.
const MAX_UNWRITTEN: u32 = 32767;
/// Extents (or index entries) the root in `i_block` holds.
pub(crate) const ROOT_ENTRIES: u16 = 4;

/// One run of a file's logical blocks stored consecutively.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Extent {
    /// The first logical block.
    pub(crate) logical: u32,
    /// How many blocks.
    pub(crate) length: u32,
    /// The first block on disk.
    pub(crate) physical: u64,
    /// Allocated but reading as zeros.
    pub(crate) unwritten: bool,
}

impl Extent {
    /// One past the last logical block.
    pub(crate) fn end(&self) -> u64 {
        u64::from(self.logical) + u64::from(self.length)
    }

    fn limit(&self) -> u32 {
        if self.unwritten {
            MAX_UNWRITTEN
        } else {
            MAX_WRITTEN
        }
    }
}

/// Where a logical block is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mapping {
    /// Stored at `physical`.
    Written {
        /// The block on disk.
        physical: u64,
    },
    /// Allocated at `physical`, reading as zeros.
    Unwritten {
        /// The block on disk.
        physical: u64,
    },
    /// Not allocated; the next mapped block is at `next` (or none).
    Hole {
        /// The next mapped logical block.
        next: Option<u32>,
    },
}

/// A file's extents, sorted.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub(crate) struct ExtentList {
    pub(crate) extents: Vec<Extent>,
}

impl ExtentList {
    /// Where `logical` is.
    pub(crate) fn find(&self, logical: u32) -> Mapping {
        let index = self.extents.partition_point(|extent| extent.end() <= u64::from(logical));
        match self.extents.get(index) {
            Some(extent) if extent.logical <= logical => {
                let physical = extent.physical + u64::from(logical - extent.logical);
                if extent.unwritten {
                    Mapping::Unwritten { physical }
                } else {
                    Mapping::Written { physical }
                }
            }
            Some(extent) => Mapping::Hole { next: Some(extent.logical) },
            None => Mapping::Hole { next: None },
        }
    }

    /// The physical block `logical` would have if it continued the nearest
    /// extent before it (Linux `ext4_ext_find_goal`).
    pub(crate) fn goal(&self, logical: u32) -> Option<u64> {
        let index = self.extents.partition_point(|extent| extent.logical <= logical);
        let extent = self.extents.get(index.checked_sub(1)?)?;
        Some(extent.physical.saturating_add(u64::from(logical.saturating_sub(extent.logical))))
    }

    /// Blocks mapped (written or not).
    pub(crate) fn mapped_blocks(&self) -> u64 {
        self.extents.iter().map(|extent| u64::from(extent.length)).sum()
    }

    /// Unmaps logical blocks `start..end`; returns the physical runs
    /// `(first, count)` they held.
    pub(crate) fn remove(&mut self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut removed = Vec::new();
        let mut kept = Vec::with_capacity(self.extents.len() + 1);
        for extent in self.extents.drain(..) {
            let (first, last) = (u64::from(extent.logical), extent.end());
            if last <= start || first >= end {
                kept.push(extent);
                continue;
            }
            let cut_first = first.max(start);
            let cut_end = last.min(end);
            removed.push((extent.physical + (cut_first - first), cut_end - cut_first));
            if first < cut_first {
                kept.push(Extent { length: (cut_first - first) as u32, ..extent });
            }
            if cut_end < last {
                let offset = cut_end - first;
                kept.push(Extent {
                    logical: cut_end as u32,
                    length: (last - cut_end) as u32,
                    physical: extent.physical + offset,
                    unwritten: extent.unwritten,
                });
            }
        }
        self.extents = kept;
        removed
    }

    /// Maps `count` blocks from `logical` (a hole) to `physical` on,
    /// written; merges with neighbours that continue it.
    pub(crate) fn insert(&mut self, logical: u32, count: u32, physical: u64) {
        let mut new = Extent { logical, length: 0, physical, unwritten: false };
        let mut left = count;
        let index = self.extents.partition_point(|extent| extent.logical < logical);
        let mut at = index;
        if let Some(previous) = index.checked_sub(1).and_then(|i| self.extents.get_mut(i)) {
            let continues = !previous.unwritten
                && previous.end() == u64::from(logical)
                && previous.physical + u64::from(previous.length) == physical;
            if continues {
                let grow = left.min(previous.limit() - previous.length);
                previous.length += grow;
                left -= grow;
                new.logical += grow;
                new.physical += u64::from(grow);
            }
        }
        while left > 0 {
            let piece = left.min(MAX_WRITTEN);
            self.extents.insert(at, Extent { length: piece, ..new });
            at += 1;
            left -= piece;
            new.logical += piece;
            new.physical += u64::from(piece);
        }
        self.merge_at(at);
    }

    /// Joins the extent before `index` with the one at `index` when the
    /// second continues the first and the sum fits.
    fn merge_at(&mut self, index: usize) {
        let Some(before) = index.checked_sub(1) else { return };
        let (Some(first), Some(second)) = (self.extents.get(before), self.extents.get(index)) else { return };
        let continues = first.unwritten == second.unwritten
            && first.end() == u64::from(second.logical)
            && first.physical + u64::from(first.length) == second.physical
            && first.length + second.length <= first.limit();
        if continues {
            let length = second.length;
            self.extents.remove(index);
            if let Some(first) = self.extents.get_mut(before) {
                first.length += length;
            }
        }
    }
}

/// An `i_block` holding an empty depth-0 extent root.
pub(crate) fn empty_root() -> [u8; BLOCK_AREA_SIZE] {
    let mut area = [0u8; BLOCK_AREA_SIZE];
    put_le16(&mut area, 0, MAGIC);
    put_le16(&mut area, 4, ROOT_ENTRIES);
    area
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn list(extents: &[(u32, u32, u64)]) -> ExtentList {
        let extents = extents
            .iter()
            .map(|&(logical, length, physical)| Extent { logical, length, physical, unwritten: false })
            .collect();
        ExtentList { extents }
    }

    #[test]
    fn inserting_after_a_neighbour_on_disk_extends_it() {
        let mut extents = list(&[(0, 4, 100)]);
        extents.insert(4, 2, 104);
        assert_eq!(extents, list(&[(0, 6, 100)]));
        extents.insert(10, 1, 200);
        assert_eq!(extents.find(5), Mapping::Written { physical: 105 });
        assert_eq!(extents.find(7), Mapping::Hole { next: Some(10) });
        assert_eq!(extents.goal(8), Some(108));
    }

    #[test]
    fn removing_the_middle_splits_and_returns_the_physical_runs() {
        let mut extents = list(&[(0, 10, 100), (20, 5, 300)]);
        let removed = extents.remove(3, 22);
        assert_eq!(removed, vec![(103, 7), (300, 2)]);
        assert_eq!(extents, list(&[(0, 3, 100), (22, 3, 302)]));
        assert_eq!(extents.mapped_blocks(), 6);
    }

    #[test]
    fn long_runs_are_cut_at_32768_blocks() {
        let mut extents = ExtentList::default();
        extents.insert(0, 40000, 1000);
        assert_eq!(extents, list(&[(0, 32768, 1000), (32768, 7232, 33768)]));
    }
}
