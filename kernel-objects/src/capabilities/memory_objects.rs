//! The objects behind memory capabilities: runs of frames the kernel
//! allocated for a process, charged to its container. A capability names
//! one by its handle (a table index and a generation, so a stale handle
//! finds nothing); the object itself is one owner of each frame in the
//! owner table, so unmapping it from a space never frees it. The frames go
//! back when the object's last capability is gone.
//!
//! Besides capabilities, the Linux personality keeps objects as the shared
//! pages of files mapped `MAP_SHARED` ([`read()`], [`write()`], [`map_into`]).
//! Releasing an object a space still maps is safe: the space is an owner
//! of each frame too, and the last owner frees it.
//!
//! Must never hand out a frame twice or free one a space still maps.

use alloc::vec::Vec;

use containers::ContainerId;
use machine::frame_access::SharedPage;
use crate::untyped_memory::{OwnedFrame, SharedFrame};
use spinlock::kernel::KernelTicketLock;
use vmem::{LeaveOutcome, PAGE_SIZE};

use super::native_calls::Sharing;
use super::MEMORY_OBJECTS_LEVEL;
use crate::address_spaces::owners;
use linux_abi::Errno;
use crate::kernel_containers::free_charged_frame;

/// The most pages one memory object may have.
pub const MAX_PAGES: u64 = 4096;

struct MemoryObject {
    /// One reference to each page (the machine's record counts it).
    frames: Pages,
    container: ContainerId,
}

/// An object's pages: one kept in the entry itself (the page cache makes
/// an object per cached page, and a vector per object would cost the heap
/// a block each), or several in a vector.
enum Pages {
    One(SharedPage),
    Many(Vec<SharedPage>),
}

impl Pages {
    fn of(mut pages: Vec<SharedPage>) -> Self {
        match pages.len() {
            1 => pages.pop().map_or(Pages::Many(pages), Pages::One),
            _ => Pages::Many(pages),
        }
    }

    fn as_slice(&self) -> &[SharedPage] {
        match self {
            Pages::One(page) => core::slice::from_ref(page),
            Pages::Many(pages) => pages,
        }
    }
}

struct Entry {
    generation: u32,
    object: Option<MemoryObject>,
    /// While empty: the next empty entry's index (`NO_ENTRY`: none).
    next_empty: usize,
}

const NO_ENTRY: usize = usize::MAX;

/// Entries per chunk of the table.
const CHUNK_ENTRIES: usize = 256;

/// Every object by index, in chunks of [`CHUNK_ENTRIES`] (the table grows
/// a chunk at a time, never by copying itself into one larger block: the
/// page cache makes an object per cached page, hundreds of thousands of
/// them, and the kernel heap may have no single block that large — a
/// table in one `Vec` stopped growing at 16,384 entries). Empty entries
/// are linked through `next_empty`, so making an object takes O(1) and a
/// release never allocates.
struct Table {
    chunks: Vec<Vec<Entry>>,
    first_empty: usize,
    made: usize,
}

impl Table {
    fn get(&self, index: usize) -> Option<&Entry> {
        self.chunks.get(index / CHUNK_ENTRIES)?.get(index % CHUNK_ENTRIES)
    }

    fn get_mut(&mut self, index: usize) -> Option<&mut Entry> {
        self.chunks.get_mut(index / CHUNK_ENTRIES)?.get_mut(index % CHUNK_ENTRIES)
    }

    /// An empty entry's index: a freed one, or a new one (None without
    /// memory for it). It is off the empty list from here.
    fn empty_entry(&mut self) -> Option<usize> {
        if self.first_empty != NO_ENTRY {
            let index = self.first_empty;
            self.first_empty = self.get(index)?.next_empty;
            return Some(index);
        }
        if self.made % CHUNK_ENTRIES == 0 {
            let mut chunk = Vec::new();
            chunk.try_reserve_exact(CHUNK_ENTRIES).ok()?;
            self.chunks.try_reserve(1).ok()?;
            self.chunks.push(chunk);
        }
        let chunk = self.chunks.last_mut()?;
        chunk.push(Entry { generation: 0, object: None, next_empty: NO_ENTRY });
        self.made += 1;
        Some(self.made - 1)
    }

    /// Empties entry `index` and takes what it held.
    fn take(&mut self, index: usize) -> Option<MemoryObject> {
        let first_empty = self.first_empty;
        let entry = self.get_mut(index)?;
        let object = entry.object.take()?;
        entry.next_empty = first_empty;
        self.first_empty = index;
        Some(object)
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.chunks.iter().flatten()
    }
}

static TABLE: KernelTicketLock<Table> = KernelTicketLock::new(MEMORY_OBJECTS_LEVEL, Table { chunks: Vec::new(), first_empty: NO_ENTRY, made: 0 });

