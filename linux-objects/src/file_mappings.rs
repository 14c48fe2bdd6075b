//! Shared mappings of files (`mmap` with `MAP_SHARED`): each page of a
//! file mapped shared is the page cache's page of it (`page_cache`; a
//! memory object, one frame) mapped into every space that maps that page,
//! so processes sharing a file share its memory (POSIX shared memory under
//! `/dev/shm`, `sem_open` semaphores, databases' mapped files), and
//! `read` of a disk's file reads the same frames.
//!
//! A mapped file is *held* in the cache and stays open (its inode cannot
//! be reused) until it is unlinked; then its pages stay shared among the
//! spaces that map them, no longer tied to the file. Stores through the
//! pages reach the file at `page_cache::write_back`.
//!
//! **Lock order**: pages are found or made with the tree held (a sleep
//! lock), and mapped into the space after it is let go.

use alloc::vec::Vec;

use kernel_objects::capabilities::memory_objects;
use kernel_objects::capabilities::NativeProcess;
use linux_abi::Errno;
use vfs::InodeId;
use vmem::{Rights, PAGE_SIZE};

use crate::fs;
use crate::page_cache;

/// Whether some space maps pages of `inode` shared (its bytes may then
/// change without its times changing).
pub fn is_mapped(inode: InodeId) -> bool {
    page_cache::is_held(inode)
}

/// Maps `length` bytes (whole pages) of file `inode` from byte `offset`
/// (page-aligned) at `address` of `process`, shared, with `rights`. The
/// pages are made and filled from the file on first use. All or nothing:
/// a failure unmaps what was mapped. `may_store`: the mapping may be
/// written through (now or after `mprotect`), so its pages are marked for
/// write-back.
pub fn map(process: &NativeProcess, inode: InodeId, offset: u64, length: u64, address: u64, rights: Rights, may_store: bool) -> Result<(), Errno> {
    let first = offset / PAGE_SIZE;
    let count = length / PAGE_SIZE;
    let handles = pages_of(process, inode, first, count, may_store)?;
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
    if may_store {
        // Again now that they are mapped: a write-back that ran between
        // making them and mapping them found them unmapped and unmarked.
        page_cache::CACHE.lock().mark(inode, first..first + count);
    }
    Ok(())
}

/// Which file page (its inode and page index) the shared frame at
/// physical address `frame` is, if it is one (`mremap` growing a shared
/// file mapping maps the file's next pages).
pub fn page_holding(frame: u64) -> Option<(InodeId, u64)> {
    if page_cache::none_held() {
        return None;
    }
    let cache = page_cache::CACHE.lock();
    let mut found = None;
    cache.visit_all_held(|inode, index, handle| {
        if found.is_none() && memory_objects::holds_frame(handle, frame) {
            found = Some((inode, index));
        }
    });
    found
}

/// The memory objects of pages `first..first + count` of `inode`, made
/// (charged to `process`'s container) and filled where missing, with the
/// file held in the cache (and kept open for it).
fn pages_of(process: &NativeProcess, inode: InodeId, first: u64, count: u64, may_store: bool) -> Result<Vec<u64>, Errno> {
    let end = first.checked_add(count).filter(|end| *end <= (1 << 32)).ok_or(Errno::ENOMEM)?;
    fs::with(|tree| {
        if page_cache::hold(inode)? {
            if let Err(errno) = tree.opened(inode) {
                page_cache::forget(inode);
                return Err(errno);
            }
        }
        page_cache::pages_for_mapping(tree, process.container(), inode, first..end, may_store)
    })
}

/// Copies stores through shared mappings of `inode` back into the file
/// (see `page_cache::write_back`), taking the tree.
pub fn write_back(inode: InodeId) -> Result<(), Errno> {
    if page_cache::none_held() {
        return Ok(());
    }
    fs::with(|tree| page_cache::write_back(tree, inode))
}

/// After `inode` lost a name: once it has none, its pages are no longer
/// the file's (the spaces mapping them keep sharing them), and a file
/// held for its mappings is let go.
pub fn unlinked(inode: InodeId) {
    let _ = fs::with(|tree| {
        if tree.stat(inode).is_ok_and(|stat| stat.links > 0) {
            return Ok(());
        }
        if page_cache::forget(inode) {
            tree.closed(inode);
        }
        Ok(())
    });
}
