//! Thin, safe wrappers over single privileged instructions: port I/O, MSRs,
//! control registers, CPUID, interrupt flag, halt.
//!
//! Each wrapper is safe to call because the machine layer owns the hardware
//! they touch; callers above only get the narrower APIs built on them. Port
//! and MSR writes can still misconfigure the machine, so they stay
//! `pub(crate)`.

use core::arch::asm;

/// Reads a byte from an I/O port.
pub(crate) fn inb(port: u16) -> u8 {
    let value: u8;
    // SAFETY: port input has no memory effects; the machine layer owns all ports.
    unsafe { asm!("in al, dx", out("al") value, in("dx") port, options(nomem, nostack, preserves_flags)) };
    value
}

/// Reads a 16-bit word from an I/O port.
pub(crate) fn inw(port: u16) -> u16 {
    let value: u16;
    // SAFETY: as for `inb`.
    unsafe { asm!("in ax, dx", out("ax") value, in("dx") port, options(nomem, nostack, preserves_flags)) };
    value
}

/// Reads a 32-bit word from an I/O port.
pub(crate) fn inl(port: u16) -> u32 {
    let value: u32;
    // SAFETY: as for `inb`.
    unsafe { asm!("in eax, dx", out("eax") value, in("dx") port, options(nomem, nostack, preserves_flags)) };
    value
}

/// Writes a byte to an I/O port.
pub(crate) fn outb(port: u16, value: u8) {
    // SAFETY: port output has no effect on Rust-visible memory.
    unsafe { asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack, preserves_flags)) };
}

/// Writes a 16-bit word to an I/O port.
pub(crate) fn outw(port: u16, value: u16) {
    // SAFETY: as for `outb`.
    unsafe { asm!("out dx, ax", in("dx") port, in("ax") value, options(nomem, nostack, preserves_flags)) };
}

/// Writes a 32-bit word to an I/O port.
pub(crate) fn outl(port: u16, value: u32) {
    // SAFETY: as for `outb`.
    unsafe { asm!("out dx, eax", in("dx") port, in("eax") value, options(nomem, nostack, preserves_flags)) };
}

/// Reads a model-specific register.
pub(crate) fn read_msr(msr: u32) -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: the callers only read architectural MSRs that exist on every
    // x86-64 CPU or that they checked with CPUID first.
    unsafe { asm!("rdmsr", in("ecx") msr, out("eax") low, out("edx") high, options(nomem, nostack, preserves_flags)) };
    (u64::from(high) << 32) | u64::from(low)
}

/// Writes a model-specific register.
pub(crate) fn write_msr(msr: u32, value: u64) {
    // SAFETY: callers write MSRs whose effect they own (GS base, EFER, APIC).
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack, preserves_flags))
    };
}

pub(crate) const MSR_EFER: u32 = 0xC000_0080;
pub(crate) const MSR_GS_BASE: u32 = 0xC000_0101;
pub(crate) const EFER_NO_EXECUTE_ENABLE: u64 = 1 << 11;

/// Result of one CPUID leaf.
#[derive(Debug, Clone, Copy)]
pub struct CpuidResult {
    pub eax: u32,
    pub ebx: u32,
    pub ecx: u32,
    pub edx: u32,
}

/// Executes CPUID for `leaf`/`subleaf`.
pub fn cpuid(leaf: u32, subleaf: u32) -> CpuidResult {
    let result = core::arch::x86_64::__cpuid_count(leaf, subleaf);
    CpuidResult { eax: result.eax, ebx: result.ebx, ecx: result.ecx, edx: result.edx }
}

pub(crate) fn read_cr0() -> u64 {
    let value;
    // SAFETY: reading a control register has no side effects.
    unsafe { asm!("mov {}, cr0", out(reg) value, options(nomem, nostack, preserves_flags)) };
    value
}

pub(crate) fn read_cr2() -> u64 {
    let value;
    // SAFETY: reading a control register has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) value, options(nomem, nostack, preserves_flags)) };
    value
}

pub(crate) fn read_cr3() -> u64 {
    let value;
    // SAFETY: reading a control register has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) value, options(nomem, nostack, preserves_flags)) };
    value
}

pub(crate) fn read_cr4() -> u64 {
    let value;
    // SAFETY: reading a control register has no side effects.
    unsafe { asm!("mov {}, cr4", out(reg) value, options(nomem, nostack, preserves_flags)) };
    value
}

/// CR4.PGE: global pages (kept across CR3 loads; toggling it drops them).
pub(crate) const CR4_PGE: u64 = 1 << 7;

pub(crate) fn write_cr4(value: u64) {
    // SAFETY: callers only set feature bits they checked with CPUID (SMEP,
    // SMAP, PGE, OSFXSR…), which do not change the meaning of current
    // mappings, or toggle PGE off and on again to flush global entries.
    unsafe { asm!("mov cr4, {}", in(reg) value, options(nostack, preserves_flags)) };
}

/// The memory protections of the CPU this runs on: what CPUID offers and
/// what is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protections {
    /// CPUID offers SMEP (no kernel execution of user pages).
    pub smep_offered: bool,
    /// CR4.SMEP is set.
    pub smep_on: bool,
    /// CPUID offers SMAP (no kernel access to user pages outside user copies).
    pub smap_offered: bool,
    /// CR4.SMAP is set.
    pub smap_on: bool,
    /// EFER.NXE is set (pages can be marked not executable).
    pub no_execute_on: bool,
    /// CR0.WP is set (the kernel honours read-only pages too).
    pub write_protect_on: bool,
}

