//! Copy-on-write fork. The child is built completely first — tables from
//! its own frame source, every frame joined in the owner table, pages that
//! either side may write marked copy-on-write in the child — and only then
//! are the parent's writable private pages turned copy-on-write too. So a
//! fork that runs out of memory destroys the half-built child and leaves
//! the parent exactly as it was.

use crate::entry::{self, COPY_ON_WRITE, WRITABLE};
use crate::space::SHARED;
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
        // The child's leaf table for the 2 MiB the walk is in: one walk of
        // the child's tables per leaf table, not per page.
        let mut leaf: Option<(u64, u64)> = None;
        let built = self.for_each_leaf(|address, _, _, current| {
            let private_writable = current & SHARED == 0 && current & (WRITABLE | COPY_ON_WRITE) != 0;
            let child_entry = if private_writable { (current & !WRITABLE) | COPY_ON_WRITE } else { current };
            let span = address >> 21;
            let table = match leaf {
                Some((known, table)) if known == span => table,
                _ => {
                    let (table, _) = child.leaf_slot(address, true)?.ok_or(VmError::OutOfMemory)?;
                    leaf = Some((span, table));
                    table
                }
            };
            let index = entry::index(address, 0);
            self.owners.join(entry::frame(current))?;
            if !child.memory.write_word(table, index, child_entry) {
                self.owners.leave(entry::frame(current));
                return Err(VmError::UnknownFrame);
            }
            Ok(())
        });
        if let Err(error) = built {
            child.release_everything();
            return Err(error);
        }
        let memory = &self.memory;
        let _ = self.for_each_leaf(|_, table, index, current| {
            if current & SHARED == 0 && current & WRITABLE != 0 {
                memory.write_word(table, index, (current & !WRITABLE) | COPY_ON_WRITE);
            }
            Ok(())
        });
        let mut flush = self.flush();
        flush.everything = true;
        Ok((child, self.owe(flush)))
    }
}
