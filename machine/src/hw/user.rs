//! Running user mode (ring 3): entering it, and every way of leaving it.
//!
//! The model is "run until something happens": [`run_user`] enters ring 3
//! with the registers of a [`UserContext`] and returns to its caller, on the
//! caller's own kernel stack, at the next `syscall`, exception or interrupt,
//! with the user registers saved back into the context and a [`UserExit`]
//! saying why. Everything a system call or a signal does is then ordinary
//! safe code in the layers above, which loop on `run_user`.
//!
//! How: `run_user` pushes the kernel's callee-saved registers, records its
//! stack pointer in per-CPU data (`gs:`) and in the TSS (so an interrupt in
//! ring 3 lands just below it), and `iretq`s to user mode. The `syscall`
//! entry and the trap entry (for traps from ring 3) store the user
//! registers into the context and return from `run_user` by restoring that
//! stack pointer. Interrupts stay off from entry until the exit is
//! recorded, so nothing can move the thread in between; the interrupt's
//! handler runs afterwards, in `run_user`, with the thread on its own
//! stack, so it may reschedule freely. The FPU/SSE/AVX state is restored
//! before entry and saved after exit (the kernel itself never uses it).
//!
//! Must never return to user mode with a kernel address in RIP or RSP, or
//! with flags the user may not hold (IOPL, NT, VM, interrupts off).

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::gdt::{KERNEL_CODE_SELECTOR, USER_CODE_SELECTOR, USER_DATA_SELECTOR};
use super::percpu::{MAX_CPUS, TSS_RING0_STACK_OFFSET, USER_CONTEXT_OFFSET, USER_KERNEL_STACK_OFFSET, USER_SCRATCH_OFFSET};
use super::trap_entry::TrapFrame;
use super::{cpu, trap};

pub use crate::user_half::USER_END;

/// Bytes of the extended-state save area (x87, SSE, AVX fit in 832).
const FPU_AREA_BYTES: usize = 1024;

/// User registers, as saved on exit and loaded on entry.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserRegisters {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rsp: u64,
    pub rip: u64,
    pub rflags: u64,
    /// The FS base (thread pointer, set with `arch_prctl`).
    pub fs_base: u64,
}

#[repr(C, align(64))]
#[derive(Clone)]
pub(crate) struct FpuArea([u8; FPU_AREA_BYTES]);

impl FpuArea {
    /// The state of a CPU after reset (as FNINIT and the MXCSR default
    /// leave it).
    pub(crate) fn initial() -> FpuArea {
        let mut fpu = FpuArea([0; FPU_AREA_BYTES]);
        // FXSAVE layout: FCW at 0 (0x37F: all exceptions masked), MXCSR at
        // 24 (0x1F80: all SIMD exceptions masked); the zero XSAVE header
        // marks every other component as in its initial state.
        fpu.0[0..2].copy_from_slice(&0x037Fu16.to_le_bytes());
        fpu.0[24..28].copy_from_slice(&0x1F80u32.to_le_bytes());
        fpu
    }

    /// The x87 and SSE state in FXSAVE's 512-byte layout. A component the
    /// XSAVE header marks as in its initial state reads as that state.
    pub(crate) fn legacy(&self) -> [u8; LEGACY_FPU_BYTES] {
        let mut bytes = [0u8; LEGACY_FPU_BYTES];
        bytes.copy_from_slice(&self.0[..LEGACY_FPU_BYTES]);
        if XSAVE_MASK.load(Ordering::Relaxed) != 0 {
            let in_use = self.0[XSAVE_HEADER_OFFSET];
            if in_use & 1 == 0 {
                // x87: FCW 0x37F, everything else (FSW, tags, FOP, FIP, FDP, ST0-7) zero.
                bytes[..24].fill(0);
                bytes[0..2].copy_from_slice(&0x037Fu16.to_le_bytes());
                bytes[32..160].fill(0);
            }
            if in_use & 2 == 0 {
                bytes[160..416].fill(0);
            }
        }
        bytes
    }

