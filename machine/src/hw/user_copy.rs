//! Copies between the kernel and the user half through the CPU's own
//! translation, as Linux's `copy_from_user` does: `rep movs` with a fault
//! fix-up. A page fault inside the copy does not stop the kernel: the
//! trap handler ([`recover`]) sends the copy to its failure exit, and the
//! caller falls back to the checked walk of the tables, which resolves
//! what a program's own access would (demand-zero, copy-on-write) or
//! answers EFAULT.
//!
//! Used only by `frame_access::{read,write}_user_on_root`, with interrupts
//! off and the space's root loaded on this CPU (a shootdown waits for the
//! copy, so no frame it reaches is freed meanwhile, and the translation is
//! the space's). May not be used for anything but the user half: a range
//! that leaves it is refused before any access.

use core::sync::atomic::{AtomicBool, Ordering};

use super::trap_entry::TrapFrame;

/// The page-fault vector.
const PAGE_FAULT: u64 = 14;

/// Whether CR4.SMAP is on: the copy then opens its window with `stac`
/// (an instruction that is invalid on a CPU without SMAP).
static SMAP_ON: AtomicBool = AtomicBool::new(false);

/// Records that SMAP was turned on (every CPU turns on the same features).
pub(crate) fn note_smap(on: bool) {
    SMAP_ON.store(on, Ordering::Relaxed);
}

// rdi: destination, rsi: source, rdx: length. Returns 0 in rax when all
// was copied, 1 when a fault stopped it. Eight bytes per iteration, then
// the rest (under icount a `rep` counts once per iteration).
core::arch::global_asm!(
    ".text",
    ".global lamina_user_copy",
    "lamina_user_copy:",
    "    mov rcx, rdx",
    "    shr rcx, 3",
    ".global lamina_user_copy_words",
    "lamina_user_copy_words:",
    "    rep movsq",
    "    mov rcx, rdx",
    "    and rcx, 7",
    ".global lamina_user_copy_bytes",
    "lamina_user_copy_bytes:",
    "    rep movsb",
    "    xor eax, eax",
    "    ret",
    ".global lamina_user_copy_failed",
    "lamina_user_copy_failed:",
    "    mov eax, 1",
    "    ret",
);

extern "C" {
    fn lamina_user_copy(destination: *mut u8, source: *const u8, length: usize) -> u64;
    static lamina_user_copy_words: u8;
    static lamina_user_copy_bytes: u8;
    static lamina_user_copy_failed: u8;
}

/// Whether `[address, address + length)` lies in the user half.
fn in_user_half(address: u64, length: usize) -> bool {
    address.checked_add(length as u64).is_some_and(|end| end <= crate::user_half::USER_END)
}

/// Copies `buffer.len()` bytes from user `address` with the CPU's
/// translation. The caller (`read_user_on_root`) guarantees the conditions of
/// the module comment. False: outside the user half, or a fault.
pub(crate) fn read(address: u64, buffer: &mut [u8]) -> bool {
    if !in_user_half(address, buffer.len()) {
        return false;
    }
    // SAFETY: the destination is the caller's exclusive buffer of that
    // length; the source range is in the user half (checked above), so the
    // copy touches only user pages and a fault there is recovered by
    // `recover` (the only faulting instructions are the two `rep movs`).
    with_window(|| unsafe { lamina_user_copy(buffer.as_mut_ptr(), address as *const u8, buffer.len()) == 0 })
}

/// Copies `bytes` to user `address` with the CPU's translation (CR0.WP is
/// on: a read-only page faults, it is never written). False: outside the
/// user half, or a fault (some bytes may have been written before it).
pub(crate) fn write(address: u64, bytes: &[u8]) -> bool {
    if !in_user_half(address, bytes.len()) {
        return false;
    }
    // SAFETY: as in `read`, with the kernel buffer as the source; the
    // destination is user memory only.
    with_window(|| unsafe { lamina_user_copy(address as *mut u8, bytes.as_ptr(), bytes.len()) == 0 })
}

/// [`read`] without opening SMAP's window: with SMAP on, a present user
/// page faults and the answer is false (`protection_probes`, for the test
/// that shows SMAP at work; nothing else may call it).
pub(crate) fn read_with_window_shut(address: u64, buffer: &mut [u8]) -> bool {
    if !in_user_half(address, buffer.len()) {
        return false;
    }
    // SAFETY: as in `read`; the fault SMAP raises is recovered the same way.
    unsafe { lamina_user_copy(buffer.as_mut_ptr(), address as *const u8, buffer.len()) == 0 }
}

/// Runs `copy` with user pages open to the kernel (SMAP's `stac` .. `clac`).
#[inline(always)]
fn with_window(copy: impl FnOnce() -> bool) -> bool {
    let smap = SMAP_ON.load(Ordering::Relaxed);
    if smap {
        // SAFETY: SMAP is on, so `stac` exists; it only sets RFLAGS.AC.
        unsafe { core::arch::asm!("stac", options(nomem, nostack)) };
    }
    let copied = copy();
    if smap {
        // SAFETY: as above; `clac` clears RFLAGS.AC.
        unsafe { core::arch::asm!("clac", options(nomem, nostack)) };
    }
    copied
}

/// Called by the trap handler for a kernel-mode exception: a page fault
/// at one of the copy's two `rep movs` resumes at its failure exit. True
/// when it did.
pub(crate) fn recover(frame: &mut TrapFrame) -> bool {
    if frame.vector != PAGE_FAULT {
        return false;
    }
    // Only the labels' addresses are taken; nothing is read.
    let (words, bytes, failed) = (
        core::ptr::addr_of!(lamina_user_copy_words) as u64,
        core::ptr::addr_of!(lamina_user_copy_bytes) as u64,
        core::ptr::addr_of!(lamina_user_copy_failed) as u64,
    );
    // A fault of the copy on the kernel's side would be a kernel bug: fatal.
    if (frame.rip != words && frame.rip != bytes) || super::cpu::read_cr2() >= crate::user_half::USER_END {
        return false;
    }
    frame.rip = failed;
    true
}