/// A new object of `pages` zeroed frames charged to `container`; returns
/// its handle. Refused whole (nothing kept) when memory or quota runs out.
pub fn create(container: ContainerId, pages: u64) -> Result<u64, Errno> {
    if pages == 0 || pages > MAX_PAGES {
        return Err(Errno::EINVAL);
    }
    let owners = owners().ok_or(Errno::ENOMEM)?;
    let mut frames = Vec::new();
    frames.try_reserve_exact(pages as usize).map_err(|_| Errno::ENOMEM)?;
    for _ in 0..pages {
        let Ok(mut frame) = OwnedFrame::allocate(container) else {
            give_back(container, frames);
            return Err(Errno::ENOMEM);
        };
        if !frame.zero() || owners.join(frame.address()).is_err() {
            give_back(container, frames);
            return Err(Errno::ENOMEM); // `frame` drops: freed
        }
        // The object owns it from here; its last owner frees it.
        match frame.into_frame().map(machine::frame_access::Frame::into_shared) {
            Some(Ok(page)) => frames.push(page),
            Some(Err(held)) => {
                owners.leave(held.address());
                free_charged_frame(container, held);
                give_back(container, frames);
                return Err(Errno::ENOMEM);
            }
            None => {
                give_back(container, frames);
                return Err(Errno::ENOMEM);
            }
        }
    }
    let mut table = TABLE.lock();
    let Some(index) = table.empty_entry() else {
        drop(table);
        give_back(container, frames);
        return Err(Errno::ENOMEM);
    };
    let Some(entry) = table.get_mut(index) else {
        drop(table);
        give_back(container, frames);
        return Err(Errno::ENOMEM);
    };
    entry.generation = entry.generation.wrapping_add(1);
    entry.object = Some(MemoryObject { frames: Pages::of(frames), container });
    Ok(handle(index, entry.generation))
}

/// The frames of pages `first..first + count` of the object, if it exists
/// and has them.
pub(crate) fn frames(handle: u64, first: u64, count: u64) -> Result<Vec<SharedFrame>, Errno> {
    let table = TABLE.lock();
    let object = lookup(&table, handle).ok_or(Errno::EBADF)?;
    let end = first.checked_add(count).ok_or(Errno::EINVAL)?;
    let run = object.frames.as_slice().get(first as usize..end as usize).ok_or(Errno::EINVAL)?;
    let mut lent = Vec::new();
    lent.try_reserve_exact(run.len()).map_err(|_| Errno::ENOMEM)?;
    lent.extend(run.iter().map(|page| SharedFrame::of_object(page.address())));
    Ok(lent)
}

/// Copies `buffer.len()` bytes at byte `offset` of the object into
/// `buffer` (EBADF for a stale handle, EINVAL past its end).
pub fn read(handle: u64, offset: u64, buffer: &mut [u8]) -> Result<(), Errno> {
    each_frame(handle, offset, buffer.len(), |page, within, range| page.read_bytes(within, &mut buffer[range]))
}

/// Copies `bytes` to byte `offset` of the object.
pub fn write(handle: u64, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
    each_frame(handle, offset, bytes.len(), |page, within, range| page.write_bytes(within, &bytes[range]))
}

/// Calls `copy(page, offset in it, range of the caller's buffer)` for each
/// page `[offset, offset + length)` of the object touches.
fn each_frame(handle: u64, offset: u64, length: usize, mut copy: impl FnMut(&SharedPage, usize, core::ops::Range<usize>) -> bool) -> Result<(), Errno> {
    let table = TABLE.lock();
    let object = lookup(&table, handle).ok_or(Errno::EBADF)?;
    let end = offset.checked_add(length as u64).filter(|end| *end <= object.frames.as_slice().len() as u64 * PAGE_SIZE).ok_or(Errno::EINVAL)?;
    let mut at = offset;
    while at < end {
        let (page, within) = ((at / PAGE_SIZE) as usize, (at % PAGE_SIZE) as usize);
        let chunk = (end - at).min(PAGE_SIZE - within as u64) as usize;
        let done = (at - offset) as usize;
        if !copy(&object.frames.as_slice()[page], within, done..done + chunk) {
            return Err(Errno::EFAULT);
        }
        at += chunk as u64;
    }
    Ok(())
}

/// Maps every page of the object into `process` from `address` on with
/// `rights`, all or nothing (a failure unmaps what was mapped).
pub fn map_into(process: &super::NativeProcess, address: u64, handle: u64, rights: vmem::Rights) -> Result<(), Errno> {
    let mut rollback = None;
    let mapped = process.with_memory(|memory| map_pages(memory, address, handle, rights, Sharing::Shared, &mut rollback))?;
    // The rollback's flush waits for other CPUs: never under the space's lock.
    if let Some(flush) = rollback {
        crate::address_spaces::carry_out(flush);
    }
    mapped
}