    /// Replaces the x87 and SSE state with `bytes` (FXSAVE's layout); MXCSR
    /// bits this CPU does not have (its MXCSR mask) are refused (`false`),
    /// since restoring them would fault.
    pub(crate) fn set_legacy(&mut self, bytes: &[u8; LEGACY_FPU_BYTES]) -> bool {
        let mxcsr = u32::from_le_bytes([bytes[24], bytes[25], bytes[26], bytes[27]]);
        if mxcsr & !MXCSR_SUPPORTED.load(Ordering::Relaxed) != 0 {
            return false;
        }
        let mask_field = [self.0[28], self.0[29], self.0[30], self.0[31]];
        self.0[..LEGACY_FPU_BYTES].copy_from_slice(bytes);
        self.0[28..32].copy_from_slice(&mask_field);
        if XSAVE_MASK.load(Ordering::Relaxed) != 0 {
            // The header now says x87 and SSE hold what was written.
            self.0[XSAVE_HEADER_OFFSET] |= 3;
        }
        true
    }
}

/// Bytes of FXSAVE's layout (x87 and SSE), the start of an XSAVE area.
pub const LEGACY_FPU_BYTES: usize = 512;
/// Where XSAVE's header (its first byte: XSTATE_BV's low bits) starts.
const XSAVE_HEADER_OFFSET: usize = 512;
/// MXCSR bits the CPU accepts (FXSAVE's MXCSR_MASK; 0xFFBF when it
/// reports none), read by `init_cpu`.
static MXCSR_SUPPORTED: AtomicU32 = AtomicU32::new(0xFFBF);

/// The FPU registers of CPU `me` no longer hold any context's state (a
/// guest used them): the next entry to user mode restores in full.
pub(crate) fn forget_fpu_here(me: usize) {
    if let Some(slot) = FPU_HELD_BY.get(me) {
        slot.store(0, Ordering::Relaxed);
    }
}

/// A user thread's machine state: registers, extended (FPU/SSE/AVX) state,
/// and what the last exit recorded.
#[repr(C)]
#[derive(Clone)]
pub struct UserContext {
    pub registers: UserRegisters,
    exit_kind: u64,
    exit_error_code: u64,
    exit_address: u64,
    fpu: FpuArea,
    /// When this context's FPU state was last saved (0: never): with the
    /// per-CPU record below it tells whether the CPU's registers still
    /// hold exactly that state.
    fpu_epoch: u64,
    /// Time-stamp cycles spent in user mode since the last
    /// [`UserContext::take_user_cycles`].
    user_cycles: u64,
}

/// Per CPU: the context whose FPU state the registers hold (its address)
/// and the epoch of that save; and the FS base last written to the MSR.
/// Only the CPU itself touches its entries, with interrupts off.
static FPU_HELD_BY: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(0) }; MAX_CPUS];
static FPU_HELD_EPOCH: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
static FS_BASE_LOADED: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(u64::MAX) }; MAX_CPUS];

/// The epoch of the next save on CPU `me`, unique machine-wide: the CPU's
/// own count above bit 16, the CPU (plus one) below — no counter shared
/// between CPUs on the path of every exit from user mode.
#[inline(always)]
fn next_fpu_epoch(me: usize) -> u64 {
    let count = FPU_HELD_EPOCH[me].load(Ordering::Relaxed) >> 16;
    ((count + 1) << 16) | (me as u64 + 1)
}

/// `exit_kind` values (below 256: the trap vector).
const EXIT_SYSCALL: u64 = 0x100;

// Field offsets for the assembly.
const RAX: usize = core::mem::offset_of!(UserRegisters, rax);
const RBX: usize = core::mem::offset_of!(UserRegisters, rbx);
const RCX: usize = core::mem::offset_of!(UserRegisters, rcx);
const RDX: usize = core::mem::offset_of!(UserRegisters, rdx);
const RSI: usize = core::mem::offset_of!(UserRegisters, rsi);
const RDI: usize = core::mem::offset_of!(UserRegisters, rdi);
const RBP: usize = core::mem::offset_of!(UserRegisters, rbp);
const R8: usize = core::mem::offset_of!(UserRegisters, r8);
const R9: usize = core::mem::offset_of!(UserRegisters, r9);
const R10: usize = core::mem::offset_of!(UserRegisters, r10);
const R11: usize = core::mem::offset_of!(UserRegisters, r11);
const R12: usize = core::mem::offset_of!(UserRegisters, r12);
const R13: usize = core::mem::offset_of!(UserRegisters, r13);
const R14: usize = core::mem::offset_of!(UserRegisters, r14);
const R15: usize = core::mem::offset_of!(UserRegisters, r15);
const RSP: usize = core::mem::offset_of!(UserRegisters, rsp);
const RIP: usize = core::mem::offset_of!(UserRegisters, rip);
const RFLAGS: usize = core::mem::offset_of!(UserRegisters, rflags);
const EXIT_KIND: usize = core::mem::offset_of!(UserContext, exit_kind);

