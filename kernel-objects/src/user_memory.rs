//! Copying between the kernel and a process's memory by the walk: every
//! user address is checked against the process's own page tables (and
//! its user half): a bad pointer is EFAULT, never a kernel fault. (A copy
//! for the space this CPU runs on tries the CPU's own translation first,
//! with no lock: `capabilities::UserMemory`; this walk is its fallback.)
//! Pages the program could touch (demand-zero, copy-on-write) are
//! resolved first, as its own access would resolve them.
//!
//! Must never write through a translation without write rights, nor read
//! one without read rights.

use alloc::vec::Vec;
use core::cmp::min;

use vmem::{Access, Fault, FaultOutcome, TlbFlush, PAGE_SIZE};

use crate::address_spaces::{KernelSpace, SpaceMemory};
use linux_abi::Errno;

/// What a copy's copy-on-write resolution left to do with no lock held:
/// the flush of one copied page, and whether the copy must be tried again
/// after it (the copy is mapped read-only until its flush is carried
/// out, or another flush of the space was still owed: `Fault::Busy`).
#[derive(Default)]
pub struct PendingFlush {
    flush: Option<TlbFlush>,
    again: bool,
}

impl PendingFlush {
    /// Carries the flush out (call with no spinlock held); whether the
    /// copy must be tried again.
    pub fn carry_out(self) -> bool {
        if let Some(flush) = self.flush {
            crate::address_spaces::carry_out(flush);
        }
        self.again
    }
}

