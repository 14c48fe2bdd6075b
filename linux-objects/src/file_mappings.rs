//! Shared mappings of files (`mmap` with `MAP_SHARED` of a tmpfs file):
//! each page of a file mapped shared gets one memory object (a frame,
//! `kernel_objects::capabilities::memory_objects`), filled from the file
//! and mapped into every space that maps that page, so processes sharing a
//! file share its memory (POSIX shared memory under `/dev/shm`, `sem_open`
//! semaphores, databases' mapped files).
//!
//! The file's bytes in the tmpfs and its mapped pages are kept the same:
//! `write`/`truncate` copy into the pages after changing the file, and
//! everything that reads the file's bytes (`read`, a private mapping,
//! `msync`) first copies the pages back ([`write_back`]). A mapped file
//! stays open (its inode cannot be reused) until it is unlinked; then its
//! pages stay shared among the spaces that map them, no longer tied to the
//! file.
//!
//! **Lock order**: the table's lock ([`MAPPINGS_LEVEL`]) is a spinlock:
//! it is taken around the memory objects' locks, never around the tree
//! (a sleep lock: reading or writing the file may wait for a disk), and
//! nothing here maps into an address space while holding it.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel_objects::capabilities::memory_objects;
use kernel_objects::capabilities::NativeProcess;
use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vfs::InodeId;
use vmem::{Rights, PAGE_SIZE};

use crate::fs;

/// Inside an open file's offset lock (9), outside the tree (7).
const MAPPINGS_LEVEL: Level = Level::new(8);

/// The shared pages of one file: a memory object per page, by page index.
struct MappedFile {
    inode: InodeId,
    pages: Vec<Option<u64>>,
}

static MAPPINGS: KernelTicketLock<Vec<MappedFile>> = KernelTicketLock::new(MAPPINGS_LEVEL, Vec::new());

/// How many files have shared pages (kept with the table, under its lock):
/// every `read` and `write` of a file asks, so with none mapped they skip
/// the table's lock. A file mapped concurrently has nothing stored through
/// its pages yet that a racing read could miss.
static MAPPED_FILES: AtomicUsize = AtomicUsize::new(0);

fn none_mapped() -> bool {
    MAPPED_FILES.load(Ordering::Relaxed) == 0
}

const PAGE: usize = PAGE_SIZE as usize;

/// Whether some space maps pages of `inode` shared (its bytes may then
/// change without its times changing).
pub fn is_mapped(inode: InodeId) -> bool {
    !none_mapped() && MAPPINGS.lock().iter().any(|file| file.inode == inode)
}

/// Maps `length` bytes (whole pages) of file `inode` from byte `offset`
/// (page-aligned) at `address` of `process`, shared, with `rights`. The
/// pages are made and filled from the file on first use. All or nothing:
/// a failure unmaps what was mapped.
pub fn map(process: &NativeProcess, inode: InodeId, offset: u64, length: u64, address: u64, rights: Rights) -> Result<(), Errno> {
    let first = offset / PAGE_SIZE;
    let count = length / PAGE_SIZE;
    let handles = pages_of(process, inode, first, count)?;
    for (index, handle) in handles.iter().enumerate() {
        let at = address + index as u64 * PAGE_SIZE;
        if let Err(errno) = memory_objects::map_into(process, at, *handle, rights) {
            if index > 0 {
                if let Ok(Ok(flush)) = process.with_memory(|memory| memory.unmap(address, index as u64 * PAGE_SIZE)) {
                    kernel_objects::address_spaces::carry_out(flush);
                }
            }
            return Err(errno);
        }
    }
    Ok(())
}

/// Which file page (its inode and page index) the shared frame at
/// physical address `frame` is, if it is one (`mremap` growing a shared
/// file mapping maps the file's next pages).
pub fn page_holding(frame: u64) -> Option<(InodeId, u64)> {
    if none_mapped() {
        return None;
    }
    let mappings = MAPPINGS.lock();
    mappings.iter().find_map(|file| {
        file.pages.iter().position(|page| page.is_some_and(|handle| memory_objects::holds_frame(handle, frame))).map(|index| (file.inode, index as u64))
    })
}

/// Pages read from the file with one hold of the tree when a mapping's
/// pages are made (64 KiB).
const PAGES_PER_READ: usize = 16;

