//! Copy-on-write fork. The child is built completely first — tables from
//! its own frame source, every frame joined in the owner table, pages that
//! either side may write marked copy-on-write in the child — and only then
//! are the parent's writable private pages turned copy-on-write too. So a
//! fork that runs out of memory destroys the half-built child and leaves
//! the parent exactly as it was.

use crate::entry::{self, COPY_ON_WRITE, WRITABLE};
use crate::space::{occupied, LEAF_ENTRIES, SHARED};
use crate::{AddressSpace, FrameMemory, FrameSource, TlbFlush, VmError, PAGE_SIZE};

impl<'o, M: FrameMemory, S: FrameSource<Frame = M::Frame>> AddressSpace<'o, M, S> {
    /// A copy-on-write child of this space whose frames come from
    /// `child_frames`, and the flush the parent needs (its writable pages
    /// became read-only). On `OutOfMemory` nothing changed.
    pub fn fork(&mut self, child_frames: S) -> Result<(AddressSpace<'o, M, S>, TlbFlush), VmError> {
        let mut child = AddressSpace::new(self.memory.sibling(), child_frames, self.owners)?;
        if child.regions.try_reserve(self.regions.len()).is_err() {
            child.release_everything();
            return Err(VmError::OutOfMemory);
        }
        child.regions.extend(self.regions.iter().copied());
        (child.region_bytes, child.loose_pages) = (self.region_bytes, self.loose_pages);
        // A leaf table at a time: its entries read at once, joined in the
        // owner table, written into the child's table in one batch.
        let mut child_entries = [0u64; LEAF_ENTRIES];
        let built = self.for_each_leaf_table(|address, _, used, entries| {
            let span = occupied(entries, used);
            if span.is_empty() {
                return Ok(());
            }
            let first_page = address + span.start as u64 * PAGE_SIZE;
            let (table, _) = child.leaf_slot(first_page, true)?.ok_or(VmError::OutOfMemory)?;
            for (index, &current) in entries.iter().enumerate().take(span.end).skip(span.start) {
                let into = &mut child_entries[index];
                *into = 0;
                if !entry::holds_frame(current) {
                    continue;
                }
                if let Err(error) = self.owners.join(entry::frame(current)) {
                    self.leave_all(&entries[span.start..index]);
                    return Err(error);
                }
                *into = child_entry(current);
            }
            child.tables.widen_to(address, span.clone());
            let written = child.memory.write_words(table, span.start, &child_entries[span.clone()]);
            if written < span.len() {
                self.leave_all(&entries[span.start + written..span.end]);
                return Err(VmError::UnknownFrame);
            }
            Ok(())
        });
        if let Err(error) = built {
            child.release_everything();
            return Err(error);
        }
        // Only now, with the child complete, the parent's own private
        // writable pages become copy-on-write.
        let (memory, marked) = (&self.memory, &mut child_entries);
        let _ = self.for_each_leaf_table(|_, table, used, entries| {
            let mut changed = false;
            for (index, &current) in entries.iter().enumerate().take(used.end).skip(used.start) {
                let becomes_copy_on_write = private_writable(current) && current & WRITABLE != 0;
                changed |= becomes_copy_on_write;
                marked[index] = if becomes_copy_on_write { child_entry(current) } else { current };
            }
            if changed {
                memory.write_words(table, used.start, &marked[used]);
            }
            Ok(())
        });
        let mut flush = self.flush();
        flush.everything = true;
        Ok((child, self.owe(flush)))
    }

    /// Leaves the owner table for every frame `entries` hold (a fork
    /// undoing the joins of a leaf table it could not finish).
    fn leave_all(&self, entries: &[u64]) {
        for &current in entries.iter().filter(|&&current| entry::holds_frame(current)) {
            self.owners.leave(entry::frame(current));
        }
    }
}

/// A private page either side may write (now or after a copy).
fn private_writable(current: u64) -> bool {
    current & SHARED == 0 && current & (WRITABLE | COPY_ON_WRITE) != 0
}

/// What the child's entry for the parent's `current` holds: a private
/// writable page becomes copy-on-write, anything else is shared as it is.
fn child_entry(current: u64) -> u64 {
    if private_writable(current) {
        (current & !WRITABLE) | COPY_ON_WRITE
    } else {
        current
    }
}
