//! The one walk over every page table of a space's user half: depth first,
//! in address order, one step at a time. `for_each_leaf` (fork, the
//! reports) and `release_everything` (destroy) both use it.
//!
//! A walk holds no borrow between steps, so its caller may change the
//! space between them (free frames, clear entries); it must not change a
//! table the walk has not left yet. Must never read a table after
//! reporting it done.

use crate::entry;
use crate::FrameMemory;

/// Root entries of the user half (the upper 256 are the kernel's).
const USER_ROOT_ENTRIES: usize = 256;
const ENTRIES: usize = 512;
/// The root table's level; leaf tables are level 0.
const ROOT_LEVEL: usize = 3;

/// One step of a [`TableWalk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A leaf entry that holds a frame: the page at `address` is entry
    /// `index` of leaf table `table`.
    Leaf { address: u64, table: u64, index: usize, entry: u64 },
    /// Every entry of `table` (a table below the root) has been visited;
    /// entry `parent_index` of `parent` points at it.
    TableDone { table: u64, parent: u64, parent_index: usize },
}

/// Entries read from a table at once (one check of the table for them all).
const CHUNK: usize = 32;

/// A depth-first walk from a root table.
pub(crate) struct TableWalk {
    /// The table being scanned at each level (`tables[3]` is the root).
    tables: [u64; 4],
    /// The next entry to read at each level.
    next: [usize; 4],
    /// The level being scanned.
    level: usize,
    /// At each level, entries `chunk_start..chunk_start + CHUNK` of its
    /// table as read (`usize::MAX`: none yet). The caller changes only
    /// entries the walk has passed, so the copy stays true for the rest.
    chunk: [[u64; CHUNK]; 4],
    chunk_start: [usize; 4],
    /// The address the current leaf table's entry 0 maps (set on the way
    /// down, so a leaf's address is one addition).
    leaf_base: u64,
}

impl TableWalk {
    pub(crate) fn new(root: u64) -> Self {
        Self { tables: [0, 0, 0, root], next: [0; 4], level: ROOT_LEVEL, chunk: [[0; CHUNK]; 4], chunk_start: [usize::MAX; 4], leaf_base: 0 }
    }

    /// Entry `index` of the table at `level`, read a chunk at a time.
    fn entry(&mut self, memory: &impl FrameMemory, level: usize, index: usize) -> u64 {
        let start = index - index % CHUNK;
        if self.chunk_start[level] != start {
            memory.read_words(self.tables[level], start, &mut self.chunk[level]);
            self.chunk_start[level] = start;
        }
        self.chunk[level][index - start]
    }

    /// The next step, reading tables through `memory`; `None` at the end.
    pub(crate) fn next(&mut self, memory: &impl FrameMemory) -> Option<Step> {
        loop {
            let level = self.level;
            let limit = if level == ROOT_LEVEL { USER_ROOT_ENTRIES } else { ENTRIES };
            if self.next[level] == limit {
                if level == ROOT_LEVEL {
                    return None;
                }
                self.level += 1;
                // The parent's cursor is one past the entry that led here.
                let parent_index = self.next[level + 1] - 1;
                return Some(Step::TableDone { table: self.tables[level], parent: self.tables[level + 1], parent_index });
            }
            let index = self.next[level];
            let current = self.entry(memory, level, index);
            if current == 0 {
                // Most entries are empty: skip the rest of the chunk's
                // empty ones in one go.
                let start = index - index % CHUNK;
                let chunk = &self.chunk[level];
                let end = (start + CHUNK).min(limit);
                let next = (index + 1..end).find(|&at| chunk[at - start] != 0).unwrap_or(end);
                self.next[level] = next;
                continue;
            }
            self.next[level] += 1;
            if level == 0 {
                if entry::holds_frame(current) {
                    return Some(Step::Leaf { address: self.leaf_base + ((index as u64) << 12), table: self.tables[0], index, entry: current });
                }
            } else if entry::is_present(current) {
                self.level -= 1;
                self.tables[self.level] = entry::frame(current);
                self.next[self.level] = 0;
                self.chunk_start[self.level] = usize::MAX;
                if self.level == 0 {
                    self.leaf_base = self.leaf_table_base();
                }
            }
        }
    }

    /// The address entry 0 of the current leaf table maps (the cursors
    /// of the levels above are one past the entries that led here).
    fn leaf_table_base(&self) -> u64 {
        (1..=ROOT_LEVEL).map(|level| ((self.next[level] - 1) as u64) << (12 + 9 * level)).sum()
    }
}
