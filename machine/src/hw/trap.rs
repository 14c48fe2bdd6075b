//! The interrupt descriptor table and the safe trap dispatcher.
//!
//! CPU exceptions are reported with a full register dump and a symbolized
//! backtrace; a breakpoint returns, every other kernel-mode exception stops
//! the machine. Device interrupts and IPIs go to handlers that layers
//! register by vector ([`set_handler`]). The entry stubs are in
//! `trap_entry.rs`; this file holds no assembly.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::gdt::{IST_DOUBLE_FAULT, IST_MACHINE_CHECK, IST_NMI, KERNEL_CODE_SELECTOR};
use super::trap_entry::{stub_address, TrapFrame};
use super::{apic, backtrace, cpu, cpu_snapshot, stacks, stop};

/// First vector of device interrupts (ISA IRQ n arrives at `IRQ_BASE + n`).
pub const IRQ_BASE: u8 = 0x20;
pub const VECTOR_TIMER: u8 = 0x30;
pub const VECTOR_STOP: u8 = 0xF0;
pub const VECTOR_WAKE: u8 = 0xF1;
/// TLB shootdown requests (`tlb.rs`).
pub const VECTOR_TLB: u8 = 0xF2;
pub const VECTOR_SPURIOUS: u8 = 0xFF;
const EXCEPTION_COUNT: u8 = 32;

const EXCEPTION_NAMES: [&str; 32] = [
    "divide error", "debug", "non-maskable interrupt", "breakpoint", "overflow", "bound range exceeded",
    "invalid opcode", "device not available", "double fault", "coprocessor segment overrun",
    "invalid TSS", "segment not present", "stack-segment fault", "general protection fault", "page fault",
    "reserved (15)", "x87 floating-point error", "alignment check", "machine check", "SIMD floating-point error",
    "virtualization exception", "control protection exception", "reserved (22)", "reserved (23)",
    "reserved (24)", "reserved (25)", "reserved (26)", "reserved (27)", "hypervisor injection",
    "VMM communication", "security exception", "reserved (31)",
];

#[repr(C, align(16))]
struct InterruptDescriptorTable {
    entries: [[u64; 2]; 256],
}

static mut IDT: InterruptDescriptorTable = InterruptDescriptorTable { entries: [[0; 2]; 256] };

/// Handlers registered by upper layers, as `fn(&mut TrapFrame)` addresses.
static HANDLERS: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];
static BREAKPOINTS: AtomicU64 = AtomicU64::new(0);

fn gate(handler: u64, interrupt_stack: u8, user_callable: bool) -> [u64; 2] {
    let privilege: u64 = if user_callable { 3 } else { 0 };
    let low = (handler & 0xFFFF)
        | (u64::from(KERNEL_CODE_SELECTOR) << 16)
        | (u64::from(interrupt_stack) << 32)
        | ((0x8E | (privilege << 5)) << 40) // present interrupt gate
        | (((handler >> 16) & 0xFFFF) << 48);
    [low, handler >> 32]
}

/// Fills the IDT (once, on the bootstrap processor).
pub fn build() {
    for vector in 0..=255u8 {
        let interrupt_stack = match vector {
            8 => IST_DOUBLE_FAULT,
            2 => IST_NMI,
            18 => IST_MACHINE_CHECK,
            _ => 0,
        };
        let entry = gate(stub_address(vector), interrupt_stack, vector == 3);
        // SAFETY: `build` runs once on the bootstrap processor before any
        // CPU loads the IDT or enables interrupts, so nothing reads it concurrently.
        unsafe { (*core::ptr::addr_of_mut!(IDT)).entries[usize::from(vector)] = entry };
    }
}

/// Loads the IDT on this CPU.
pub fn load() {
    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let pointer = Pointer { limit: (256 * 16 - 1) as u16, base: core::ptr::addr_of!(IDT) as u64 };
    // SAFETY: the IDT is a static filled by `build` before any CPU calls this
    // and never changed afterwards; its gates point at the entry stubs.
    unsafe { core::arch::asm!("lidt [{}]", in(reg) &pointer, options(readonly, nostack, preserves_flags)) };
}

/// Registers `handler` for a device-interrupt or IPI vector. Exceptions
/// (vectors below 32) stay with the machine layer.
pub fn set_handler(vector: u8, handler: fn(&mut TrapFrame)) {
    if vector >= EXCEPTION_COUNT {
        // Release: a CPU that sees the handler sees what was set up before it.
        HANDLERS[usize::from(vector)].store(handler as usize, Ordering::Release);
    }
}

/// Number of breakpoint exceptions handled so far.
pub fn breakpoint_count() -> u64 {
    BREAKPOINTS.load(Ordering::Relaxed)
}

