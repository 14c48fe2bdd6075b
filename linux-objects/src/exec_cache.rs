//! Read-only segments of programs kept between `execve`s: the text and
//! read-only data of a program (and of its interpreter) are made once, as
//! a memory object, and mapped as private pages into every process that
//! runs it — no frame to zero, nothing to copy — as Linux maps program
//! text from its page cache. Writable segments are still copied per
//! process (`exec::map_segments`).
//!
//! An entry is named by the file as it was ([`FileKey`]: inode, size and
//! change times), so a program rewritten, or an inode number reused, never
//! finds an old entry. Frames are charged to the container of the thread
//! that first made the cache (the boot's root container), not to the
//! process that happened to run the program first. At most
//! [`MOST_PAGES`] are kept; beyond that the least recently used entries
//! that no process maps any more are let go.
//!
//! Known gap: an entry let go just after an `execve` looked it up and
//! before it mapped it leaves that process's space the frames' last owner,
//! which frees them against its own container rather than the cache's
//! (eviction starts only past 32 MiB of distinct program text).
//!
//! **Lock order**: the table's lock is taken around the memory objects'
//! lock and never around anything that reads a file or maps into a space.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use containers::ContainerId;
use kernel_objects::capabilities::memory_objects;
use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vfs::{InodeId, Stat, Timestamp};

/// Pages the cache may hold (32 MiB).
pub const MOST_PAGES: u64 = 8192;

/// The file a segment came from, as it was when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileKey {
    inode: InodeId,
    size: u64,
    modified: Timestamp,
    changed: Timestamp,
}

impl FileKey {
    /// The key of file `inode` whose status is `stat`.
    pub fn of(inode: InodeId, stat: &Stat) -> Self {
        Self { inode, size: stat.size, modified: stat.modified, changed: stat.changed }
    }
}

/// Where a segment lies: its address before relocation (a
/// position-independent file's base left out), its offset in the
/// file, its bytes in the file and in memory (`exec`'s `LoadPlan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentShape {
    pub address: u64,
    pub file_offset: u64,
    pub file_length: u64,
    pub memory_length: u64,
}

struct Entry {
    key: FileKey,
    shape: SegmentShape,
    handle: u64,
    pages: u64,
    last_used: u64,
}

struct Cache {
    entries: Vec<Entry>,
    pages: u64,
    /// Whom the frames are charged to (`None`: not set yet, no caching).
    container: Option<ContainerId>,
}

/// Taken inside the file tree's lock (7: `execve` reads the program under
/// it) and around the memory objects' (5).
static CACHE: KernelTicketLock<Cache> = KernelTicketLock::new(Level::new(6), Cache { entries: Vec::new(), pages: 0, container: None });
/// A clock of uses, for least-recently-used eviction.
static USES: AtomicU64 = AtomicU64::new(1);

/// Charges the cache's frames to the calling thread's container from now
/// on (the boot's root container; called once at boot).
pub fn charge_to_current_container() {
    CACHE.lock().container = Some(sched::current().container());
}

/// The memory object holding the segment `shape` of file `key`, made with
/// `pages` pages filled by `fill` if not cached; `None` when the segment
/// cannot be cached (too big, no memory, no container): the caller copies
/// it as before.
pub fn segment(key: FileKey, shape: SegmentShape, pages: u64, fill: impl FnOnce(u64) -> Result<(), Errno>) -> Option<u64> {
    let now = USES.fetch_add(1, Ordering::Relaxed);
    let container = {
        let mut cache = CACHE.lock();
        if let Some(entry) = cache.entries.iter_mut().find(|entry| entry.key == key && entry.shape == shape) {
            entry.last_used = now;
            return Some(entry.handle);
        }
        cache.container?
    };
    if pages == 0 || pages > MOST_PAGES / 4 || pages > memory_objects::MAX_PAGES {
        return None;
    }
    let handle = memory_objects::create(container, pages).ok()?;
    if fill(handle).is_err() {
        memory_objects::release(handle);
        return None;
    }
    let (kept, unused) = {
        let mut cache = CACHE.lock();
        if let Some(entry) = cache.entries.iter().find(|entry| entry.key == key && entry.shape == shape) {
            // Another exec made it meanwhile: use theirs.
            (Some(entry.handle), Some(handle))
        } else if cache.entries.try_reserve(1).is_err() {
            (None, Some(handle))
        } else {
            cache.entries.push(Entry { key, shape, handle, pages, last_used: now });
            cache.pages += pages;
            (Some(handle), None)
        }
    };
    if let Some(handle) = unused {
        memory_objects::release(handle);
    }
    evict_beyond(MOST_PAGES);
    kept
}

/// Lets go of least recently used entries no process maps until at most
/// `limit` pages are held (or none is left that may go).
fn evict_beyond(limit: u64) {
    loop {
        let victim = {
            let mut cache = CACHE.lock();
            if cache.pages <= limit {
                return;
            }
            let oldest_unmapped = cache
                .entries
                .iter()
                .enumerate()
                .filter(|(_, entry)| !memory_objects::mapped_elsewhere(entry.handle))
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(index, _)| index);
            let Some(index) = oldest_unmapped else { return };
            let entry = cache.entries.swap_remove(index);
            cache.pages -= entry.pages;
            entry.handle
        };
        memory_objects::release(victim);
    }
}

/// Pages held now (for `/proc/meminfo`-like reports and tests).
pub fn pages_held() -> u64 {
    CACHE.lock().pages
}