/// Flags user code may set: CF PF AF ZF SF TF DF OF AC ID.
const USER_FLAGS: u64 = 0x0025_0DD5;
/// Always set in user mode: IF and the reserved bit 1.
const FORCED_FLAGS: u64 = 0x202;

impl UserContext {
    /// A context that starts at `entry` with stack pointer `stack`, every
    /// other register zero and the FPU in its initial state.
    pub fn new(entry: u64, stack: u64) -> Self {
        let fpu = FpuArea::initial();
        Self {
            registers: UserRegisters { rip: entry, rsp: stack, rflags: FORCED_FLAGS, ..UserRegisters::default() },
            exit_kind: 0,
            exit_error_code: 0,
            exit_address: 0,
            fpu,
            fpu_epoch: 0,
            user_cycles: 0,
        }
    }

    /// The time-stamp cycles spent in user mode since the last call (each
    /// stay measured with interrupts off, from just before the entry to
    /// just after the exit, so it never includes another thread's time).
    #[inline]
    pub fn take_user_cycles(&mut self) -> u64 {
        core::mem::take(&mut self.user_cycles)
    }
}

/// Why user mode was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserExit {
    /// A `syscall` instruction: number in `rax`, arguments in `rdi`, `rsi`,
    /// `rdx`, `r10`, `r8`, `r9`; the result goes into `rax`.
    Syscall,
    /// A device interrupt or IPI; its handler has run.
    Interrupt { vector: u8 },
    /// User mode was not entered: the caller's `unless` held once
    /// interrupts were off (a kick came after its last look).
    Kicked,
    /// A CPU exception caused by the user code (for a page fault `address`
    /// is CR2). Also reported, as a general-protection fault, when the
    /// context's RIP or RSP lies outside the user half.
    Exception { vector: u8, error_code: u64, address: u64 },
}

/// Vector numbers of the exceptions the layers above turn into signals.
pub mod vectors {
    pub const DIVIDE_ERROR: u8 = 0;
    pub const DEBUG: u8 = 1;
    pub const BREAKPOINT: u8 = 3;
    pub const INVALID_OPCODE: u8 = 6;
    pub const GENERAL_PROTECTION: u8 = 13;
    pub const PAGE_FAULT: u8 = 14;
    pub const FLOATING_POINT: u8 = 16;
    pub const SIMD_FLOATING_POINT: u8 = 19;
}

const MSR_STAR: u32 = 0xC000_0081;
const MSR_LSTAR: u32 = 0xC000_0082;
const MSR_FMASK: u32 = 0xC000_0084;
const MSR_FS_BASE: u32 = 0xC000_0100;
const EFER_SYSCALL_ENABLE: u64 = 1;
const CR4_OSFXSR: u64 = 1 << 9;
const CR4_OSXMMEXCPT: u64 = 1 << 10;
const CR4_OSXSAVE: u64 = 1 << 18;

/// The XCR0 mask in use (0: no XSAVE, FXSAVE instead); same on every CPU.
static XSAVE_MASK: AtomicU64 = AtomicU64::new(0);
/// How many CPUs have enabled user mode (tests check all of them did).
static READY_CPUS: AtomicU32 = AtomicU32::new(0);

