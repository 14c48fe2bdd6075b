//! Copy-on-write fork. The child is built completely first — tables from
//! its own frame source, every frame joined in the owner table, pages that
//! either side may write marked copy-on-write in the child — and only then
//! are the parent's writable private pages turned copy-on-write too. So a
//! fork that runs out of memory destroys the half-built child and leaves
//! the parent exactly as it was.

use crate::entry::{self, COPY_ON_WRITE, WRITABLE};
use crate::space::{BATCH, SHARED};
use crate::{AddressSpace, FrameMemory, FrameSource, TlbFlush, VmError};

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
        // A batch of leaf entries at a time: read at once, joined in the
        // owner table, written into the child's table at once. The
        // child's leaf table for the 2 MiB the batch is in is looked up
        // once per table, not per batch.
        let mut child_entries = [0u64; BATCH];
        let mut leaf: Option<(u64, u64)> = None;
        let built = self.for_each_leaf_batch(|address, _, first, entries| {
            let span = address >> 21;
            let table = match leaf {
                Some((known, table)) if known == span => table,
                _ => {
                    let (table, _) = child.leaf_slot(address, true)?.ok_or(VmError::OutOfMemory)?;
                    leaf = Some((span, table));
                    table
                }
            };
            let into = &mut child_entries[..entries.len()];
            for (offset, (&current, slot)) in entries.iter().zip(into.iter_mut()).enumerate() {
                *slot = 0;
                if !entry::holds_frame(current) {
                    continue;
                }
                if let Err(error) = self.owners.join(entry::frame(current)) {
                    self.leave_all(&entries[..offset]);
                    return Err(error);
                }
                *slot = child_entry(current);
            }
            child.tables.widen_to(address, first..first + entries.len());
            let written = child.memory.write_words(table, first, into);
            if written < entries.len() {
                self.leave_all(&entries[written..]);
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
        let _ = self.for_each_leaf_batch(|_, table, first, entries| {
            let marked = &mut marked[..entries.len()];
            let mut changed = false;
            for (slot, &current) in marked.iter_mut().zip(entries) {
                let becomes_copy_on_write = private_writable(current) && current & WRITABLE != 0;
                changed |= becomes_copy_on_write;
                *slot = if becomes_copy_on_write { child_entry(current) } else { current };
            }
            if changed {
                memory.write_words(table, first, marked);
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
