//! A user address space's tables built by hand, entry by entry, for tests
//! that need a few pages at known addresses and nothing else: the
//! protection probes (a data and a code page loaded as CR3) and the
//! virtualization tests (a guest's nested page tables). Every frame comes
//! from the frame record's test helpers and goes back in `tear_down`.
//! May not be used for anything a test does not own from start to end.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use machine::frame_access::SpaceTables;

use super::frame_record::{claimed_frame, give_back};
use super::runner::{check, Outcome};

pub const PRESENT: u64 = 1;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
/// What every link of these spaces carries.
pub const USER_WRITABLE: u64 = PRESENT | WRITABLE | USER;

/// A space's tables and the frames linked into them: (table, index,
/// frame), from the root down, in the order they were linked.
pub struct SmallSpace {
    pub tables: SpaceTables,
    pub root: u64,
    links: Vec<(u64, usize, u64)>,
}

impl SmallSpace {
    /// A space with its root only.
    pub fn new() -> Result<Self, String> {
        let mut tables = SpaceTables::new();
        let root = tables.install_root(claimed_frame()?).map_err(|_| "the root was refused")?;
        Ok(SmallSpace { tables, root, links: Vec::new() })
    }

    /// A zeroed frame of the space, named by entry `index` of `table`.
    pub fn link(&mut self, table: u64, index: usize, bits: u64) -> Result<u64, String> {
        let frame = self.tables.adopt(claimed_frame()?);
        check(self.tables.zero(frame), || "a new frame could not be zeroed".into())?;
        check(self.tables.write_entry(table, index, frame | bits), || format!("entry {index} of {table:#x} was refused"))?;
        self.links.push((table, index, frame));
        Ok(frame)
    }

    /// The leaf table for the first 2 MiB of addresses (made on first use).
    pub fn first_leaf_table(&mut self) -> Result<u64, String> {
        if let Some(&(_, _, leaves)) = self.links.get(2) {
            return Ok(leaves);
        }
        let directory_pointers = self.link(self.root, 0, USER_WRITABLE)?;
        let directory = self.link(directory_pointers, 0, USER_WRITABLE)?;
        self.link(directory, 0, USER_WRITABLE)
    }

    /// Unlinks and gives back every frame, the leaves first, then the root.
    pub fn tear_down(self) -> Outcome {
        for &(table, index, frame) in self.links.iter().rev() {
            check(self.tables.write_entry(table, index, 0), || format!("entry {index} of {table:#x} could not be emptied"))?;
            give_back(self.tables.reclaim(frame).ok_or("an unlinked frame was not given back")?)?;
        }
        give_back(self.tables.reclaim(self.root).ok_or("the root was not given back")?)
    }
}
