//! The page cache: file pages kept in frames (memory objects, one page
//! each, charged to the container of the process that read them), one
//! index (`page_cache::PageCache`) for every file system, shared by
//! `read`, `write` and `MAP_SHARED` mappings (`file_mappings`).
//!
//! - A file system whose [`caches_pages`](vfs::FileSystem::caches_pages)
//!   (a disk's) has `read` served from the cache: a miss reads up to
//!   [`PAGES_PER_FILL`] pages from the file at once and keeps them.
//! - `write` stays write-through (the journal orders it as before) and
//!   copies the same bytes into the cached pages ([`written`]); a
//!   truncation drops or zeroes them ([`truncate`]).
//! - Pages a process maps shared are *marked*: stores through them reach
//!   the file by [`write_back`] — at `msync`, `fsync`, `sync`, the commit
//!   thread's rounds, an unmount, power-off, and before anything reads the
//!   file's bytes from its file system (a tmpfs `read`, a private mapping).
//! - When an allocation of frames fails, the kernel asks [`reclaim`] for
//!   pages back: the clock's unmarked, unmapped pages of files nobody maps.
//!
//! **Lock order**: every change of the index happens with the file tree's
//! sleep lock held (fills, copies of writes, truncations, removals), with
//! the index's spinlock ([`CACHE_LEVEL`]) taken inside it and around the
//! memory objects' locks; a cached page is copied out under the index's
//! lock, so the reclaimer (which takes only that lock) never frees a page
//! mid-copy. The loom model in `page-cache/src/loom_models.rs` checks
//! that protocol. Nothing here maps into an address space.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use containers::ContainerId;
use kernel_objects::capabilities::memory_objects;
use linux_abi::Errno;
use page_cache::{Added, PageCache};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vfs::{InodeId, Namespace};
use vmem::PAGE_SIZE;

/// Inside an open file's offset lock (9), around the memory objects'.
pub(crate) const CACHE_LEVEL: Level = Level::new(8);

pub(crate) static CACHE: KernelTicketLock<PageCache<InodeId, u64>> = KernelTicketLock::new(CACHE_LEVEL, PageCache::new());

/// How many files are held (mapped shared), kept with the index: a
/// memory file system's `read` asks whether its file has pages to write
/// back first, and with none held it skips the lock.
pub(crate) static HELD_FILES: AtomicUsize = AtomicUsize::new(0);

pub fn none_held() -> bool {
    HELD_FILES.load(Ordering::Relaxed) == 0
}

const PAGE: usize = PAGE_SIZE as usize;

/// The file-kind bits of a mode (`S_IFMT`).
const KIND_BITS: u32 = 0o170000;

/// Pages a miss reads from the file at once (64 KiB).
pub const PAGES_PER_FILL: usize = 16;

/// Pages given back per reclaim.
const RECLAIM_BATCH: usize = 32;

/// Reads file `inode` at `position` into `buffer` (the tree held):
/// through the cache where its file system keeps one, straight from the
/// file system otherwise (after writing back stores through shared
/// mappings). New pages are charged to `container`; one that cannot be
/// had is read without being kept.
pub fn read(tree: &mut Namespace, container: ContainerId, inode: InodeId, position: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
    if !tree.caches_pages(inode) {
        write_back(tree, inode)?;
        return tree.read(inode, position, buffer);
    }
    let stat = tree.stat(inode)?;
    if stat.mode & KIND_BITS != vfs::FileKind::Regular.mode_bits() {
        return tree.read(inode, position, buffer);
    }
    let end = stat.size.min(position.saturating_add(buffer.len() as u64));
    let mut done = 0usize;
    while position + (done as u64) < end {
        let at = position + done as u64;
        let (page, within) = (at / PAGE_SIZE, (at % PAGE_SIZE) as usize);
        let length = (PAGE - within).min((end - at) as usize);
        if copy_cached(inode, page, within, &mut buffer[done..done + length]) {
            done += length;
            continue;
        }
        match fill(tree, container, inode, page, stat.size, at, &mut buffer[done..(end - position) as usize]) {
            Ok(0) => break,
            Ok(count) => done += count,
            Err(errno) if done == 0 => return Err(errno),
            Err(_) => break,
        }
    }
    Ok(done)
}

/// Copies from cached page `page` of `inode`, from byte `within`, into
/// `out`, under the index's lock; false if the page is not cached.
fn copy_cached(inode: InodeId, page: u64, within: usize, out: &mut [u8]) -> bool {
    let mut cache = CACHE.lock();
    cache.get(inode, page).is_some_and(|handle| memory_objects::read(handle, within as u64, out).is_ok())
}

