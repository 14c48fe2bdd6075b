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

use caps::SpaceId;
use sync::GenerationCache;

use super::open_files::{self, OpenFile};
use kernel_objects::capabilities::caps;
use linux_abi::Errno;

/// Entries, chosen by the descriptor's low bits.
pub const ENTRIES: usize = 4;

/// One thread's cache (see the module comment).
#[derive(Default)]
pub struct DescriptorCache {
    entries: [GenerationCache<(SpaceId, Weak<OpenFile>)>; ENTRIES],
}

impl DescriptorCache {
    /// The description behind descriptor `fd` of `space`, as
    /// [`open_files::file`] gives it.
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
