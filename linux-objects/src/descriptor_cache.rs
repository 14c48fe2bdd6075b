//! A thread's cache of its last descriptor look-ups: which open file
//! description descriptor `fd` names, kept while no capability anywhere has
//! been taken out of use since (`caps::SharedCaps::withdrawals`, published
//! under the database's lock). A look-up through the capability database
//! takes its lock and the description table's, ~170 instructions; a hit
//! here is a load, a compare and a reference count.
//!
//! Why that is enough: what a slot holds changes only by removing its
//! capability (close, revoke, the space's end) or by filling the slot once
//! it is empty, which needs a removal first; a revocation in progress
//! counts as soon as it claims the capability. A hit is a look-up that
//! happened before the withdrawal that would make it stale, as a call
//! racing a `close` on Linux may still use the file.
//!
//! The cache keeps a `Weak`, never the description itself: a closed
//! description must end when its last descriptor goes (a pipe's reader sees
//! end-of-file then), not when this thread next looks up that number.
//!
//! May not be shared between threads (one per thread, no lock) or be used
//! for anything but File and Pipe capabilities (what `open_files::file`
//! accepts).

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use caps::SpaceId;
use sync::GenerationCache;

use super::open_files::{self, OpenFile};
use kernel_objects::capabilities::caps;
use linux_abi::Errno;

/// Entries, chosen by the descriptor's low bits.
pub const ENTRIES: usize = 4;

/// The highest descriptor the batch table keeps, plus one: `poll`'s and
/// `select`'s (a table of 16 bytes per descriptor, made as far as used).
const BATCH_LIMIT: usize = 4096;

/// One thread's cache (see the module comment).
#[derive(Default)]
pub struct DescriptorCache {
    entries: [GenerationCache<(SpaceId, Weak<OpenFile>)>; ENTRIES],
    /// For batches (`poll`, `select`): indexed by descriptor, each entry
    /// good while the withdrawal count is the one it was filled at.
    batch: Vec<BatchEntry>,
    batch_space: Option<SpaceId>,
}

/// A descriptor's description, as of withdrawal count `generation`.
struct BatchEntry {
    generation: u64,
    file: Weak<OpenFile>,
}

/// The generation no withdrawal count reaches: an entry never filled.
const NEVER: u64 = u64::MAX;

impl DescriptorCache {
    /// The description behind descriptor `fd` of `space`, as
    /// [`open_files::file`] gives it.
    /// The descriptions behind `fds` of `space` (`None` for a descriptor
    /// that names none, u64::MAX among them), as [`open_files::files`]
    /// gives them: from the batch table when every one is there and good
    /// (a load, a compare and a reference count each, against ~150
    /// instructions through the database), else all through
    /// `open_files::files`, which refills the table.
    pub fn files(&mut self, space: SpaceId, fds: impl Iterator<Item = u64> + Clone) -> Result<Vec<Option<Arc<OpenFile>>>, Errno> {
        // Read before any look-up that fills the table: a withdrawal after
        // it makes what is filled now look stale, never the other way.
        let now = caps().withdrawals().current();
        if self.batch_space != Some(space) {
            self.batch.clear();
            self.batch_space = Some(space);
        }
        // Room for the most there can be (a `select` filters its range).
        let most = fds.size_hint().1.unwrap_or(0).min(BATCH_LIMIT);
        let mut files = Vec::new();
        files.try_reserve_exact(most).map_err(|_| Errno::ENOMEM)?;
        let mut all_kept = true;
        for fd in fds.clone() {
            let kept = self.batch.get(fd as usize).filter(|entry| entry.generation == now).and_then(|entry| entry.file.upgrade());
            all_kept &= kept.is_some();
            files.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            files.push(kept);
        }
        if all_kept {
            return Ok(files);
        }
        drop(files);
        let found = open_files::files(space, fds.clone())?;
        for (fd, file) in fds.zip(&found) {
            let (Some(file), Ok(fd)) = (file, usize::try_from(fd)) else { continue };
            if fd >= BATCH_LIMIT {
                continue;
            }
            if fd >= self.batch.len() {
                // No room: the table just stays shorter.
                if self.batch.try_reserve(fd + 1 - self.batch.len()).is_err() {
                    continue;
                }
                self.batch.resize_with(fd + 1, || BatchEntry { generation: NEVER, file: Weak::new() });
            }
            self.batch[fd] = BatchEntry { generation: now, file: Arc::downgrade(file) };
        }
        Ok(found)
    }

    pub fn file(&mut self, space: SpaceId, fd: u64) -> Result<Arc<OpenFile>, Errno> {
        let entry = &mut self.entries[fd as usize % ENTRIES];
        let mut fresh = None;
        let kept = entry.with(
            fd,
            caps().withdrawals(),
            || {
                let file = open_files::file(space, fd)?;
                let weak = Arc::downgrade(&file);
                fresh = Some(file);
                Ok::<_, Errno>((space, weak))
            },
            |(kept_space, weak)| if *kept_space == space { weak.upgrade() } else { None },
        )?;
        match fresh.or(kept) {
            Some(file) => Ok(file),
            // Another space's entry, or a description already ending.
            None => open_files::file(space, fd),
        }
    }
}