/// A miss at page `page`: reads the run of missing pages from there (at
/// most [`PAGES_PER_FILL`], not past the file's `size`) from the file,
/// keeps each as a cached page, and copies from byte `at` into `out`.
/// Returns the bytes copied.
fn fill(tree: &mut Namespace, container: ContainerId, inode: InodeId, page: u64, size: u64, at: u64, out: &mut [u8]) -> Result<usize, Errno> {
    let last = size.div_ceil(PAGE_SIZE);
    let pages = {
        let cache = CACHE.lock();
        (page..last.min(page + PAGES_PER_FILL as u64)).take_while(|&index| cache.peek(inode, index).is_none()).count()
    };
    let mut staging = Vec::new();
    staging.try_reserve_exact(pages.max(1) * PAGE).map_err(|_| Errno::ENOMEM)?;
    staging.resize(pages.max(1) * PAGE, 0);
    let start = page * PAGE_SIZE;
    let read = tree.read(inode, start, &mut staging)?;
    for (offset, contents) in staging[..read.div_ceil(PAGE) * PAGE].chunks(PAGE).enumerate() {
        keep(container, inode, page + offset as u64, contents);
    }
    let from = (at - start) as usize;
    let count = out.len().min(read.saturating_sub(from));
    out[..count].copy_from_slice(&staging[from..from + count]);
    Ok(count)
}

/// Free frames the cache leaves for allocations that cannot wait for it
/// to give pages back (page tables and kernel stacks, anything allocated
/// under a spinlock): below this, a fill gives pages back first, and
/// keeps nothing if that does not help (16 MiB).
const RESERVED_FRAMES: u64 = 4096;

/// Whether a page may be kept without eating into [`RESERVED_FRAMES`] or
/// into the last eighth of the kernel heap (each cached page costs the
/// heap about 70 bytes — its memory object's entry and its slot here —
/// and the heap is a sixteenth of memory: a cache of every free frame
/// would leave the heap nothing for anyone else).
fn room_to_keep() -> bool {
    let room = || {
        let (heap_free, heap_total) = machine::heap::usage();
        kernel_objects::physical_memory::free_frames_here() >= RESERVED_FRAMES && heap_free >= heap_total / 8
    };
    room() || (reclaim(None) > 0 && room())
}

/// Makes a page of `contents` and adds it as page `index` of `inode`
/// (a page already there wins); without a frame, nothing is kept.
fn keep(container: ContainerId, inode: InodeId, index: u64, contents: &[u8]) {
    if room_to_keep() {
        let _ = add_page(container, inode, index, contents);
    }
}

/// Makes a page of `contents` (charged to `container`) and adds it as
/// page `index` of `inode`; a page already there wins and ours goes back.
/// Nothing is kept on a failure.
fn add_page(container: ContainerId, inode: InodeId, index: u64, contents: &[u8]) -> Result<(), Errno> {
    let handle = memory_objects::create(container, 1)?;
    let added = memory_objects::write(handle, 0, contents).and_then(|()| CACHE.lock().add(inode, index, handle).map_err(|_| Errno::ENOMEM));
    if added != Ok(Added::Added) {
        memory_objects::release(handle);
    }
    added.map(drop)
}

/// Makes (charged to `container`, filled from the file) the pages of
/// `indices` of `inode` that are not cached, and returns every page of
/// the range, for a shared mapping (the tree held), marked for write-back
/// if `may_store`. The file must be held first ([`hold`]): its pages then
/// stay until it is let go.
pub(crate) fn pages_for_mapping(tree: &mut Namespace, container: ContainerId, inode: InodeId, indices: core::ops::Range<u64>, may_store: bool) -> Result<Vec<u64>, Errno> {
    let mut missing = Vec::new();
    missing.try_reserve_exact((indices.end - indices.start) as usize).map_err(|_| Errno::ENOMEM)?;
    CACHE.lock().visit_missing(inode, indices.clone(), |index| missing.push(index));
    // Pages are made now, not at first touch: a mapping larger than the
    // free memory (a 2 GiB map of a sparse file) is refused before it
    // takes every frame.
    if missing.len() as u64 + RESERVED_FRAMES > kernel_objects::physical_memory::free_frames_here() {
        return Err(Errno::ENOMEM);
    }
    let mut added = 0;
    let made = fill_for_mapping(tree, container, inode, &missing, &mut added);
    if let Err(errno) = made {
        // A failed mapping keeps nothing it made: those pages are mapped
        // nowhere yet, and a held file's pages are never reclaimed.
        let mut cache = CACHE.lock();
        for &index in &missing[..added] {
            if let Some(handle) = cache.remove(inode, index) {
                memory_objects::release(handle);
            }
        }
        return Err(errno);
    }
    let mut handles = Vec::new();
    handles.try_reserve_exact((indices.end - indices.start) as usize).map_err(|_| Errno::ENOMEM)?;
    let mut cache = CACHE.lock();
    cache.visit(inode, indices.clone(), |_, handle| handles.push(handle));
    if may_store {
        // Stores may come through them from now on.
        cache.mark(inode, indices.clone());
    }
    if handles.len() as u64 != indices.end - indices.start {
        return Err(Errno::ENOMEM);
    }
    Ok(handles)
}