/// The memory objects of pages `first..first + count` of `inode`, made
/// (charged to `process`'s container) and filled where missing. The file
/// is read outside the table's lock (a disk read may sleep); a page made
/// meanwhile by another mapper wins and ours is let go.
fn pages_of(process: &NativeProcess, inode: InodeId, first: u64, count: u64) -> Result<Vec<u64>, Errno> {
    let end = first.checked_add(count).filter(|end| *end <= (1 << 32)).ok_or(Errno::ENOMEM)? as usize;
    let mut handles = Vec::new();
    handles.try_reserve_exact(count as usize).map_err(|_| Errno::ENOMEM)?;
    ensure_entry(inode)?;
    let missing = {
        let table = MAPPINGS.lock();
        let file = table.iter().find(|file| file.inode == inode).ok_or(Errno::ENOENT)?;
        let mut missing = Vec::new();
        missing.try_reserve_exact(end - first as usize).map_err(|_| Errno::ENOMEM)?;
        missing.extend((first as usize..end).filter(|&page| file.pages.get(page).copied().flatten().is_none()));
        missing
    };
    let mut made: Vec<(usize, u64)> = Vec::new();
    let filled = made.try_reserve_exact(missing.len()).map_err(|_| Errno::ENOMEM).and_then(|()| fill(process, inode, &missing, &mut made));
    let mut unused = Vec::new();
    let installed = install(inode, first as usize..end, &mut made, &mut unused, &mut handles);
    for handle in unused.into_iter().chain(made.into_iter().map(|(_, handle)| handle)) {
        memory_objects::release(handle);
    }
    installed?;
    filled?;
    if handles.len() != count as usize {
        return Err(Errno::ENOMEM);
    }
    Ok(handles)
}

/// Puts the pages `made` into `inode`'s entry where it has none (a page
/// another mapper made meanwhile wins: ours go to `unused`), then appends
/// the entry's handles for `pages` to `handles`.
fn install(inode: InodeId, pages: core::ops::Range<usize>, made: &mut Vec<(usize, u64)>, unused: &mut Vec<u64>, handles: &mut Vec<u64>) -> Result<(), Errno> {
    let mut table = MAPPINGS.lock();
    let file = table.iter_mut().find(|file| file.inode == inode).ok_or(Errno::ENOENT)?;
    if file.pages.len() < pages.end {
        file.pages.try_reserve(pages.end - file.pages.len()).map_err(|_| Errno::ENOMEM)?;
        file.pages.resize(pages.end, None);
    }
    for (page, handle) in made.drain(..) {
        match file.pages[page] {
            None => file.pages[page] = Some(handle),
            Some(_) => unused.push(handle),
        }
    }
    handles.extend(file.pages[pages].iter().flatten());
    Ok(())
}

/// The table's entry for `inode`, made (the mapping holds the file open:
/// its inode is not reused) if there is none.
fn ensure_entry(inode: InodeId) -> Result<(), Errno> {
    if MAPPINGS.lock().iter().any(|file| file.inode == inode) {
        return Ok(());
    }
    fs::with(|tree| tree.opened(inode))?;
    let added = {
        let mut table = MAPPINGS.lock();
        if table.iter().any(|file| file.inode == inode) {
            Ok(false)
        } else if table.try_reserve(1).is_err() {
            Err(Errno::ENOMEM)
        } else {
            table.push(MappedFile { inode, pages: Vec::new() });
            MAPPED_FILES.store(table.len(), Ordering::Relaxed);
            Ok(true)
        }
    };
    if added != Ok(true) {
        // Another mapper made it first, or no room: the open is undone.
        let _ = fs::with(|tree| {
            tree.closed(inode);
            Ok(())
        });
    }
    added.map(drop)
}

/// Makes and fills a memory object for each page of `missing` (sorted),
/// reading the file a run of up to [`PAGES_PER_READ`] pages at a time.
fn fill(process: &NativeProcess, inode: InodeId, missing: &[usize], made: &mut Vec<(usize, u64)>) -> Result<(), Errno> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(PAGES_PER_READ * PAGE).map_err(|_| Errno::ENOMEM)?;
    buffer.resize(PAGES_PER_READ * PAGE, 0);
    let mut at = 0;
    while at < missing.len() {
        let run = missing[at..].iter().enumerate().take_while(|&(offset, &page)| offset < PAGES_PER_READ && page == missing[at] + offset).count();
        let bytes = &mut buffer[..run * PAGE];
        bytes.fill(0);
        fs::with(|tree| tree.read(inode, missing[at] as u64 * PAGE_SIZE, bytes))?;
        for (offset, contents) in bytes.chunks(PAGE).enumerate() {
            let handle = memory_objects::create(process.container(), 1)?;
            if let Err(errno) = memory_objects::write(handle, 0, contents) {
                memory_objects::release(handle);
                return Err(errno);
            }
            made.push((missing[at] + offset, handle));
        }
        at += run;
    }
    Ok(())
}