/// The protections of this CPU, read from CPUID and its registers.
pub fn protections() -> Protections {
    let features = cpuid(7, 0).ebx;
    let cr4 = read_cr4();
    let cr0: u64;
    // SAFETY: reading a control register has no side effects.
    unsafe { asm!("mov {}, cr0", out(reg) cr0, options(nomem, nostack, preserves_flags)) };
    Protections {
        smep_offered: features & (1 << 7) != 0,
        smep_on: cr4 & (1 << 20) != 0,
        smap_offered: features & (1 << 20) != 0,
        smap_on: cr4 & (1 << 21) != 0,
        no_execute_on: read_msr(MSR_EFER) & EFER_NO_EXECUTE_ENABLE != 0,
        write_protect_on: cr0 & (1 << 16) != 0,
    }
}

/// Turns on the protections this CPU has: SMEP (no kernel execution of
/// user pages) and SMAP (no kernel access to user pages outside explicit
/// user-copy windows). Returns (SMEP, SMAP) as enabled.
pub(crate) fn enable_supervisor_protections() -> (bool, bool) {
    const CR4_SMEP: u64 = 1 << 20;
    const CR4_SMAP: u64 = 1 << 21;
    let features = cpuid(7, 0).ebx;
    let smep = features & (1 << 7) != 0;
    let smap = features & (1 << 20) != 0;
    let mut cr4 = read_cr4();
    if smep {
        cr4 |= CR4_SMEP;
    }
    if smap {
        cr4 |= CR4_SMAP;
    }
    write_cr4(cr4);
    super::user_copy::note_smap(smap);
    (smep, smap)
}

/// Reads the word at `offset` of this CPU's per-CPU data (`gs:[offset]`).
pub(crate) fn read_gs_word(offset: usize) -> u64 {
    let value;
    // SAFETY: in the kernel GS always holds this CPU's per-CPU block, or
    // before it is installed the placeholder (`percpu::use_placeholder`,
    // first thing on every CPU), which covers the offsets read before;
    // callers pass offsets of `u64`-sized fields.
    unsafe { asm!("mov {}, gs:[{}]", out(reg) value, in(reg) offset, options(nostack, preserves_flags, readonly)) };
    value
}

/// Reads the time-stamp counter.
#[inline]
pub fn read_timestamp_counter() -> u64 {
    // SAFETY: RDTSC has no side effects; CR4.TSD is never set.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// True when maskable interrupts are enabled on this CPU.
#[inline]
pub fn interrupts_enabled() -> bool {
    let flags: u64;
    // SAFETY: reading RFLAGS through the stack has no other effect.
    unsafe { asm!("pushfq", "pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags & (1 << 9) != 0
}

/// Disables maskable interrupts on this CPU.
#[inline]
pub fn disable_interrupts() {
    // SAFETY: masking interrupts cannot break memory safety.
    unsafe { asm!("cli", options(nomem, nostack)) };
}

/// Enables maskable interrupts on this CPU.
#[inline]
pub fn enable_interrupts() {
    // SAFETY: the IDT is loaded before anything calls this (the machine
    // layer enables interrupts only after `trap::install`).
    unsafe { asm!("sti", options(nomem, nostack)) };
}

/// Enables interrupts and halts until the next one, atomically (no wake-up
/// lost between the two instructions).
pub fn enable_interrupts_and_halt() {
    // SAFETY: as for `enable_interrupts`; `sti; hlt` keeps the one-instruction
    // interrupt shadow so a pending interrupt wakes the halt.
    unsafe { asm!("sti", "hlt", options(nomem, nostack)) };
}

/// Interrupts off on this CPU from [`InterruptsOff::new`] until the guard
/// drops, which turns them back on if they were on before: the one way
/// kernel code masks interrupts for a stretch (no hand-written save and
/// restore pairs). A guard may outlive a context switch: it belongs to the
/// thread, and restores the thread's state on whichever CPU it drops.
#[must_use = "interrupts come back on when the guard drops"]
pub struct InterruptsOff {
    were_enabled: bool,
}

impl InterruptsOff {
    /// Saves whether interrupts are on, then masks them.
    #[inline(always)]
    pub fn new() -> Self {
        let were_enabled = interrupts_enabled();
        disable_interrupts();
        Self { were_enabled }
    }

    /// Whether interrupts were on before (what dropping restores).
    pub fn were_enabled(&self) -> bool {
        self.were_enabled
    }

    /// Ends the guard without restoring, returning what it would restore:
    /// for lock policies that carry the state as a plain token.
    pub fn into_token(self) -> bool {
        let were_enabled = self.were_enabled;
        core::mem::forget(self);
        were_enabled
    }

    /// A guard from [`InterruptsOff::into_token`]'s token.
    pub fn from_token(were_enabled: bool) -> Self {
        Self { were_enabled }
    }
}

impl Default for InterruptsOff {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for InterruptsOff {
    #[inline(always)]
    fn drop(&mut self) {
        if self.were_enabled {
            enable_interrupts();
        }
    }
}

/// Runs `body` with interrupts disabled, restoring the previous state.
pub fn without_interrupts<R>(body: impl FnOnce() -> R) -> R {
    let _off = InterruptsOff::new();
    body()
}

/// Stops this CPU for good.
pub fn halt_forever() -> ! {
    loop {
        disable_interrupts();
        // SAFETY: halting with interrupts masked has no memory effect.
        unsafe { asm!("hlt", options(nomem, nostack)) };
    }
}

/// Spin-loop hint.
pub fn relax() {
    core::hint::spin_loop();
}

/// Executes `ud2` (an invalid-opcode exception), for testing the fault path.
pub fn invalid_opcode() -> ! {
    // SAFETY: ud2 raises #UD, which the trap layer reports as fatal; it never returns.
    unsafe { asm!("ud2", options(noreturn)) }
}