/// Makes and fills the pages `missing` (sorted) of `inode`, reading the
/// file a run of up to [`PAGES_PER_FILL`] pages at a time; `added` counts
/// the leading entries of `missing` that were added.
fn fill_for_mapping(tree: &mut Namespace, container: ContainerId, inode: InodeId, missing: &[u64], added_count: &mut usize) -> Result<(), Errno> {
    let mut staging = Vec::new();
    staging.try_reserve_exact(PAGES_PER_FILL * PAGE).map_err(|_| Errno::ENOMEM)?;
    staging.resize(PAGES_PER_FILL * PAGE, 0);
    let mut at = 0;
    while at < missing.len() {
        let run = missing[at..].iter().enumerate().take_while(|&(offset, &index)| offset < PAGES_PER_FILL && index == missing[at] + offset as u64).count();
        let bytes = &mut staging[..run * PAGE];
        bytes.fill(0);
        tree.read(inode, missing[at] * PAGE_SIZE, bytes)?;
        for (offset, contents) in bytes.chunks(PAGE).enumerate() {
            add_page(container, inode, missing[at] + offset as u64, contents)?;
            *added_count += 1;
        }
        at += run;
    }
    Ok(())
}

/// Holds `inode` (a process maps it shared): its pages are not reclaimed
/// and its entry stays until [`forget`]. Returns whether it was not held
/// before (the caller then keeps the file open for it).
pub(crate) fn hold(inode: InodeId) -> Result<bool, Errno> {
    let mut cache = CACHE.lock();
    let newly = cache.hold(inode).map_err(|_| Errno::ENOMEM)?;
    HELD_FILES.store(cache.files_held(), Ordering::Relaxed);
    Ok(newly)
}

/// Whether some space maps pages of `inode` shared.
pub fn is_held(inode: InodeId) -> bool {
    !none_held() && CACHE.lock().is_held(inode)
}

/// After `data` was written to `inode` at `position` (the tree still
/// held): the cached pages it covers get the same bytes.
pub fn written(inode: InodeId, position: u64, data: &[u8]) {
    let end = position.saturating_add(data.len() as u64);
    let cache = CACHE.lock();
    cache.visit(inode, position / PAGE_SIZE..end.div_ceil(PAGE_SIZE), |index, handle| {
        let start = (index * PAGE_SIZE).max(position);
        let stop = ((index + 1) * PAGE_SIZE).min(end);
        let bytes = &data[(start - position) as usize..(stop - position) as usize];
        let _ = memory_objects::write(handle, start % PAGE_SIZE, bytes);
    });
}

/// Truncates (or extends) file `inode` to `length`, its cached pages with
/// it (the tree held).
pub fn truncate(tree: &mut Namespace, inode: InodeId, length: u64) -> Result<(), Errno> {
    tree.truncate(inode, length, crate::clock::now())?;
    truncated(inode, length);
    Ok(())
}

/// After `inode` was cut to `length` (the tree still held): bytes of
/// cached pages past the end read as zeroes (as a later extension of the
/// file does); whole pages past it leave the cache unless a process maps
/// the file (its mappings keep them, zeroed).
fn truncated(inode: InodeId, length: u64) {
    let zeroes = [0u8; PAGE];
    let mut cache = CACHE.lock();
    cache.visit(inode, length / PAGE_SIZE..u64::MAX, |index, handle| {
        let from = length.saturating_sub(index * PAGE_SIZE) as usize;
        let _ = memory_objects::write(handle, from as u64, &zeroes[from..]);
    });
    if !cache.is_held(inode) {
        cache.remove_from(inode, length.div_ceil(PAGE_SIZE), memory_objects::release);
    }
}

/// Lets every page of `inode` go (its inode was freed, or its last name
/// went and nobody maps it); returns whether the file was held (the
/// caller then closes the file it kept open).
pub fn forget(inode: InodeId) -> bool {
    let mut cache = CACHE.lock();
    let held = cache.remove_file(inode, memory_objects::release);
    HELD_FILES.store(cache.files_held(), Ordering::Relaxed);
    held
}

/// Lets every page of file system `file_system` go (it was unmounted:
/// its inode numbers mean nothing now).
pub fn forget_file_system(file_system: vfs::FileSystemId) {
    let mut cache = CACHE.lock();
    cache.remove_files(|inode| inode.file_system == file_system, memory_objects::release);
    HELD_FILES.store(cache.files_held(), Ordering::Relaxed);
}

