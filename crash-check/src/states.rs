//! Crash states cut from a log of writes and flushes.
//!
//! (a) At every flush: everything written before it, nothing after.
//! (b) Between two flushes: the state at the first one plus a random
//! subset of the writes issued before the second, applied in random
//! order (a disk may reorder and drop writes it has not flushed).
//!
//! Each state comes with its `bound`: the log position the crash happened
//! before, for the model's promises. States share one base image (the
//! state at the last flush) and carry their own writes as sector patches,
//! so no state costs a copy of the image.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use ext4::{BlockDevice, IoError, SECTOR_SIZE};

use crate::Event;

/// xorshift64: deterministic, seeded per run.
pub struct Random(pub u64);

impl Random {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

/// A crashed disk: a shared base image and the sectors that differ.
pub struct CrashDisk {
    pub base: Rc<Vec<u8>>,
    pub patches: RefCell<BTreeMap<u64, Vec<u8>>>,
}

impl CrashDisk {
    pub fn new(base: Rc<Vec<u8>>, patches: BTreeMap<u64, Vec<u8>>) -> CrashDisk {
        CrashDisk { base, patches: RefCell::new(patches) }
    }

    /// The whole image, for e2fsck.
    pub fn materialize(&self) -> Vec<u8> {
        let mut image = self.base.to_vec();
        for (sector, bytes) in self.patches.borrow().iter() {
            let start = *sector as usize * SECTOR_SIZE;
            image[start..start + SECTOR_SIZE].copy_from_slice(bytes);
        }
        image
    }
}

impl BlockDevice for CrashDisk {
    fn sector_count(&self) -> u64 {
        (self.base.len() / SECTOR_SIZE) as u64
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let range = ext4::checked_byte_range(first_sector, buffer.len(), self.sector_count())?;
        buffer.copy_from_slice(&self.base[range.start as usize..range.end as usize]);
        let last = first_sector + (buffer.len() / SECTOR_SIZE) as u64;
        for (sector, bytes) in self.patches.borrow().range(first_sector..last) {
            let offset = (sector - first_sector) as usize * SECTOR_SIZE;
            buffer[offset..offset + SECTOR_SIZE].copy_from_slice(bytes);
        }
        Ok(())
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        ext4::checked_byte_range(first_sector, data.len(), self.sector_count())?;
        let mut patches = self.patches.borrow_mut();
        for (index, bytes) in data.chunks(SECTOR_SIZE).enumerate() {
            patches.insert(first_sector + index as u64, bytes.to_vec());
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

/// Which kind of crash state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cut {
    /// Everything before a flush (or the end of the log).
    AtFlush,
    /// The last flush plus a random subset of the writes after it.
    Reordered,
}

/// One crash state, handed to the checker.
pub struct CrashState {
    pub disk: CrashDisk,
    pub bound: usize,
    pub cut: Cut,
    /// A short description for failure messages.
    pub label: String,
}

fn patch(patches: &mut BTreeMap<u64, Vec<u8>>, sector: u64, bytes: &[u8]) {
    for (index, piece) in bytes.chunks(SECTOR_SIZE).enumerate() {
        patches.insert(sector + index as u64, piece.to_vec());
    }
}

/// Visits every crash state of `events` over `initial`: one at each
/// flush, and `per_window` random reorderings between consecutive flushes.
pub fn for_each_state(
    initial: &[u8],
    events: &[Event],
    per_window: usize,
    random: &mut Random,
    mut visit: impl FnMut(CrashState),
) {
    let mut base = Rc::new(initial.to_vec());
    let mut start = 0;
    loop {
        let end = (start..events.len()).find(|&index| matches!(events[index], Event::Flush)).unwrap_or(events.len());
        let writes: Vec<usize> =
            (start..end).filter(|&index| matches!(events[index], Event::Write { .. })).collect();
        let label = format!("flush before event {start}");
        visit(CrashState { disk: CrashDisk::new(base.clone(), BTreeMap::new()), bound: start, cut: Cut::AtFlush, label });
        for round in 0..if writes.is_empty() { 0 } else { per_window } {
            let mut chosen: Vec<usize> = writes.iter().copied().filter(|_| random.next() & 1 == 0).collect();
            for index in (1..chosen.len()).rev() {
                chosen.swap(index, random.below(index + 1));
            }
            let mut patches = BTreeMap::new();
            for &index in &chosen {
                if let Event::Write { sector, bytes } = &events[index] {
                    patch(&mut patches, *sector, bytes);
                }
            }
            let label = format!("events {start}..{end}, reordering {round}: {} of {} writes", chosen.len(), writes.len());
            visit(CrashState { disk: CrashDisk::new(base.clone(), patches), bound: end, cut: Cut::Reordered, label });
        }
        let image = Rc::get_mut(&mut base).expect("states are dropped before the base moves on");
        for &index in &writes {
            if let Event::Write { sector, bytes } = &events[index] {
                let offset = *sector as usize * SECTOR_SIZE;
                image[offset..offset + bytes.len()].copy_from_slice(bytes);
            }
        }
        if end >= events.len() {
            if !writes.is_empty() {
                let label = "end of the log".to_string();
                visit(CrashState { disk: CrashDisk::new(base.clone(), BTreeMap::new()), bound: end, cut: Cut::AtFlush, label });
            }
            return;
        }
        start = end + 1;
    }
}