fn check_range(address: u64, length: usize) -> Result<(), Errno> {
    let end = address.checked_add(length as u64).ok_or(Errno::EFAULT)?;
    if end > vmem::USER_END {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

/// The frame behind `at` for `access`, resolving faults as the program's
/// own access would (the copy that follows walks the tables itself; this
/// makes the page ready and says whether it is there).
fn frame_for(memory: &mut KernelSpace, at: u64, access: Access, flush: &mut PendingFlush) -> Result<u64, Errno> {
    let usable = |memory: &KernelSpace| {
        memory.translate(at).filter(|page| match access {
            Access::Write => page.rights.write() && !page.copy_on_write,
            _ => true,
        })
    };
    if let Some(page) = usable(memory) {
        return Ok(page.frame);
    }
    match memory.handle_fault_on(at, access, Some(machine::percpu::current_index())) {
        // One copy per attempt: its flush is carried out before anything
        // else of the space is copied (`Fault::Busy` until then).
        Ok(FaultOutcome::Copied { flush: copied }) => {
            flush.flush = Some(copied);
            flush.again = true;
            return Err(Errno::EAGAIN);
        }
        Ok(_) => {}
        Err(Fault::Busy) => {
            flush.again = true;
            return Err(Errno::EAGAIN);
        }
        Err(_) => return Err(Errno::EFAULT),
    }
    usable(memory).map(|page| page.frame).ok_or(Errno::EFAULT)
}

/// The frame behind user address `at`, made ready for the program's own
/// store (demand-zero filled, copy-on-write copied): EAGAIN after a copy
/// whose flush `flush` holds (carry it out with no lock held, then ask
/// again), EFAULT when the program could not store there.
pub fn writable_frame(memory: &mut KernelSpace, at: u64, flush: &mut PendingFlush) -> Result<u64, Errno> {
    check_range(at, 1)?;
    frame_for(memory, at, Access::Write, flush)
}

/// Calls `copy(space, user address, range of the caller's buffer)` for
/// each page `[address, address + length)` touches (the address and range
/// within that page), the page made ready for `access` first. The copy
/// itself goes through the machine's walk of the space's own tables.
fn for_each_page(
    memory: &mut KernelSpace,
    address: u64,
    length: usize,
    access: Access,
    flush: &mut PendingFlush,
    mut copy: impl FnMut(&SpaceMemory, u64, core::ops::Range<usize>) -> bool,
) -> Result<(), Errno> {
    check_range(address, length)?;
    let mut done = 0;
    while done < length {
        let at = address + done as u64;
        let offset = (at % PAGE_SIZE) as usize;
        let chunk = min(length - done, PAGE_SIZE as usize - offset);
        // A page the program could use as it is copies at once; else the
        // fault its own access would take is resolved first.
        if !copy(memory.memory(), at, done..done + chunk) {
            frame_for(memory, at, access, flush)?;
            if !copy(memory.memory(), at, done..done + chunk) {
                return Err(Errno::EFAULT);
            }
        }
        done += chunk;
    }
    Ok(())
}

/// Copies `bytes` to `address`.
pub fn write_user(memory: &mut KernelSpace, address: u64, bytes: &[u8], flush: &mut PendingFlush) -> Result<(), Errno> {
    for_each_page(memory, address, bytes.len(), Access::Write, flush, |space, at, range| space.write_user(at, &bytes[range]))
}

/// Copies `buffer.len()` bytes from `address`.
pub fn read_user(memory: &mut KernelSpace, address: u64, buffer: &mut [u8], flush: &mut PendingFlush) -> Result<(), Errno> {
    for_each_page(memory, address, buffer.len(), Access::Read, flush, |space, at, range| space.read_user(at, &mut buffer[range]))
}

/// Atomically replaces the aligned `u32` at `address` with `change(old)`
/// (when `change` gives `Some`; a write access, so copy-on-write is
/// resolved first); the value found. EINVAL for a misaligned address.
pub fn update_user_u32(memory: &mut KernelSpace, address: u64, change: impl FnMut(u32) -> Option<u32>, flush: &mut PendingFlush) -> Result<u32, Errno> {
    if address % 4 != 0 {
        return Err(Errno::EINVAL);
    }
    check_range(address, 4)?;
    frame_for(memory, address, Access::Write, flush)?;
    memory.memory().update_user_u32(address, change).ok_or(Errno::EFAULT)
}

/// Where the readable word at `address` lives when its page is shared
/// memory (a number the same for every space mapping that page: futexes
/// of processes sharing it meet there); `None` for a private page.
pub fn shared_location(memory: &mut KernelSpace, address: u64, flush: &mut PendingFlush) -> Result<Option<u64>, Errno> {
    check_range(address, 4)?;
    frame_for(memory, address, Access::Read, flush)?;
    let page = memory.translate(address).ok_or(Errno::EFAULT)?;
    Ok(page.shared.then_some(page.frame + address % PAGE_SIZE))
}

/// The NUL-terminated string at `address`, without its NUL; at most
/// `limit` bytes (longer: `too_long`).
pub fn read_c_string(memory: &mut KernelSpace, address: u64, limit: usize, too_long: Errno, flush: &mut PendingFlush) -> Result<Vec<u8>, Errno> {
    let mut text = Vec::new();
    let mut at = address;
    loop {
        check_range(at, 1)?;
        let offset = (at % PAGE_SIZE) as usize;
        let mut page = [0u8; 256];
        let chunk = min(page.len(), PAGE_SIZE as usize - offset);
        if !memory.memory().read_user(at, &mut page[..chunk]) {
            frame_for(memory, at, Access::Read, flush)?;
            if !memory.memory().read_user(at, &mut page[..chunk]) {
                return Err(Errno::EFAULT);
            }
        }
        if let Some(end) = page[..chunk].iter().position(|byte| *byte == 0) {
            if text.len() + end > limit {
                return Err(too_long);
            }
            text.try_reserve(end).map_err(|_| Errno::ENOMEM)?;
            text.extend_from_slice(&page[..end]);
            return Ok(text);
        }
        if text.len() + chunk > limit {
            return Err(too_long);
        }
        text.try_reserve(chunk).map_err(|_| Errno::ENOMEM)?;
        text.extend_from_slice(&page[..chunk]);
        at += chunk as u64;
    }
}
