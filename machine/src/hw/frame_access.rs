//! Reading and writing physical frames through the direct map: what the
//! virtual-memory layer needs to build user page tables and fill user
//! pages, and the frame allocator's owned-frame handles need to fill frames.
//!
//! Reached only through [`DirectMap`], a key that exists once and is made by
//! an `unsafe` constructor: whoever makes it promises to pass only frames
//! it owns (it took them from the frame allocator and has not freed them),
//! so no other code reads or writes them meanwhile. The kernel image makes
//! it at boot and gives it to `kernel-objects`, the frame allocator's
//! crate, which uses it behind owned frame handles and address spaces and
//! lends it to no one. Indexes and offsets are checked here: an access
//! outside the frame is refused, never made.

use super::layout::{physical_to_virtual, PAGE_SIZE};

/// Words in a frame (page-table entries in a table frame).
pub const WORDS_PER_FRAME: usize = (PAGE_SIZE / 8) as usize;

/// True when `frame` is a page-aligned address the direct map covers.
fn is_frame(frame: u64) -> bool {
    frame % PAGE_SIZE == 0 && frame.checked_add(PAGE_SIZE).is_some_and(|end| end <= super::start::direct_map_end())
}

/// Word `index` of `frame`; `None` for a bad frame or index.
fn read_word(frame: u64, index: usize) -> Option<u64> {
    if !is_frame(frame) || index >= WORDS_PER_FRAME {
        return None;
    }
    // SAFETY: the word lies inside a frame covered by the direct map, and
    // the caller owns the frame (module contract), so nothing writes it
    // concurrently except through this module; volatile because page-table
    // frames are also read by the MMU.
    Some(unsafe { ((physical_to_virtual(frame) + index as u64 * 8) as *const u64).read_volatile() })
}

/// Writes word `index` of `frame`; `false` (nothing written) for a bad
/// frame or index.
fn write_word(frame: u64, index: usize, value: u64) -> bool {
    if !is_frame(frame) || index >= WORDS_PER_FRAME {
        return false;
    }
    // SAFETY: as in `read_word`; the caller owns the frame.
    unsafe { ((physical_to_virtual(frame) + index as u64 * 8) as *mut u64).write_volatile(value) };
    true
}

/// Fills `frame` with zeroes.
fn zero(frame: u64) -> bool {
    if !is_frame(frame) {
        return false;
    }
    // SAFETY: the whole frame is covered by the direct map and owned by the caller.
    unsafe { core::ptr::write_bytes(physical_to_virtual(frame) as *mut u8, 0, PAGE_SIZE as usize) };
    true
}

/// Copies frame `from` into frame `to` (distinct frames).
fn copy(from: u64, to: u64) -> bool {
    if !is_frame(from) || !is_frame(to) || from == to {
        return false;
    }
    // SAFETY: both frames are covered by the direct map, owned by the
    // caller, and distinct whole frames, so they do not overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(
            physical_to_virtual(from) as *const u8,
            physical_to_virtual(to) as *mut u8,
            PAGE_SIZE as usize,
        )
    };
    true
}

/// Copies `buffer.len()` bytes at `offset` of `frame` into `buffer`.
fn read_bytes(frame: u64, offset: usize, buffer: &mut [u8]) -> bool {
    if !is_frame(frame) || offset.checked_add(buffer.len()).is_none_or(|end| end > PAGE_SIZE as usize) {
        return false;
    }
    // SAFETY: the range lies inside an owned frame of the direct map and
    // cannot overlap `buffer`, which is kernel memory outside that frame's
    // ownership.
    unsafe {
        core::ptr::copy_nonoverlapping((physical_to_virtual(frame) + offset as u64) as *const u8, buffer.as_mut_ptr(), buffer.len())
    };
    true
}

/// Copies `bytes` to `offset` of `frame`.
fn write_bytes(frame: u64, offset: usize, bytes: &[u8]) -> bool {
    if !is_frame(frame) || offset.checked_add(bytes.len()).is_none_or(|end| end > PAGE_SIZE as usize) {
        return false;
    }
    // SAFETY: as in `read_bytes`.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), (physical_to_virtual(frame) + offset as u64) as *mut u8, bytes.len()) };
    true
}

/// Atomically replaces the aligned `u32` at `offset` of `frame` with
/// `change(old)` while `change` gives `Some`, trying again when another
/// CPU (or user space) wrote the word meanwhile. The value found (when
/// `change` gave `None`, nothing was written); `None` for a bad frame or
/// offset.
fn update_u32(frame: u64, offset: usize, mut change: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
    if !is_frame(frame) || offset % 4 != 0 || offset + 4 > PAGE_SIZE as usize {
        return None;
    }
    // SAFETY: the aligned word lies inside a frame of the direct map that
    // the caller owns (module contract); user space may access it at the
    // same time, which is why it is only ever touched as an atomic here
    // (a lock-prefixed compare-exchange, the same instruction user space's
    // atomics use), and the reference lives only for this function.
    let word = unsafe { core::sync::atomic::AtomicU32::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u32) };
    let mut old = word.load(core::sync::atomic::Ordering::SeqCst);
    loop {
        let Some(new) = change(old) else { return Some(old) };
        match word.compare_exchange(old, new, core::sync::atomic::Ordering::SeqCst, core::sync::atomic::Ordering::SeqCst) {
            Ok(_) => return Some(old),
            Err(now) => old = now,
        }
    }
}

