//! Reaching user memory from a system call: every address is checked
//! against the process's own page tables, so a bad pointer is EFAULT and
//! never a kernel fault. Copy-on-write and demand-zero pages are resolved
//! first, as the program's own write would.
//!
//! Must never write through a translation without write rights, nor touch
//! an address at or above the user half's end.

use core::cmp::min;

use machine::frame_access;
use vmem::{Access, FaultOutcome, PAGE_SIZE};

use super::processes::NativeProcess;
use crate::address_spaces::{carry_out, KernelSpace};
use crate::errno::Errno;

/// Copies `bytes` to `address` in `process`'s memory.
pub fn write_user(process: &NativeProcess, address: u64, bytes: &[u8]) -> Result<(), Errno> {
    let end = address.checked_add(bytes.len() as u64).ok_or(Errno::EFAULT)?;
    if end > vmem::USER_END {
        return Err(Errno::EFAULT);
    }
    let mut pending_flush = None;
    let written = process.with_memory(|memory| {
        let mut done = 0;
        while done < bytes.len() {
            let at = address + done as u64;
            let page_offset = (at % PAGE_SIZE) as usize;
            let chunk = min(bytes.len() - done, PAGE_SIZE as usize - page_offset);
            let frame = writable_frame(memory, at, &mut pending_flush)?;
            if !frame_access::write_bytes(frame, page_offset, &bytes[done..done + chunk]) {
                return Err(Errno::EFAULT);
            }
            done += chunk;
        }
        Ok(())
    })?;
    if let Some(flush) = pending_flush {
        carry_out(flush);
    }
    written
}

/// The frame behind `at`, made writable as a write by the program would.
fn writable_frame(memory: &mut KernelSpace, at: u64, flush: &mut Option<vmem::TlbFlush>) -> Result<u64, Errno> {
    let usable = |memory: &KernelSpace| {
        memory.translate(at).filter(|page| page.rights.write() && !page.copy_on_write).map(|page| page.frame)
    };
    if let Some(frame) = usable(memory) {
        return Ok(frame);
    }
    match memory.handle_fault(at, Access::Write) {
        Ok(FaultOutcome::Copied { flush: copied }) => match flush {
            // A second copied page in one call: flush the whole space there.
            Some(pending) => {
                pending.everything = true;
                for (word, more) in pending.cpus.0.iter_mut().zip(copied.cpus.0) {
                    *word |= more;
                }
            }
            None => *flush = Some(copied),
        },
        Ok(_) => {}
        Err(_) => return Err(Errno::EFAULT),
    }
    usable(memory).ok_or(Errno::EFAULT)
}