/// After an open description of `inode` closed (the tree held): if that
/// freed the inode (an unlinked file's last close), its pages go. A file
/// held for shared mappings that has no name and no other description
/// (a memfd, or a file mapped after its last name went) is let go as
/// `file_mappings::unlinked` lets go of one whose last name goes later:
/// its mappings keep sharing its pages, and the hold's open closes, so
/// the inode is freed. (Kept held, it and its pages stayed for good: the
/// allocation-failure driver's memfd lost 32 KiB a run.)
pub fn closed(tree: &mut Namespace, inode: InodeId) {
    let nameless = tree.stat(inode).map_or(true, |stat| stat.links == 0);
    if nameless && is_held(inode) {
        // The hold's own open is the one left.
        if tree.open_descriptions(inode) == Some(1) && forget(inode) {
            tree.closed(inode);
        }
        return;
    }
    if !tree.caches_pages(inode) {
        return;
    }
    if nameless {
        forget(inode);
    }
}

/// Copies the marked pages of `inode` (pages mapped shared, which may
/// hold stores) into the file where they differ from it, up to its size
/// (the tree held); a page nobody maps any more loses its mark.
pub fn write_back(tree: &mut Namespace, inode: InodeId) -> Result<(), Errno> {
    // Marks are made only on pages of held files, and go with the hold.
    if none_held() {
        return Ok(());
    }
    let mut pages: Vec<(u64, u64)> = Vec::new();
    let mut short = false;
    CACHE.lock().visit_marked(inode, |index, handle| {
        if pages.try_reserve(1).is_ok() {
            pages.push((index, handle));
        } else {
            short = true;
        }
    });
    if short {
        return Err(Errno::ENOMEM);
    }
    if pages.is_empty() {
        return Ok(());
    }
    let size = tree.stat(inode)?.size;
    let (mut mapped, mut stored) = ([0u8; PAGE], [0u8; PAGE]);
    for (index, handle) in pages {
        let start = index * PAGE_SIZE;
        if start < size {
            let length = (size - start).min(PAGE_SIZE) as usize;
            memory_objects::read(handle, 0, &mut mapped[..length])?;
            // Only changed pages are copied (an unchanged file from the
            // initramfs stays borrowed, not copied into the heap).
            tree.read(inode, start, &mut stored[..length])?;
            if mapped[..length] != stored[..length] {
                tree.overwrite(inode, start, &mapped[..length])?;
            }
        }
        if !memory_objects::mapped_elsewhere(handle) {
            CACHE.lock().unmark(inode, index);
        }
    }
    Ok(())
}

/// [`write_back`] of every file with marked pages (the tree held), for
/// `sync`, the commit thread, unmounting and power-off. Returns the first
/// failure after trying every file.
pub fn write_back_all(tree: &mut Namespace) -> Result<(), Errno> {
    let mut files: Vec<InodeId> = Vec::new();
    CACHE.lock().visit_files_with_marks(|inode| {
        if files.try_reserve(1).is_ok() {
            files.push(inode);
        }
    });
    let mut outcome = Ok(());
    for inode in files {
        if let Err(errno) = write_back(tree, inode) {
            outcome = outcome.and(Err(errno));
        }
    }
    outcome
}

/// Gives pages back to the machine after an allocation failed: up to
/// [`RECLAIM_BATCH`] of the clock's choice — cached, unmarked, of a file
/// nobody maps, mapped by no space, and charged to `container` when its
/// quota is what ran out. Takes the index's lock and the memory objects':
/// callers hold no spinlock (the allocator asks only with interrupts on,
/// which every spinlock turns off). Returns how many pages went.
pub fn reclaim(container: Option<ContainerId>) -> usize {
    let mut victims = [0u64; RECLAIM_BATCH];
    let count = {
        let mut cache = CACHE.lock();
        let mut count = 0;
        cache.choose_victims(
            RECLAIM_BATCH,
            |handle| container.is_none_or(|owner| memory_objects::charged_to(handle) == Some(owner)) && !memory_objects::mapped_elsewhere(handle),
            |_, _, handle| {
                victims[count] = handle;
                count += 1;
            },
        );
        count
    };
    for handle in &victims[..count] {
        memory_objects::release(*handle);
    }
    count
}

/// After a user page fault found no frame: pages charged to `container`
/// go first (its quota may be what ran out), then anyone's. Returns how
/// many went (0: nothing left to give; the fault fails).
pub fn reclaim_for(container: ContainerId) -> usize {
    match reclaim(Some(container)) {
        0 => reclaim(None),
        count => count,
    }
}

/// The reclaimer as `kernel_objects` calls it.
pub static RECLAIMER: kernel_objects::kernel_containers::Reclaimer = reclaim;

/// Pages cached now, and what the index has done (for `/proc/meminfo`
/// and the tests).
pub fn statistics() -> (usize, page_cache::Statistics) {
    let cache = CACHE.lock();
    (cache.resident(), cache.statistics())
}
