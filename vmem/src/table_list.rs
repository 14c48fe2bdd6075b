//! The page tables below a space's root, as a list: each table's level,
//! the address its entry 0 maps, its parent entry, and for a leaf table
//! the entries that may hold a frame. Fork and destroy go through it
//! instead of scanning every entry of every table (a small process's walk
//! read ~2,800 mostly empty entries three times per fork and exit).
//!
//! A space's tables only come (`leaf_slot`) and all go at once
//! (`release_everything`), so the list is kept by those two alone. The
//! tests check it against a walk of the tables themselves. Must never
//! leave out a table the space linked, nor claim a leaf entry unused that
//! may hold a frame: every leaf slot handed out widens its table's span.

use alloc::vec::Vec;

use crate::VmError;

/// Bytes a leaf table maps.
pub(crate) const LEAF_SPAN: u64 = 1 << 21;

/// One page table below the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageTable {
    /// 0 for a leaf table, 1 and 2 above it.
    pub(crate) level: u8,
    /// The address its entry 0 maps.
    pub(crate) address: u64,
    /// Its frame.
    pub(crate) frame: u64,
    /// Entry `parent_index` of table `parent` names it.
    pub(crate) parent: u64,
    pub(crate) parent_index: u16,
    /// Leaf tables: entries outside `used_start..used_end` have never
    /// been handed out, so hold no frame (empty when none was).
    pub(crate) used_start: u16,
    pub(crate) used_end: u16,
}

impl PageTable {
    /// The entries that may hold a frame.
    pub(crate) fn used(&self) -> core::ops::Range<usize> {
        usize::from(self.used_start)..usize::from(self.used_end)
    }

    /// The entries that may hold a frame and map part of `range`.
    pub(crate) fn used_in(&self, range: &core::ops::Range<u64>) -> core::ops::Range<usize> {
        let index = |address: u64| ((address.clamp(self.address, self.address + LEAF_SPAN) - self.address) / crate::PAGE_SIZE) as usize;
        let used = self.used();
        let (start, end) = (index(range.start).max(used.start), index(range.end).min(used.end));
        start..end.max(start)
    }
}

/// The tables, ordered by level and then address: leaf tables first, in
/// address order, so that releasing them in order frees every table after
/// its children.
#[derive(Default)]
pub(crate) struct TableList {
    tables: Vec<PageTable>,
    /// How many of `tables` are leaf tables (they come first).
    leaves: usize,
    /// Where the leaf table last widened is in `tables` (faults and maps
    /// come in runs within one table: no search for those).
    last_widened: usize,
}

impl TableList {
    /// Room for one more table, asked before one is made, so that making
    /// it cannot fail afterwards.
    pub(crate) fn reserve_one(&mut self) -> Result<(), VmError> {
        self.tables.try_reserve(1).map_err(|_| VmError::OutOfMemory)
    }

    /// Records a new table (room reserved by [`Self::reserve_one`]).
    pub(crate) fn record(&mut self, table: PageTable) {
        let at = self.tables.partition_point(|known| (known.level, known.address) < (table.level, table.address));
        self.leaves += usize::from(table.level == 0);
        self.tables.insert(at, table);
    }

    /// The leaf tables, in address order.
    pub(crate) fn leaves(&self) -> &[PageTable] {
        &self.tables[..self.leaves]
    }

    /// The leaf tables that map part of `range`, in address order.
    pub(crate) fn leaves_in(&self, range: core::ops::Range<u64>) -> &[PageTable] {
        let leaves = self.leaves();
        let first = leaves.partition_point(|table| table.address + LEAF_SPAN <= range.start);
        let end = leaves.partition_point(|table| table.address < range.end).max(first);
        &leaves[first..end]
    }

    /// Every table, leaves first.
    pub(crate) fn all(&self) -> &[PageTable] {
        &self.tables
    }

    /// Marks entry `index` of the leaf table mapping `address` as handed
    /// out (and so possibly holding a frame from now on).
    pub(crate) fn widen(&mut self, address: u64, index: usize) {
        self.widen_to(address, index..index + 1);
    }

    /// [`Self::widen`] for the entries `span`.
    pub(crate) fn widen_to(&mut self, address: u64, span: core::ops::Range<usize>) {
        let table_address = address & !(LEAF_SPAN - 1);
        let known = self.tables[..self.leaves].get(self.last_widened).is_some_and(|table| table.address == table_address);
        if !known {
            let Ok(at) = self.tables[..self.leaves].binary_search_by_key(&table_address, |table| table.address) else { return };
            self.last_widened = at;
        }
        let table = &mut self.tables[self.last_widened];
        let (start, end) = (span.start as u16, span.end as u16);
        if table.used_start == table.used_end {
            (table.used_start, table.used_end) = (start, end);
        } else {
            table.used_start = table.used_start.min(start);
            table.used_end = table.used_end.max(end);
        }
    }

    /// Forgets every table (they were all given back).
    pub(crate) fn clear(&mut self) {
        self.tables.clear();
        self.leaves = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn table(level: u8, address: u64) -> PageTable {
        PageTable { level, address, frame: address + 1, parent: 0, parent_index: 0, used_start: 0, used_end: 0 }
    }

    #[test]
    fn tables_are_kept_leaves_first_in_address_order_and_spans_only_grow() {
        let mut list = TableList::default();
        for made in [table(1, 0), table(0, 0x60_0000), table(2, 0), table(0, 0x20_0000)] {
            list.reserve_one().unwrap();
            list.record(made);
        }
        let order: Vec<(u8, u64)> = list.all().iter().map(|table| (table.level, table.address)).collect();
        assert_eq!(order, [(0, 0x20_0000), (0, 0x60_0000), (1, 0), (2, 0)]);
        assert_eq!(list.leaves().len(), 2);
        list.widen(0x60_0000 + 5 * 4096, 5);
        list.widen(0x60_0000 + 3 * 4096, 3);
        list.widen_to(0x60_0000, 4..9);
        list.widen(0x40_0000, 1);
        assert_eq!(list.leaves()[1].used(), 3..9);
        assert!(list.leaves()[0].used().is_empty(), "an address without a leaf table widens nothing");
        let in_range = |range: core::ops::Range<u64>| list.leaves_in(range).iter().map(|table| table.address).collect::<Vec<u64>>();
        assert_eq!(in_range(0x1F_F000..0x20_1000), [0x20_0000]);
        assert_eq!(in_range(0x20_0000..0x60_0001), [0x20_0000, 0x60_0000]);
        assert_eq!(in_range(0x40_0000..0x60_0000), [] as [u64; 0]);
    }
}