/// Enables `syscall` and the FPU/SSE (and AVX with XSAVE) for user code on
/// this CPU. Called once per CPU at start-up.
pub(crate) fn init_cpu() {
    let star = (u64::from(USER_DATA_SELECTOR & !3) - 8) << 48 | u64::from(KERNEL_CODE_SELECTOR) << 32;
    cpu::write_msr(MSR_STAR, star);
    cpu::write_msr(MSR_LSTAR, syscall_entry as *const () as u64);
    // Cleared on entry: IF, DF, TF, AC (and NT).
    cpu::write_msr(MSR_FMASK, 0x0004_4700);
    cpu::write_msr(cpu::MSR_EFER, cpu::read_msr(cpu::MSR_EFER) | EFER_SYSCALL_ENABLE);
    let mut cr4 = cpu::read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT;
    let leaf1 = cpu::cpuid(1, 0);
    let has_xsave = leaf1.ecx & (1 << 26) != 0;
    if has_xsave {
        cr4 |= CR4_OSXSAVE;
    }
    cpu::write_cr4(cr4);
    if has_xsave {
        // x87 and SSE always; AVX when the CPU has it.
        let supported = u64::from(cpu::cpuid(0xD, 0).eax);
        let mask = supported & 0b111;
        // SAFETY: OSXSAVE is on and `mask` only names supported components
        // including x87 (bit 0), as XSETBV requires.
        unsafe { core::arch::asm!("xsetbv", in("ecx") 0, in("eax") mask as u32, in("edx") 0, options(nomem, nostack)) };
        XSAVE_MASK.store(mask, Ordering::Relaxed);
    }
    let mut probe = FpuArea([0; FPU_AREA_BYTES]);
    // SAFETY: the area is 64-byte aligned and larger than FXSAVE's 512
    // bytes, and exclusively borrowed; OSFXSR is on.
    unsafe { core::arch::asm!("fxsave64 [{}]", in(reg) probe.0.as_mut_ptr(), options(nostack)) };
    let reported = u32::from_le_bytes([probe.0[28], probe.0[29], probe.0[30], probe.0[31]]);
    MXCSR_SUPPORTED.store(if reported == 0 { 0xFFBF } else { reported }, Ordering::Relaxed);
    READY_CPUS.fetch_add(1, Ordering::Relaxed);
}

/// CPUs that have enabled user mode.
pub fn ready_cpus() -> u32 {
    READY_CPUS.load(Ordering::Relaxed)
}

/// Runs `context` in user mode until it makes a system call, faults or is
/// interrupted, and says which. The tables of the user's address space must
/// be active (`paging::switch_address_space`).
pub fn run_user(context: &mut UserContext) -> UserExit {
    let off = cpu::InterruptsOff::new();
    run_user_with(&off, None, context, || false)
}

/// Loads the user tables `tables` names and runs `context` in them, as
/// [`run_user`], unless `unless` holds once interrupts are off
/// ([`UserExit::Kicked`]: a wake IPI taken before that point did nothing,
/// one sent after it waits for user mode and brings the thread back). The
/// switch and the entry happen with interrupts off, so a thread preempted
/// before it enters cannot come back to another space's tables. Tables
/// `switch_address_space` refuses are a general-protection exit.
///
/// The caller has interrupts off (`off`) from before it chose `tables`
/// for this CPU; they stay off until user mode and come back on with the
/// caller's guard.
#[inline]
pub fn run_user_in(off: &cpu::InterruptsOff, tables: &super::frame_access::RootToken, context: &mut UserContext, unless: impl Fn() -> bool) -> UserExit {
    run_user_with(off, Some(tables), context, unless)
}

