//! Memory system calls: the program break, anonymous and private file
//! mappings (placed top-down below `MMAP_TOP`), unmapping, protection.
//! Private file mappings share pages through `exec_cache` where they can,
//! else are filled when made (no page cache yet).

use alloc::vec::Vec;

use vmem::{Rights, VmError, PAGE_SIZE};

use super::{value, Call, CallResult};
use kernel_objects::address_spaces::carry_out;
use kernel_objects::OwnedFrame;
use linux_abi::Errno;
use crate::fs;
use crate::exec_cache::{FileKey, SegmentShape};
use kernel_objects::capabilities::memory_objects;
use crate::open_files::{self, Backing};

const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;
const MAP_SHARED: u64 = 1;
const MAP_PRIVATE: u64 = 2;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
/// The lowest address `mmap` hands out.
const MMAP_FLOOR: u64 = 0x1000_0000;

fn rights(protection: u64) -> Result<Rights, Errno> {
    if protection & !(PROT_READ | PROT_WRITE | PROT_EXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if protection == 0 {
        return Ok(Rights::NONE);
    }
    Rights::new(true, protection & PROT_WRITE != 0, protection & PROT_EXEC != 0).map_err(|_| Errno::EACCES)
}

pub fn brk(call: &mut Call<'_>) -> CallResult {
    let wanted = call.argument(0);
    let (start, current) = {
        let state = call.process.state();
        (state.break_start, state.program_break)
    };
    let data_limit = call.process.state().limits.soft(linux_abi::resource_limits::RLIMIT_DATA);
    if wanted < start || wanted > start + (1 << 36) || wanted - start > data_limit {
        return value(current);
    }
    let (old_end, new_end) = (current.next_multiple_of(PAGE_SIZE), wanted.next_multiple_of(PAGE_SIZE));
    if new_end > old_end && within_address_limit(call, new_end - old_end).is_err() {
        return value(current);
    }
    let changed = call.process.native.with_memory(|memory| -> Result<Option<vmem::TlbFlush>, VmError> {
        if new_end > old_end {
            memory.add_demand_zero(old_end, new_end - old_end, Rights::READ_WRITE).map(|()| None)
        } else if new_end < old_end {
            memory.unmap(new_end, old_end - new_end).map(Some)
        } else {
            Ok(None)
        }
    });
    match changed {
        Ok(Ok(flush)) => {
            if let Some(flush) = flush {
                carry_out(flush);
            }
            call.process.state().program_break = wanted;
            value(wanted)
        }
        _ => value(current),
    }
}

/// `RLIMIT_AS`: ENOMEM when `more` bytes would take the caller's address
/// space past its soft limit (a mapping that replaces another is counted
/// whole: a little stricter than Linux).
pub(super) fn within_address_limit(call: &Call<'_>, more: u64) -> Result<(), Errno> {
    let limit = call.process.state().limits.soft(linux_abi::resource_limits::RLIMIT_AS);
    if limit == linux_abi::resource_limits::INFINITY {
        return Ok(());
    }
    let size = call.process.native.with_memory(|memory| memory.size())?;
    if size.saturating_add(more) > limit {
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

/// A place for `length` bytes of new mappings in the caller's mmap area
/// (growing down; ENOMEM when it is used up).
pub(super) fn place_mapping(call: &Call<'_>, length: u64) -> Result<u64, Errno> {
    let mut state = call.process.state();
    let address = state.mmap_next.checked_sub(length).filter(|address| *address >= MMAP_FLOOR).ok_or(Errno::ENOMEM)?;
    state.mmap_next = address;
    Ok(address)
}

pub fn mmap(call: &mut Call<'_>) -> CallResult {
    let (hint, length, protection, flags, fd, offset) =
        (call.argument(0), call.argument(1), call.argument(2), call.argument(3), call.argument(4), call.argument(5));
    if length == 0 || length > (1 << 46) || offset % PAGE_SIZE != 0 || flags & (MAP_SHARED | MAP_PRIVATE) == 0 {
        return Err(Errno::EINVAL);
    }
    let final_rights = rights(protection)?;
    let length = length.next_multiple_of(PAGE_SIZE);
    within_address_limit(call, length)?;
    let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
    if fixed && hint % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    // Whether stores through a shared mapping of the file are possible
    // (its descriptor writable), now or after mprotect.
    let mut may_store = true;
    let file = if flags & MAP_ANONYMOUS == 0 {
        let file = open_files::file(call.process.native.space(), fd)?;
        if let Backing::Kvm(open_files::KvmFile::Processor(vcpu)) = &file.backing {
            if flags & MAP_SHARED == 0 || fixed {
                return Err(Errno::EINVAL);
            }
            let address = place_mapping(call, length)?;
            super::kvm::map_run_area(call, vcpu, address, length, offset, final_rights)?;
            return value(address);
        }
        let Backing::Inode(inode) = file.backing else { return Err(Errno::ENODEV) };
        if !file.readable() || (flags & MAP_SHARED != 0 && final_rights.write() && !file.writable()) {
            return Err(Errno::EACCES);
        }
        may_store = file.writable();
        Some(inode)
    } else {
        None
    };
    let address = if fixed { hint } else { place_mapping(call, length)? };
    let shared = flags & MAP_SHARED != 0;
    // A readable private file mapping is made with its own rights (the
    // shared file pages go in as they are; no protect pass over every
    // page after). Otherwise the bytes may be copied in, so writable first.
    let private_readable = file.is_some() && !shared && final_rights.read();
    let first_rights = if file.is_some() && !private_readable { Rights::READ_WRITE } else { final_rights };
    let shared_anonymous = file.is_none() && shared;
    let made = call.process.native.with_memory(|memory| -> Result<Option<vmem::TlbFlush>, VmError> {
        let flush = if flags & MAP_FIXED != 0 { Some(memory.unmap(address, length)?) } else { None };
        if !shared {
            memory.add_demand_zero(address, length, first_rights)?;
        }
        Ok(flush)
    })?;
    if let Some(flush) = made.map_err(Errno::from)? {
        carry_out(flush);
    }
    if shared_anonymous {
        map_shared_zeroed(call, address, length, final_rights)?;
    }
    if let (Some(inode), true) = (file, shared) {
        // A page without read rights is mapped readable, then protected.
        let mapped_rights = if final_rights.read() { final_rights } else { Rights::READ };
        crate::file_mappings::map(&call.process.native, inode, offset, length, address, mapped_rights, may_store)?;
        if mapped_rights != final_rights {
            let protected = call.process.native.with_memory(|memory| memory.protect(address, length, final_rights))?;
            carry_out(protected.map_err(Errno::from)?);
        }
    } else if let Some(inode) = file {
        crate::file_mappings::write_back(inode)?;
        let stat = fs::with(|tree| tree.stat(inode))?;
        let available = stat.size.saturating_sub(offset).min(length);
        let protect = |rights| -> Result<(), Errno> {
            let protected = call.process.native.with_memory(|memory| memory.protect(address, length, rights))?;
            carry_out(protected.map_err(Errno::from)?);
            Ok(())
        };
        let mut rights_now = first_rights;
        if !map_cached_file_pages(call, inode, &stat, offset, available, address, first_rights)? {
            // Copied in: the pages must take the bytes first.
            if rights_now != Rights::READ_WRITE {
                protect(Rights::READ_WRITE)?;
                rights_now = Rights::READ_WRITE;
            }
            read_file_into(inode, offset, available, |at, bytes| call.write_out(address + at, bytes))?;
        }
        if rights_now != final_rights {
            protect(final_rights)?;
        }
    }
    value(address)
}

/// A private mapping of `available` bytes of file `inode` from `offset`
/// at `address`, with `rights`, from pages shared by every process mapping the same part
/// of the same file as it is now (`exec_cache`; a write copies the page).
/// Ok(false) when they cannot be had (too big, no memory, or the file is
/// mapped shared: its bytes may change without its times): the caller
/// copies the bytes instead.
fn map_cached_file_pages(call: &Call<'_>, inode: vfs::InodeId, stat: &vfs::Stat, offset: u64, available: u64, address: u64, rights: Rights) -> Result<bool, Errno> {
    if available == 0 || crate::file_mappings::is_mapped(inode) {
        return Ok(false);
    }
    let pages = available.div_ceil(PAGE_SIZE);
    let shape = SegmentShape { address: 0, file_offset: offset, file_length: available, memory_length: pages * PAGE_SIZE };
    let fill = |handle| read_file_into(inode, offset, available, |at, bytes| memory_objects::write(handle, at, bytes));
    let Some(handle) = crate::exec_cache::segment(FileKey::of(inode, stat), shape, pages, fill) else { return Ok(false) };
    let mut rollback = None;
    let mapped = call.process.native.with_memory(|memory| memory_objects::map_private_into_space(memory, address, handle, rights, &mut rollback))?;
    if let Some(flush) = rollback {
        carry_out(flush);
    }
    Ok(mapped.is_ok())
}

/// Reads `length` bytes of file `inode` from `offset`, 64 KiB at a time,
/// handing each piece to `put` with its offset from the start.
fn read_file_into(inode: vfs::InodeId, offset: u64, length: u64, mut put: impl FnMut(u64, &[u8]) -> Result<(), Errno>) -> Result<(), Errno> {
    const PIECE: usize = 64 << 10;
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(PIECE).map_err(|_| Errno::ENOMEM)?;
    buffer.resize(PIECE, 0);
    let mut done = 0;
    while done < length {
        let wanted = (length - done).min(PIECE as u64) as usize;
        let got = fs::with(|tree| tree.read(inode, offset + done, &mut buffer[..wanted]))?;
        if got == 0 {
            break;
        }
        put(done, &buffer[..got])?;
        done += got as u64;
    }
    Ok(())
}

/// Anonymous `MAP_SHARED` memory: every page gets a zeroed frame now, mapped
/// shared, so that a fork made later shares it and writes never copy it
/// (demand-zero pages would be made separately in each process). All or
/// nothing: a failure unmaps what was mapped. TLB flushes are carried out
/// with the space's lock released.
fn map_shared_zeroed(call: &Call<'_>, address: u64, length: u64, rights: Rights) -> Result<(), Errno> {
    let native = &call.process.native;
    // A page without read rights is mapped readable, then protected.
    let mapped_rights = if rights.read() { rights } else { Rights::READ };
    for offset in (0..length).step_by(PAGE_SIZE as usize) {
        let zeroed = OwnedFrame::allocate(native.container()).ok().and_then(|mut frame| frame.zero().then_some(frame));
        let mapped = match zeroed {
            Some(frame) => native.with_memory(|memory| memory.map_shared_fresh(address + offset, frame, mapped_rights))?,
            None => Err(VmError::OutOfMemory),
        };
        if let Err(error) = mapped {
            if offset > 0 {
                if let Ok(flush) = native.with_memory(|memory| memory.unmap(address, offset))? {
                    carry_out(flush);
                }
            }
            return Err(Errno::from(error));
        }
    }
    if mapped_rights != rights {
        let protected = native.with_memory(|memory| memory.protect(address, length, rights))?;
        carry_out(protected.map_err(Errno::from)?);
    }
    Ok(())
}

const MS_ASYNC: u64 = 1;
const MS_INVALIDATE: u64 = 2;
const MS_SYNC: u64 = 4;

/// The pages of `[address, address + length)`, after Linux's checks: EINVAL
/// for an unaligned start, ENOMEM for a range past user space.
fn page_range(address: u64, length: u64) -> Result<core::ops::Range<u64>, Errno> {
    if address % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    let end = address.checked_add(length.next_multiple_of(PAGE_SIZE)).filter(|end| *end <= vmem::USER_END).ok_or(Errno::ENOMEM)?;
    Ok(address..end)
}

/// `msync`: ENOMEM if a page of the range is not mapped. Stores through
/// shared file mappings are copied into their files (every file's: the
/// page cache knows which pages may hold stores, not which space made
/// them), and with MS_SYNC made durable, as `fsync` would.
pub fn msync(call: &mut Call<'_>) -> CallResult {
    let (address, length, flags) = (call.argument(0), call.argument(1), call.argument(2));
    if flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0 || flags & (MS_ASYNC | MS_SYNC) == (MS_ASYNC | MS_SYNC) {
        return Err(Errno::EINVAL);
    }
    all_mapped(call, page_range(address, length)?)?;
    if !crate::page_cache::none_held() {
        fs::with(|tree| {
            crate::page_cache::write_back_all(tree)?;
            if flags & MS_SYNC != 0 {
                tree.sync_all()?;
            }
            Ok(())
        })?;
    }
    value(0)
}

/// `mincore`: one byte per page, 1 if it has a frame now; ENOMEM if a page
/// is not mapped.
pub fn mincore(call: &mut Call<'_>) -> CallResult {
    let (address, length, vector) = (call.argument(0), call.argument(1), call.argument(2));
    let pages = page_range(address, length)?;
    let count = ((pages.end - pages.start) / PAGE_SIZE) as usize;
    let mut residency = Vec::new();
    residency.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
    let all_mapped = call.process.native.with_memory(|memory| {
        for page in pages.clone().step_by(PAGE_SIZE as usize) {
            if !memory.is_mapped(page) {
                return false;
            }
            residency.push(u8::from(memory.is_resident(page)));
        }
        true
    })?;
    if !all_mapped {
        return Err(Errno::ENOMEM);
    }
    call.write_out(vector, &residency)?;
    value(0)
}

pub fn munmap(call: &mut Call<'_>) -> CallResult {
    let (address, length) = (call.argument(0), call.argument(1));
    if address % PAGE_SIZE != 0 || length == 0 {
        return Err(Errno::EINVAL);
    }
    let flush = call.process.native.with_memory(|memory| memory.unmap(address, length.next_multiple_of(PAGE_SIZE)))?.map_err(Errno::from)?;
    call.process.native.carry_out(flush);
    value(0)
}

pub fn mprotect(call: &mut Call<'_>) -> CallResult {
    let (address, length, protection) = (call.argument(0), call.argument(1), call.argument(2));
    if address % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    if length == 0 {
        return value(0);
    }
    let rights = rights(protection)?;
    let flush = call.process.native.with_memory(|memory| memory.protect(address, length.next_multiple_of(PAGE_SIZE), rights))?.map_err(Errno::from)?;
    carry_out(flush);
    value(0)
}

/// `madvise`: `MADV_DONTNEED` (and `_LOCKED`) drops the private anonymous pages of the
/// range (they read as zero next time, as programs' allocators rely on);
/// file and shared pages keep their contents (a gap: Linux re-reads a
/// private file page). Every other advice Linux knows is accepted and
/// changes nothing (Lamina neither pages out nor merges); one it does not
/// know is EINVAL.
pub fn madvise(call: &mut Call<'_>) -> CallResult {
    const MADV_DONTNEED: u64 = 4;
    const MADV_DONTNEED_LOCKED: u64 = 24;
    /// NORMAL … COLLAPSE, as `asm-generic/mman-common.h` numbers them
    /// (the test-only HWPOISON and SOFT_OFFLINE are refused).
    const KNOWN: [u64; 23] = [0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25];
    let (address, length, advice) = (call.argument(0), call.argument(1), call.argument(2));
    if address % PAGE_SIZE != 0 || !KNOWN.contains(&advice) {
        return Err(Errno::EINVAL);
    }
    let length = length.checked_next_multiple_of(PAGE_SIZE).ok_or(Errno::EINVAL)?;
    if !matches!(advice, MADV_DONTNEED | MADV_DONTNEED_LOCKED) || length == 0 {
        return value(0);
    }
    all_mapped(call, page_range(address, length)?)?;
    let flush = call.process.native.with_memory(|memory| memory.discard(address, length))?.map_err(Errno::from)?;
    call.process.native.carry_out(flush);
    value(0)
}

/// `mlock`, `mlock2` and `munlock`: Lamina never pages memory out, so
/// every mapped page is as locked as Linux's `mlock` makes it; the call
/// checks what Linux checks: the range (the start rounded down to its
/// page) must be mapped, else ENOMEM, and `mlock2` knows one flag.
pub fn mlock(call: &mut Call<'_>, flags: u64) -> CallResult {
    const MLOCK_ONFAULT: u64 = 1;
    if flags & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    let (address, length) = (call.argument(0), call.argument(1));
    let start = address - address % PAGE_SIZE;
    let length = length.checked_add(address % PAGE_SIZE).ok_or(Errno::ENOMEM)?;
    all_mapped(call, page_range(start, length)?)?;
    value(0)
}

/// ENOMEM unless every page of `pages` is mapped.
fn all_mapped(call: &Call<'_>, pages: core::ops::Range<u64>) -> Result<(), Errno> {
    let mapped = call.process.native.with_memory(|memory| pages.step_by(PAGE_SIZE as usize).all(|page| memory.is_mapped(page)))?;
    if mapped { Ok(()) } else { Err(Errno::ENOMEM) }
}

/// `mlockall`: its flags checked as Linux checks them (some of
/// `MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT`, not `MCL_ONFAULT` alone);
/// nothing is ever paged out, so nothing more to do.
pub fn mlockall(call: &mut Call<'_>) -> CallResult {
    const MCL_CURRENT: u64 = 1;
    const MCL_FUTURE: u64 = 2;
    const MCL_ONFAULT: u64 = 4;
    let flags = call.argument(0);
    if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT {
        return Err(Errno::EINVAL);
    }
    value(0)
}

/// `mremap(old, old_size, new_size, flags, new_address)` for private
/// mappings: shrinking cuts the tail; growing extends in place when the
/// pages after are free, else (MREMAP_MAYMOVE) moves to a new place,
/// copying only the pages that have frames; MREMAP_FIXED moves to
/// `new_address`. EFAULT when the old range is not all mapped, ENOMEM when
/// it cannot grow in place and may not move, EINVAL for bad flags, sizes,
/// MREMAP_DONTUNMAP, or a shared mapping (not supported yet).
pub fn mremap(call: &mut Call<'_>) -> CallResult {
    const MREMAP_MAYMOVE: u64 = 1;
    const MREMAP_FIXED: u64 = 2;
    let (old, old_size, new_size, flags, wanted) = (call.argument(0), call.argument(1), call.argument(2), call.argument(3), call.argument(4));
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED) != 0 || old % PAGE_SIZE != 0 || new_size == 0 || old_size == 0 {
        return Err(Errno::EINVAL);
    }
    let fixed = flags & MREMAP_FIXED != 0;
    if fixed && (flags & MREMAP_MAYMOVE == 0 || wanted % PAGE_SIZE != 0) {
        return Err(Errno::EINVAL);
    }
    let (old_length, new_length) = (old_size.next_multiple_of(PAGE_SIZE), new_size.next_multiple_of(PAGE_SIZE));
    let native = &call.process.native;
    let (rights, last_shared_frame) = native.with_memory(|memory| {
        let pages = (old..old + old_length).step_by(PAGE_SIZE as usize);
        let all_mapped = pages.clone().all(|page| memory.is_mapped(page));
        let last = memory.translate(old + old_length - PAGE_SIZE).filter(|found| found.shared).map(|found| found.frame);
        (all_mapped.then(|| memory.rights_at(old)).flatten(), last)
    })?;
    let rights = rights.ok_or(Errno::EFAULT)?;
    // What new pages past the old end are: demand-zero for a private
    // mapping, the next pages of the file for a shared file mapping. A
    // shared anonymous mapping would need its object's pages (Linux keeps
    // them, and faults SIGBUS past the object's size): not here yet.
    let tail = match last_shared_frame {
        None => Some(Tail::Private),
        Some(frame) => crate::file_mappings::page_holding(frame).map(|(inode, page)| Tail::File(inode, page + 1)),
    };
    if new_length > old_length {
        within_address_limit(call, new_length - old_length)?;
    }
    let tail = match tail {
        Some(tail) => tail,
        None if new_length > old_length => return Err(Errno::EINVAL),
        None => Tail::Private, // never used: nothing grows
    };
    if !fixed && new_length <= old_length {
        if new_length < old_length {
            let flush = native.with_memory(|memory| memory.unmap(old + new_length, old_length - new_length))?.map_err(Errno::from)?;
            carry_out(flush);
        }
        return value(old);
    }
    if !fixed {
        let free = native.with_memory(|memory| {
            let end = old + new_length;
            end <= MMAP_TOP_LIMIT && (old + old_length..end).step_by(PAGE_SIZE as usize).all(|page| !memory.is_mapped(page))
        })?;
        if free && add_tail(call, &tail, old + old_length, new_length - old_length, rights).is_ok() {
            return value(old);
        }
        if flags & MREMAP_MAYMOVE == 0 {
            return Err(Errno::ENOMEM);
        }
    }
    let destination = if fixed {
        if wanted < old + old_length && old < wanted + new_length {
            return Err(Errno::EINVAL);
        }
        let flush = native.with_memory(|memory| memory.unmap(wanted, new_length))?.map_err(Errno::from)?;
        carry_out(flush);
        wanted
    } else {
        place_mapping(call, new_length)?
    };
    // The pages move with their frames (shared ones stay shared); what
    // is past the new end goes; then the tail past the old end comes.
    let kept = old_length.min(new_length);
    let moved = native.with_memory(|memory| -> Result<Vec<vmem::TlbFlush>, VmError> {
        let mut flushes = Vec::new();
        flushes.try_reserve(2).map_err(|_| VmError::OutOfMemory)?;
        flushes.push(memory.move_range(old, destination, kept)?);
        if old_length > new_length {
            flushes.push(memory.unmap(old + new_length, old_length - new_length)?);
        }
        Ok(flushes)
    })?;
    for flush in moved.map_err(Errno::from)? {
        carry_out(flush);
    }
    if new_length > old_length {
        add_tail(call, &tail, destination + old_length, new_length - old_length, rights)?;
    }
    value(destination)
}

/// What `mremap` puts past a mapping's old end.
enum Tail {
    Private,
    /// The file's pages from this page index on.
    File(vfs::InodeId, u64),
}

/// Maps `length` bytes of `tail` at `address` with `rights`.
fn add_tail(call: &Call<'_>, tail: &Tail, address: u64, length: u64, rights: Rights) -> Result<(), Errno> {
    match tail {
        Tail::Private => call.process.native.with_memory(|memory| memory.add_demand_zero(address, length, rights))?.map_err(Errno::from),
        Tail::File(inode, page) => crate::file_mappings::map(&call.process.native, *inode, page * PAGE_SIZE, length, address, rights, true),
    }
}

/// Where growing in place must stop: the top of the mmap area.
const MMAP_TOP_LIMIT: u64 = crate::process::MMAP_TOP;