/// Copies the mapped pages of `inode` (if any) back into the file, up to
/// its size, so that reads of the file see what was stored through them.
pub fn write_back(inode: InodeId) -> Result<(), Errno> {
    if none_mapped() {
        return Ok(());
    }
    // The pages are listed under the table's lock and copied outside it
    // (the file's writes may wait for a disk).
    let pages: Vec<(usize, u64)> = {
        let table = MAPPINGS.lock();
        let Some(file) = table.iter().find(|file| file.inode == inode) else { return Ok(()) };
        let mut pages = Vec::new();
        pages.try_reserve_exact(file.pages.len()).map_err(|_| Errno::ENOMEM)?;
        pages.extend(file.pages.iter().enumerate().filter_map(|(page, handle)| handle.map(|handle| (page, handle))));
        pages
    };
    let size = fs::with(|tree| tree.stat(inode))?.size;
    let (mut mapped, mut stored) = ([0u8; PAGE], [0u8; PAGE]);
    for (page, handle) in pages {
        let start = page as u64 * PAGE_SIZE;
        if start >= size {
            continue;
        }
        let length = (size - start).min(PAGE_SIZE) as usize;
        memory_objects::read(handle, 0, &mut mapped[..length])?;
        // Only changed pages are copied (an unchanged file from the
        // initramfs stays borrowed, not copied into the heap).
        fs::with(|tree| {
            tree.read(inode, start, &mut stored[..length])?;
            if mapped[..length] != stored[..length] {
                tree.overwrite(inode, start, &mapped[..length])?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// After `data` was written to `inode` at `position`: the mapped pages it
/// covers get the same bytes.
pub fn written(inode: InodeId, position: u64, data: &[u8]) {
    if none_mapped() {
        return;
    }
    let table = MAPPINGS.lock();
    let Some(file) = table.iter().find(|file| file.inode == inode) else { return };
    let mut done = 0usize;
    while done < data.len() {
        let at = position + done as u64;
        let (page, within) = ((at / PAGE_SIZE) as usize, (at % PAGE_SIZE) as usize);
        let chunk = (data.len() - done).min(PAGE - within);
        if let Some(Some(handle)) = file.pages.get(page) {
            let _ = memory_objects::write(*handle, within as u64, &data[done..done + chunk]);
        }
        done += chunk;
    }
}

/// After `inode` was truncated to `length`: mapped pages past the new end
/// read as zeroes (as a later extension of the file does).
pub fn truncated(inode: InodeId, length: u64) {
    if none_mapped() {
        return;
    }
    let table = MAPPINGS.lock();
    let Some(file) = table.iter().find(|file| file.inode == inode) else { return };
    let zeroes = [0u8; PAGE];
    for (page, handle) in file.pages.iter().enumerate() {
        let start = page as u64 * PAGE_SIZE;
        let Some(handle) = handle.filter(|_| start + PAGE_SIZE > length) else { continue };
        let from = length.saturating_sub(start) as usize;
        let _ = memory_objects::write(handle, from as u64, &zeroes[from..]);
    }
}

/// After `inode` lost a name: once it has none, its pages are no longer
/// the file's (the spaces mapping them keep sharing them) and the file is
/// let go.
pub fn unlinked(inode: InodeId) {
    if fs::with(|tree| tree.stat(inode)).is_ok_and(|stat| stat.links > 0) {
        return;
    }
    let forgotten = {
        let mut table = MAPPINGS.lock();
        let forgotten = table.iter().position(|file| file.inode == inode).map(|index| table.swap_remove(index));
        MAPPED_FILES.store(table.len(), Ordering::Relaxed);
        forgotten
    };
    if let Some(file) = forgotten {
        for handle in file.pages.into_iter().flatten() {
            memory_objects::release(handle);
        }
        let _ = fs::with(|tree| {
            tree.closed(inode);
            Ok(())
        });
    }
}