/// Executes a breakpoint instruction (the handler reports it and returns).
pub fn breakpoint() {
    // SAFETY: int3 traps into our own handler, which returns to the next instruction.
    unsafe { core::arch::asm!("int3", options(nomem, nostack)) };
}

pub(crate) extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let vector = frame.vector as u8;
    match vector {
        3 => {
            BREAKPOINTS.fetch_add(1, Ordering::Relaxed);
            crate::println!("lamina: breakpoint at {:#x} on CPU {}", frame.rip, super::percpu::current_index());
        }
        2 if stop::is_stopping() => stop::stopped_by_other_cpu(),
        2 if cpu_snapshot::is_requested() => cpu_snapshot::answer(frame),
        VECTOR_STOP => stop::stopped_by_other_cpu(),
        VECTOR_SPURIOUS => {}
        // A user copy's page fault: the copy fails, the kernel goes on.
        14 if super::user_copy::recover(frame) => {}
        // The SMEP test's deliberate call into a user page.
        14 if super::protection_probes::recover(frame) => {}
        0..EXCEPTION_COUNT => fatal_exception(frame),
        _ => dispatch_interrupt(vector, frame),
    }
}

/// Runs the handler of an interrupt that arrived in ring 3 (called by
/// `user::run_user` after the exit was recorded, interrupts off). An NMI
/// while the machine stops halts this CPU; a double fault or machine check
/// is fatal whatever the ring.
pub(crate) fn dispatch_interrupt_from_user(vector: u8) {
    let mut frame = TrapFrame { vector: u64::from(vector), cs: u64::from(super::gdt::USER_CODE_SELECTOR), ..TrapFrame::default() };
    match vector {
        2 if stop::is_stopping() => stop::stopped_by_other_cpu(),
        2 if cpu_snapshot::is_requested() => cpu_snapshot::answer(&frame),
        2 | VECTOR_SPURIOUS => {}
        VECTOR_STOP => stop::stopped_by_other_cpu(),
        8 | 18 => fatal_exception(&frame),
        _ => dispatch_interrupt(vector, &mut frame),
    }
}

fn dispatch_interrupt(vector: u8, frame: &mut TrapFrame) {
    // Acquire: pairs with the Release in `set_handler`.
    let handler = HANDLERS[usize::from(vector)].load(Ordering::Acquire);
    apic::end_of_interrupt();
    if handler != 0 {
        // SAFETY: only `set_handler` stores non-zero values, and it stores
        // the address of a `fn(&mut TrapFrame)`.
        let handler: fn(&mut TrapFrame) = unsafe { core::mem::transmute(handler) };
        handler(frame);
    }
}

fn fatal_exception(frame: &TrapFrame) -> ! {
    stop::begin_fatal();
    let vector = frame.vector as usize;
    let fault_address = cpu::read_cr2();
    crate::emergency_println!(
        "\nlamina: FATAL: {} (vector {}, error code {:#x}) on CPU {}",
        EXCEPTION_NAMES[vector],
        vector,
        frame.error_code,
        super::percpu::current_index()
    );
    if vector == 14 || vector == 8 {
        crate::emergency_println!("  faulting address (cr2) {fault_address:#018x}");
        if stacks::is_guard(fault_address) {
            crate::emergency_println!("  the address is in a guard page: kernel stack overflow");
        }
    }
    dump_registers(frame);
    backtrace::print_from(frame.rip, frame.rbp);
    stop::halt_machine(stop::ExitCode::Failure)
}

fn dump_registers(frame: &TrapFrame) {
    crate::emergency_println!("  rip {:#018x}  cs {:#06x}  rflags {:#010x}", frame.rip, frame.cs, frame.rflags);
    crate::emergency_println!("  rsp {:#018x}  ss {:#06x}", frame.rsp, frame.ss);
    crate::emergency_println!("  rax {:#018x}  rbx {:#018x}  rcx {:#018x}", frame.rax, frame.rbx, frame.rcx);
    crate::emergency_println!("  rdx {:#018x}  rsi {:#018x}  rdi {:#018x}", frame.rdx, frame.rsi, frame.rdi);
    crate::emergency_println!("  rbp {:#018x}  r8  {:#018x}  r9  {:#018x}", frame.rbp, frame.r8, frame.r9);
    crate::emergency_println!("  r10 {:#018x}  r11 {:#018x}  r12 {:#018x}", frame.r10, frame.r11, frame.r12);
    crate::emergency_println!("  r13 {:#018x}  r14 {:#018x}  r15 {:#018x}", frame.r13, frame.r14, frame.r15);
    crate::emergency_println!(
        "  cr0 {:#018x}  cr2 {:#018x}  cr3 {:#018x}  cr4 {:#018x}",
        cpu::read_cr0(),
        cpu::read_cr2(),
        cpu::read_cr3(),
        cpu::read_cr4()
    );
}