/// As [`map_into`], into a space no process runs yet (a program being
/// built by `execve`).
pub fn map_into_space(memory: &mut crate::address_spaces::KernelSpace, address: u64, handle: u64, rights: vmem::Rights) -> Result<(), Errno> {
    let mut rollback = None;
    let mapped = map_pages(memory, address, handle, rights, Sharing::Shared, &mut rollback);
    if let Some(flush) = rollback {
        crate::address_spaces::carry_out(flush);
    }
    mapped
}

fn map_pages(
    memory: &mut crate::address_spaces::KernelSpace,
    address: u64,
    handle: u64,
    rights: vmem::Rights,
    sharing: Sharing,
    rollback: &mut Option<vmem::TlbFlush>,
) -> Result<(), Errno> {
    let pages = {
        let table = TABLE.lock();
        lookup(&table, handle).ok_or(Errno::EBADF)?.frames.as_slice().len() as u64
    };
    let frames = frames(handle, 0, pages)?;
    super::native_calls::map_frames(memory, address, &frames, rights, sharing, rollback)
}

/// Maps every page of the object into `memory` from `address` on as
/// private pages with `rights` (never written through: the first write
/// copies the page), all or nothing: on a failure what was mapped is
/// unmapped and the TLB flush for it left in `rollback` (to be carried out
/// without the space's lock). Program text and private file mappings
/// shared by every process that maps them.
pub fn map_private_into_space(
    memory: &mut crate::address_spaces::KernelSpace,
    address: u64,
    handle: u64,
    rights: vmem::Rights,
    rollback: &mut Option<vmem::TlbFlush>,
) -> Result<(), Errno> {
    map_pages(memory, address, handle, rights, Sharing::Private, rollback)
}

/// Whether any frame of the object has an owner besides the object (a
/// space maps it): letting such an object go would leave the frame's
/// last owner, not the object's container, to free it.
pub fn mapped_elsewhere(handle: u64) -> bool {
    let Some(owners) = owners() else { return false };
    let table = TABLE.lock();
    lookup(&table, handle).is_some_and(|object| object.frames.as_slice().iter().any(|page| owners.owners(page.address()) > 1))
}

/// The container the object's frames are charged to (None for a stale
/// handle).
pub fn charged_to(handle: u64) -> Option<ContainerId> {
    let table = TABLE.lock();
    lookup(&table, handle).map(|object| object.container)
}

/// Whether the object holds the frame at physical address `frame` (to
/// tell which object a mapped page belongs to; nothing is reached).
pub fn holds_frame(handle: u64, frame: u64) -> bool {
    let table = TABLE.lock();
    lookup(&table, handle).is_some_and(|object| object.frames.as_slice().iter().any(|page| page.address() == frame))
}

/// Stores `value` in the aligned `u64` at byte `offset` of the object as
/// one atomic write (what user space reading the page sees whole).
pub fn store_u64(handle: u64, offset: u64, value: u64) -> Result<(), Errno> {
    let table = TABLE.lock();
    let object = lookup(&table, handle).ok_or(Errno::EBADF)?;
    let page = object.frames.as_slice().get((offset / PAGE_SIZE) as usize).ok_or(Errno::EINVAL)?;
    if page.store_u64((offset % PAGE_SIZE) as usize, value) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// Frees the object (its last capability is gone and no space maps it).
pub fn release(handle: u64) {
    let object = {
        let mut table = TABLE.lock();
        let (index, generation) = split(handle);
        match table.get(index) {
            Some(entry) if entry.generation == generation => table.take(index),
            _ => None,
        }
    };
    if let Some(object) = object {
        match object.frames {
            Pages::One(page) => give_back(object.container, core::iter::once(page)),
            Pages::Many(pages) => give_back(object.container, pages),
        }
    }
}

/// How many memory objects exist (for the tests' leak checks).
pub fn count() -> usize {
    TABLE.lock().entries().filter(|entry| entry.object.is_some()).count()
}

/// Leaves each page's owner set and drops the object's reference to it;
/// frees those nobody else holds (a space that still maps one frees it
/// when it lets go).
fn give_back(container: ContainerId, frames: impl IntoIterator<Item = SharedPage>) {
    let Some(owners) = owners() else { return };
    for page in frames {
        let last = owners.leave(page.address()) == LeaveOutcome::Last;
        match page.release() {
            Some(frame) => free_charged_frame(container, frame),
            None if last => machine::println!("lamina: warning: a memory object's last page is still named by a mapping; kept"),
            None => {}
        }
    }
}

fn handle(index: usize, generation: u32) -> u64 {
    (u64::from(generation) << 32) | index as u64
}

fn split(handle: u64) -> (usize, u32) {
    ((handle & 0xFFFF_FFFF) as usize, (handle >> 32) as u32)
}

fn lookup(table: &Table, handle: u64) -> Option<&MemoryObject> {
    let (index, generation) = split(handle);
    table.get(index).filter(|entry| entry.generation == generation)?.object.as_ref()
}
