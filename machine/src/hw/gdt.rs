//! Per-CPU global descriptor table and task-state segment.
//!
//! Selector layout (fixed by SYSCALL/SYSRET, which the user-space layer will
//! use): 0x08 kernel code, 0x10 kernel data, 0x18 user code (32-bit, unused),
//! 0x20 user data, 0x28 user code (64-bit), 0x30 TSS. The TSS gives each
//! CPU separate interrupt stacks for double fault, NMI and machine check,
//! so a kernel stack overflow still gets reported.

use core::arch::asm;
use core::mem::size_of;

pub const KERNEL_CODE_SELECTOR: u16 = 0x08;
pub const KERNEL_DATA_SELECTOR: u16 = 0x10;
pub const USER_DATA_SELECTOR: u16 = 0x20 | 3;
pub const USER_CODE_SELECTOR: u16 = 0x28 | 3;
pub const TSS_SELECTOR: u16 = 0x30;

/// Interrupt-stack-table slots (1-based, as the IDT names them).
pub const IST_DOUBLE_FAULT: u8 = 1;
pub const IST_NMI: u8 = 2;
pub const IST_MACHINE_CHECK: u8 = 3;

/// The 64-bit task-state segment.
#[repr(C, packed(4))]
#[derive(Default)]
pub struct TaskStateSegment {
    reserved0: u32,
    pub privilege_stacks: [u64; 3],
    reserved1: u64,
    pub interrupt_stacks: [u64; 7],
    reserved2: u64,
    reserved3: u16,
    io_map_base: u16,
}

/// One CPU's descriptor table (kept next to its TSS in per-CPU data).
#[repr(C, align(16))]
pub struct DescriptorTable {
    entries: [u64; 8],
}

impl DescriptorTable {
    /// The table with its TSS descriptor pointing at `tss`.
    pub fn new(tss: &TaskStateSegment) -> Self {
        let base = tss as *const TaskStateSegment as u64;
        let limit = (size_of::<TaskStateSegment>() - 1) as u64;
        let tss_low = (limit & 0xFFFF)
            | ((base & 0xFF_FFFF) << 16)
            | (0x89 << 40) // present, 64-bit available TSS
            | (((limit >> 16) & 0xF) << 48)
            | (((base >> 24) & 0xFF) << 56);
        let tss_high = base >> 32;
        Self {
            entries: [
                0,
                0x00AF_9A00_0000_FFFF, // kernel code: long mode, DPL 0
                0x00CF_9200_0000_FFFF, // kernel data
                0x00CF_FA00_0000_FFFF, // user code 32 (unused)
                0x00CF_F200_0000_FFFF, // user data: DPL 3
                0x00AF_FA00_0000_FFFF, // user code: long mode, DPL 3
                tss_low,
                tss_high,
            ],
        }
    }
}

#[repr(C, packed)]
struct DescriptorPointer {
    limit: u16,
    base: u64,
}

/// Loads `table` and its TSS on this CPU and reloads the segment registers.
///
/// # Safety
/// `table` and the TSS it points to must live (at the same address) for as
/// long as this CPU runs, and be used by no other CPU.
pub unsafe fn load(table: &'static DescriptorTable) {
    let pointer = DescriptorPointer { limit: (size_of::<DescriptorTable>() - 1) as u16, base: table as *const _ as u64 };
    // SAFETY: the table is valid and lives forever (caller); the code and
    // data selectors match the current privilege level, so execution
    // continues at the next instruction with equivalent segments.
    unsafe {
        asm!(
            "lgdt [{pointer}]",
            "push {code}",
            "lea {scratch}, [rip + 2f]",
            "push {scratch}",
            "retfq",
            "2:",
            "mov ds, {data:x}",
            "mov es, {data:x}",
            "mov ss, {data:x}",
            "ltr {tss:x}",
            pointer = in(reg) &pointer,
            code = const KERNEL_CODE_SELECTOR as u64,
            scratch = out(reg) _,
            data = in(reg) u64::from(KERNEL_DATA_SELECTOR),
            tss = in(reg) u64::from(TSS_SELECTOR),
        )
    };
}
