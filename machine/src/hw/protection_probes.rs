//! Deliberate kernel accesses to user pages, for the in-kernel test that
//! shows SMAP and SMEP stopping them (issue 23): a read of a present user
//! page without opening SMAP's window, and a call into a present,
//! executable user page. The fault each causes is recovered here
//! ([`recover`], from the trap handler) and answered as "blocked"; on a
//! CPU without the feature the access happens and is answered as
//! "allowed" (the caller's page then holds only a `ret`).
//!
//! Used by tests only. Both probes run with interrupts off on a space the
//! caller loaded on this CPU, and touch nothing but the page they are
//! given; may not be used to reach user memory for real (that is
//! `frame_access`'s, with the window open).

use core::sync::atomic::{AtomicU64, Ordering};

use super::trap_entry::TrapFrame;

const PAGE_FAULT: u64 = 14;
/// Page-fault error code bit: the access was an instruction fetch.
const FETCH: u64 = 1 << 4;
/// Page-fault error code bit: the page was present (a protection fault).
const PRESENT: u64 = 1;

/// The user address the call probe is aimed at while it runs, else 0.
static CALL_TARGET: AtomicU64 = AtomicU64::new(0);

// rdi: the user address to call. Returns 0 in rax when the call came back
// (the page ran), 1 when its fetch faulted: `recover` resumes at
// `lamina_smep_probe_blocked`, which drops the return address the call
// pushed.
core::arch::global_asm!(
    ".text",
    ".global lamina_smep_probe",
    "lamina_smep_probe:",
    "    xor eax, eax",
    "    call rdi",
    "    ret",
    ".global lamina_smep_probe_blocked",
    "lamina_smep_probe_blocked:",
    "    add rsp, 8",
    "    mov eax, 1",
    "    ret",
);

extern "C" {
    fn lamina_smep_probe(target: u64) -> u64;
    static lamina_smep_probe_blocked: u8;
}

/// What a probe saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The access faulted as a protection fault on a present page.
    Blocked,
    /// The access happened.
    Allowed,
    /// `root` is not this CPU's loaded space (nothing was tried).
    NotLoaded,
}

/// Reads `buffer.len()` bytes at user `address` of the loaded space
/// `root` with SMAP's window shut.
pub fn read_user_shut(root: u64, address: u64, buffer: &mut [u8]) -> Probe {
    let _off = super::cpu::InterruptsOff::new();
    if !super::frame_access::is_loaded_here(root) {
        return Probe::NotLoaded;
    }
    if super::user_copy::read_with_window_shut(address, buffer) { Probe::Allowed } else { Probe::Blocked }
}

/// Calls user `address` of the loaded space `root` from the kernel; the
/// page there must be mapped user-executable and hold a `ret` (0xc3) at
/// `address`, nothing the kernel could be hurt by running.
pub fn call_user(root: u64, address: u64) -> Probe {
    let _off = super::cpu::InterruptsOff::new();
    if !super::frame_access::is_loaded_here(root) || address >= crate::user_half::USER_END {
        return Probe::NotLoaded;
    }
    CALL_TARGET.store(address, Ordering::SeqCst);
    // SAFETY: interrupts are off and the target is a user page of the
    // loaded space that the caller filled with a single `ret`: run, it
    // returns at once with every register but rax as it was (the probe
    // clobbers only rax, which the C ABI lets it); stopped by SMEP, its
    // fetch faults and `recover` resumes at the probe's blocked exit,
    // which pops the return address the call pushed.
    let blocked = unsafe { lamina_smep_probe(address) } == 1;
    CALL_TARGET.store(0, Ordering::SeqCst);
    if blocked { Probe::Blocked } else { Probe::Allowed }
}

/// Called by the trap handler for a kernel-mode page fault: the call
/// probe's fetch of its target, refused on a present page, resumes at the
/// probe's blocked exit. True when it did.
pub(crate) fn recover(frame: &mut TrapFrame) -> bool {
    let target = CALL_TARGET.load(Ordering::SeqCst);
    if frame.vector != PAGE_FAULT || target == 0 || frame.rip != target || frame.error_code & (FETCH | PRESENT) != FETCH | PRESENT {
        return false;
    }
    // Only the label's address is taken; nothing is read.
    frame.rip = core::ptr::addr_of!(lamina_smep_probe_blocked) as u64;
    true
}