fn run_user_with(_off: &cpu::InterruptsOff, tables: Option<&super::frame_access::RootToken>, context: &mut UserContext, unless: impl Fn() -> bool) -> UserExit {
    let registers = &context.registers;
    if registers.rip >= USER_END || registers.rsp > USER_END {
        return UserExit::Exception { vector: vectors::GENERAL_PROTECTION, error_code: 0, address: registers.rip };
    }
    if unless() {
        return UserExit::Kicked;
    }
    if let Some(tables) = tables {
        if !super::paging::switch_with_token(tables) {
            return UserExit::Exception { vector: vectors::GENERAL_PROTECTION, error_code: 0, address: context.registers.rip };
        }
    }
    context.registers.rflags = (context.registers.rflags & USER_FLAGS) | FORCED_FLAGS;
    // The registers still hold this context's FPU state if its last exit
    // was on this CPU and no other context ran here since (the kernel uses
    // no FPU state): then the restore is skipped. Likewise the FS base.
    let me = super::percpu::current_index().min(MAX_CPUS - 1);
    let address = context as *const UserContext as usize;
    let held = context.fpu_epoch != 0
        && FPU_HELD_BY[me].load(Ordering::Relaxed) == address
        && FPU_HELD_EPOCH[me].load(Ordering::Relaxed) == context.fpu_epoch;
    if !held {
        restore_fpu(&context.fpu);
    }
    if FS_BASE_LOADED[me].load(Ordering::Relaxed) != context.registers.fs_base {
        cpu::write_msr(MSR_FS_BASE, context.registers.fs_base);
        FS_BASE_LOADED[me].store(context.registers.fs_base, Ordering::Relaxed);
    }
    let entered = cpu::read_timestamp_counter();
    // SAFETY: `context` is exclusively borrowed for the whole call and the
    // assembly writes only its register and exit fields; RIP and RSP were
    // checked to lie in the user half and the flags were masked, so `iretq`
    // enters ring 3 and nothing else; interrupts are off until the exit is
    // recorded, and every way out of ring 3 returns here on this stack
    // (the syscall and trap entries restore the stack pointer this call
    // saved in per-CPU data and the TSS).
    unsafe { enter_user(context as *mut UserContext) };
    context.user_cycles = context.user_cycles.wrapping_add(cpu::read_timestamp_counter().wrapping_sub(entered));
    save_fpu(&mut context.fpu);
    context.fpu_epoch = next_fpu_epoch(me);
    FPU_HELD_BY[me].store(address, Ordering::Relaxed);
    FPU_HELD_EPOCH[me].store(context.fpu_epoch, Ordering::Relaxed);
    let kind = context.exit_kind;
    let exit = if kind == EXIT_SYSCALL {
        UserExit::Syscall
    } else {
        let vector = kind as u8;
        // NMI, double fault and machine check are the machine's, not the program's.
        if vector < 32 && !matches!(vector, 2 | 8 | 18) {
            UserExit::Exception { vector, error_code: context.exit_error_code, address: context.exit_address }
        } else {
            trap::dispatch_interrupt_from_user(vector);
            UserExit::Interrupt { vector }
        }
    };
    exit
}

#[inline(always)]
pub(crate) fn restore_fpu(area: &FpuArea) {
    let mask = XSAVE_MASK.load(Ordering::Relaxed);
    // SAFETY: the area is 64-byte aligned, large enough for the enabled
    // components, and holds either the initial image (`UserContext::new`:
    // valid FCW/MXCSR, zero XSAVE header = initial state) or what
    // `save_fpu` stored; the kernel uses no FPU state of its own.
    unsafe {
        if mask != 0 {
            core::arch::asm!("xrstor64 [{}]", in(reg) area.0.as_ptr(), in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack, readonly));
        } else {
            core::arch::asm!("fxrstor64 [{}]", in(reg) area.0.as_ptr(), options(nostack, readonly));
        }
    }
}

#[inline(always)]
pub(crate) fn save_fpu(area: &mut FpuArea) {
    let mask = XSAVE_MASK.load(Ordering::Relaxed);
    // SAFETY: as in `restore_fpu`; the area is exclusively borrowed.
    unsafe {
        if mask != 0 {
            core::arch::asm!("xsave64 [{}]", in(reg) area.0.as_mut_ptr(), in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack));
        } else {
            core::arch::asm!("fxsave64 [{}]", in(reg) area.0.as_mut_ptr(), options(nostack));
        }
    }
}

/// Called by the trap entry for a trap from ring 3, on the ring-0 stack,
/// interrupts off: records it in the context being run.
pub(crate) extern "C" fn record_user_trap(frame: &TrapFrame) {
    let context = cpu::read_gs_word(USER_CONTEXT_OFFSET) as *mut UserContext;
    let address = if frame.vector == 14 { cpu::read_cr2() } else { 0 };
    // SAFETY: `run_user` stored a pointer to the context it exclusively
    // borrows, and it is waiting (this CPU is inside its call) with
    // interrupts off, so nothing else accesses the context now.
    let context = unsafe { &mut *context };
    let registers = &mut context.registers;
    registers.rax = frame.rax;
    registers.rbx = frame.rbx;
    registers.rcx = frame.rcx;
    registers.rdx = frame.rdx;
    registers.rsi = frame.rsi;
    registers.rdi = frame.rdi;
    registers.rbp = frame.rbp;
    registers.r8 = frame.r8;
    registers.r9 = frame.r9;
    registers.r10 = frame.r10;
    registers.r11 = frame.r11;
    registers.r12 = frame.r12;
    registers.r13 = frame.r13;
    registers.r14 = frame.r14;
    registers.r15 = frame.r15;
    registers.rip = frame.rip;
    registers.rsp = frame.rsp;
    registers.rflags = frame.rflags;
    context.exit_kind = frame.vector;
    context.exit_error_code = frame.error_code;
    context.exit_address = address;
}