/// Stores `value` in the aligned `u64` at `offset` of `frame` as one
/// atomic write (a reader in user space sees the old or the new value,
/// never a mixture); `false` for a bad frame or offset.
fn store_u64(frame: u64, offset: usize, value: u64) -> bool {
    if !is_frame(frame) || offset % 8 != 0 || offset + 8 > PAGE_SIZE as usize {
        return false;
    }
    // SAFETY: the aligned word lies inside a frame of the direct map that
    // the caller owns (module contract); user space may read it at the
    // same time, which is why it is only written as an atomic here, and
    // the reference lives only for this statement.
    unsafe { core::sync::atomic::AtomicU64::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u64) }.store(value, core::sync::atomic::Ordering::Release);
    true
}

/// The aligned `u16` at `offset` of `frame`, read as one atomic load
/// with Acquire order (a device or another CPU may write it: what it wrote
/// before storing the word is visible after); `None` for a bad frame or
/// offset.
fn load_u16(frame: u64, offset: usize) -> Option<u16> {
    if !is_frame(frame) || offset % 2 != 0 || offset + 2 > PAGE_SIZE as usize {
        return None;
    }
    // SAFETY: the aligned word lies inside a frame of the direct map that
    // the caller owns (module contract); a device may write it meanwhile,
    // which is why it is only read as an atomic, and the reference lives
    // only for this statement.
    Some(unsafe { core::sync::atomic::AtomicU16::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u16) }.load(core::sync::atomic::Ordering::Acquire))
}

/// Stores `value` in the aligned `u16` at `offset` of `frame` as one
/// atomic write with Release order (whoever reads it sees the writes made
/// before); `false` for a bad frame or offset.
fn store_u16(frame: u64, offset: usize, value: u16) -> bool {
    if !is_frame(frame) || offset % 2 != 0 || offset + 2 > PAGE_SIZE as usize {
        return false;
    }
    // SAFETY: as in `load_u16`.
    unsafe { core::sync::atomic::AtomicU16::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u16) }.store(value, core::sync::atomic::Ordering::Release);
    true
}

/// The key to untyped memory (see the module comment). Not `Clone`: the
/// one made at boot is shared by reference.
pub struct DirectMap {
    _made_by_new: (),
}

impl DirectMap {
    /// The key.
    ///
    /// # Safety
    /// The caller makes one, at boot, and every frame it (or whoever it
    /// lends the key to) passes is a frame of the direct map that it owns
    /// at that moment: taken from the frame allocator and not freed, or a
    /// page table or page of an address space it manages. No Rust
    /// reference may point into such a frame while the key writes it.
    pub unsafe fn new() -> Self {
        Self { _made_by_new: () }
    }

    /// Word `index` of `frame`; `None` for a bad frame or index.
    pub fn read_word(&self, frame: u64, index: usize) -> Option<u64> {
        read_word(frame, index)
    }

    /// Writes word `index` of `frame`; `false` (nothing written) for a bad
    /// frame or index.
    pub fn write_word(&self, frame: u64, index: usize, value: u64) -> bool {
        write_word(frame, index, value)
    }

    /// Fills `frame` with zeroes.
    pub fn zero(&self, frame: u64) -> bool {
        zero(frame)
    }

    /// Copies frame `from` into frame `to` (distinct frames).
    pub fn copy(&self, from: u64, to: u64) -> bool {
        copy(from, to)
    }

    /// Copies `buffer.len()` bytes at `offset` of `frame` into `buffer`.
    pub fn read_bytes(&self, frame: u64, offset: usize, buffer: &mut [u8]) -> bool {
        read_bytes(frame, offset, buffer)
    }

    /// Copies `bytes` to `offset` of `frame`.
    pub fn write_bytes(&self, frame: u64, offset: usize, bytes: &[u8]) -> bool {
        write_bytes(frame, offset, bytes)
    }

    /// Atomically replaces the aligned `u32` at `offset` of `frame` with
    /// `change(old)` while `change` gives `Some` (retrying on a concurrent
    /// write); the value found, `None` for a bad frame or offset.
    pub fn update_u32(&self, frame: u64, offset: usize, change: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
        update_u32(frame, offset, change)
    }

    /// Stores `value` in the aligned `u64` at `offset` of `frame` as one
    /// atomic write; `false` for a bad frame or offset.
    pub fn store_u64(&self, frame: u64, offset: usize, value: u64) -> bool {
        store_u64(frame, offset, value)
    }

    /// The aligned `u16` at `offset` of `frame`, one atomic Acquire load
    /// (a ring index a device writes); `None` for a bad frame or offset.
    pub fn load_u16(&self, frame: u64, offset: usize) -> Option<u16> {
        load_u16(frame, offset)
    }

    /// Stores the aligned `u16` at `offset` of `frame` as one atomic
    /// Release write (a ring index a device reads); `false` for a bad
    /// frame or offset.
    pub fn store_u16(&self, frame: u64, offset: usize, value: u16) -> bool {
        store_u16(frame, offset, value)
    }
}
