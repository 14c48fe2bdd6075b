//! The one walk over every page table of a space's user half: depth first,
//! in address order, one step at a time, leaf tables handed out whole (so
//! that their 512 entries are read and written in batches, not a step
//! each). Fork, `for_each_leaf` (the reports) and `release_everything`
//! (destroy) use it.
//!
//! A walk holds no borrow between steps, so its caller may change the
//! space between them (free frames, clear entries); it may change the leaf
//! table it handed out and the parent entry a `TableDone` names, and no
//! other entry of a table the walk has not left yet. Must never read a
//! table after reporting it done.

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
    /// Leaf table `table`, whose entry 0 maps `address`: the caller reads
    /// (and may change) its entries itself, a table at a time. Its
    /// `TableDone` comes next.
    LeafTable { address: u64, table: u64 },
    /// Every entry of `table` (a table below the root) has been visited;
    /// entry `parent_index` of `parent` points at it.
    TableDone { table: u64, parent: u64, parent_index: usize },
}

/// Entries read from a table at once (one check of the table for them all).
const CHUNK: usize = 32;

/// A depth-first walk from a root table over the tables above the leaves
/// (levels 3 to 1); leaf tables are handed out whole.
pub(crate) struct TableWalk {
    /// The table being scanned at each level (`tables[3]` is the root;
    /// `tables[0]` unused).
    tables: [u64; 4],
    /// The next entry to read at each level.
    next: [usize; 4],
    /// The level being scanned (1 to 3).
    level: usize,
    /// At each level, entries `chunk_start..chunk_start + CHUNK` of its
    /// table as read (`usize::MAX`: none yet). The caller changes only
    /// entries the walk has passed, so the copy stays true for the rest.
    chunk: [[u64; CHUNK]; 4],
    chunk_start: [usize; 4],
    /// The leaf table just handed out, whose `TableDone` is next.
    finished_leaf: Option<Step>,
}

impl TableWalk {
    pub(crate) fn new(root: u64) -> Self {
        Self { tables: [0, 0, 0, root], next: [0; 4], level: ROOT_LEVEL, chunk: [[0; CHUNK]; 4], chunk_start: [usize::MAX; 4], finished_leaf: None }
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
        if let Some(done) = self.finished_leaf.take() {
            return Some(done);
        }
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
            if !entry::is_present(current) {
                continue;
            }
            let table = entry::frame(current);
            if level == 1 {
                self.finished_leaf = Some(Step::TableDone { table, parent: self.tables[1], parent_index: index });
                return Some(Step::LeafTable { address: self.address_of(index), table });
            }
            self.level -= 1;
            self.tables[self.level] = table;
            self.next[self.level] = 0;
            self.chunk_start[self.level] = usize::MAX;
        }
    }

    /// The address entry 0 of the leaf table at entry `index` of the
    /// current level-1 table maps (the cursors of the levels above are one
    /// past the entries that led here).
    fn address_of(&self, index: usize) -> u64 {
        let above: u64 = (2..=ROOT_LEVEL).map(|level| ((self.next[level] - 1) as u64) << (12 + 9 * level)).sum();
        above + ((index as u64) << 21)
    }
}