extern "C" {
    fn enter_user(context: *mut UserContext);
    fn syscall_entry();
    /// Leaves the trap path back into `run_user` (jumped to, not called).
    pub(crate) fn user_trap_return();
}

core::arch::global_asm!(
    ".text",
    ".global enter_user",
    ".global syscall_entry",
    ".global user_trap_return",
    // enter_user(context: rdi)
    "enter_user:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "mov gs:[{kernel_stack}], rsp",
    "mov gs:[{tss_rsp0}], rsp",
    "mov gs:[{context}], rdi",
    "push {user_data}",
    "push qword ptr [rdi + {rsp}]",
    "push qword ptr [rdi + {rflags}]",
    "push {user_code}",
    "push qword ptr [rdi + {rip}]",
    "mov rax, [rdi + {rax}]",
    "mov rbx, [rdi + {rbx}]",
    "mov rcx, [rdi + {rcx}]",
    "mov rdx, [rdi + {rdx}]",
    "mov rsi, [rdi + {rsi}]",
    "mov rbp, [rdi + {rbp}]",
    "mov r8, [rdi + {r8}]",
    "mov r9, [rdi + {r9}]",
    "mov r10, [rdi + {r10}]",
    "mov r11, [rdi + {r11}]",
    "mov r12, [rdi + {r12}]",
    "mov r13, [rdi + {r13}]",
    "mov r14, [rdi + {r14}]",
    "mov r15, [rdi + {r15}]",
    "mov rdi, [rdi + {rdi}]",
    "swapgs",
    "iretq",
    // The `syscall` instruction lands here: ring 0, user RSP, user GS,
    // interrupts off (FMASK), RCX = user RIP, R11 = user RFLAGS.
    "syscall_entry:",
    "swapgs",
    "mov gs:[{scratch}], rsp",
    "mov rsp, gs:[{context}]",
    "mov [rsp + {rax}], rax",
    "mov [rsp + {rbx}], rbx",
    "mov [rsp + {rcx}], rcx",
    "mov [rsp + {rdx}], rdx",
    "mov [rsp + {rsi}], rsi",
    "mov [rsp + {rdi}], rdi",
    "mov [rsp + {rbp}], rbp",
    "mov [rsp + {r8}], r8",
    "mov [rsp + {r9}], r9",
    "mov [rsp + {r10}], r10",
    "mov [rsp + {r11}], r11",
    "mov [rsp + {r12}], r12",
    "mov [rsp + {r13}], r13",
    "mov [rsp + {r14}], r14",
    "mov [rsp + {r15}], r15",
    "mov [rsp + {rip}], rcx",
    "mov [rsp + {rflags}], r11",
    "mov rax, gs:[{scratch}]",
    "mov [rsp + {rsp}], rax",
    "mov qword ptr [rsp + {exit_kind}], {exit_syscall}",
    // Falls through. The trap entry jumps here after `record_user_trap`.
    "user_trap_return:",
    "mov rsp, gs:[{kernel_stack}]",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    kernel_stack = const USER_KERNEL_STACK_OFFSET,
    tss_rsp0 = const TSS_RING0_STACK_OFFSET,
    context = const USER_CONTEXT_OFFSET,
    scratch = const USER_SCRATCH_OFFSET,
    user_data = const USER_DATA_SELECTOR as u64,
    user_code = const USER_CODE_SELECTOR as u64,
    rax = const RAX,
    rbx = const RBX,
    rcx = const RCX,
    rdx = const RDX,
    rsi = const RSI,
    rdi = const RDI,
    rbp = const RBP,
    r8 = const R8,
    r9 = const R9,
    r10 = const R10,
    r11 = const R11,
    r12 = const R12,
    r13 = const R13,
    r14 = const R14,
    r15 = const R15,
    rsp = const RSP,
    rip = const RIP,
    rflags = const RFLAGS,
    exit_kind = const EXIT_KIND,
    exit_syscall = const EXIT_SYSCALL,
);
