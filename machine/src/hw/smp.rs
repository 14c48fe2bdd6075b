//! Starting the application processors.
//!
//! A real-mode trampoline is copied to physical 0x8000. An AP woken by
//! INIT-SIPI-SIPI runs it: real mode, then protected mode, then long mode on
//! the boot page tables (which identity-map low memory), then a jump to
//! `ap_entry64` in the higher half, which loads the kernel's final tables,
//! takes the next start-up slot (stack and CPU index) and calls
//! [`super::start::application_processor_entry`].

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::layout::physical_to_virtual;
use super::percpu::MAX_CPUS;
use super::{apic, timer};
use super::start::application_processor_entry;

/// Where the trampoline runs (SIPI vector 0x08 = page 0x8000).
const TRAMPOLINE_PHYSICAL: u64 = 0x8000;
const TRAMPOLINE_PAGE: u8 = (TRAMPOLINE_PHYSICAL >> 12) as u8;

/// Start-up slots: the stack top of the `n`th AP to arrive.
#[no_mangle]
static AP_STACK_TOPS: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// Next free start-up slot (taken with `lock xadd` by arriving APs).
#[no_mangle]
static AP_NEXT_SLOT: AtomicU32 = AtomicU32::new(0);
/// Physical address of the kernel's final page tables.
#[no_mangle]
static AP_KERNEL_ROOT: AtomicU64 = AtomicU64::new(0);

core::arch::global_asm!(
    r#"
    .section .rodata.ap_trampoline, "a"
    .set TRAMPOLINE, 0x8000
    .code16
    .global ap_trampoline_start
ap_trampoline_start:
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    lgdtl (ap_gdt_pointer - ap_trampoline_start + TRAMPOLINE)
    mov %cr0, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x08, $(ap_protected - ap_trampoline_start + TRAMPOLINE)

    .code32
ap_protected:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %cr4, %eax
    or $((1 << 5) | (1 << 7)), %eax
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0x80000001, %eax
    cpuid
    mov %edx, %ebx
    mov $0xC0000080, %ecx
    rdmsr
    or $(1 << 8), %eax
    test $(1 << 20), %ebx
    jz 1f
    or $(1 << 11), %eax
1:
    wrmsr
    mov %cr0, %eax
    or $((1 << 31) | (1 << 16)), %eax
    mov %eax, %cr0
    ljmp $0x18, $(ap_long - ap_trampoline_start + TRAMPOLINE)

    .code64
ap_long:
    movabs $ap_entry64, %rax
    jmp *%rax

    .balign 16
ap_gdt:
    .quad 0
    .quad 0x00CF9A000000FFFF    /* 0x08: 32-bit code */
    .quad 0x00CF92000000FFFF    /* 0x10: data */
    .quad 0x00209A0000000000    /* 0x18: 64-bit code */
ap_gdt_end:
ap_gdt_pointer:
    .short ap_gdt_end - ap_gdt - 1
    .long ap_gdt - ap_trampoline_start + TRAMPOLINE
    .global ap_trampoline_end
ap_trampoline_end:

    .text
ap_entry64:
    mov AP_KERNEL_ROOT(%rip), %rax
    mov %rax, %cr3
    mov $1, %eax
    lock xadd %eax, AP_NEXT_SLOT(%rip)
    lea AP_STACK_TOPS(%rip), %rbx
    mov (%rbx, %rax, 8), %rsp
    mov %eax, %edi
    xor %ebp, %ebp
    call {entry}
2:
    hlt
    jmp 2b
"#,
    entry = sym application_processor_entry,
    options(att_syntax)
);

extern "C" {
    static ap_trampoline_start: u8;
    static ap_trampoline_end: u8;
}

fn copy_trampoline() {
    let start = core::ptr::addr_of!(ap_trampoline_start);
    // SAFETY: both symbols delimit the trampoline bytes in .rodata.
    let length = unsafe { core::ptr::addr_of!(ap_trampoline_end).offset_from(start) } as usize;
    // SAFETY: physical 0x8000.. is below 1 MiB, which the boot frame
    // allocator never hands out, and is mapped by the direct map; the
    // trampoline is far smaller than the 4 KiB page.
    unsafe { core::ptr::copy_nonoverlapping(start, physical_to_virtual(TRAMPOLINE_PHYSICAL) as *mut u8, length) };
}

/// Sets the stack for the `slot`th AP to arrive.
pub(crate) fn set_start_stack(slot: usize, top: u64) {
    AP_STACK_TOPS[slot].store(top, Ordering::Relaxed);
}

/// The stack top given to the `slot`th AP.
pub(crate) fn start_stack(slot: usize) -> u64 {
    AP_STACK_TOPS[slot].load(Ordering::Relaxed)
}

/// Wakes the CPUs with the given APIC ids and waits (bounded) until
/// `online()` reports them all. Returns how many arrived.
pub(crate) fn start_processors(kernel_root: u64, apic_ids: &[u32], online: impl Fn() -> usize) -> usize {
    copy_trampoline();
    AP_KERNEL_ROOT.store(kernel_root, Ordering::SeqCst);
    let expected = online() + apic_ids.len();
    for &apic_id in apic_ids {
        apic::send_init(apic_id);
    }
    // Real processors need 10 ms after INIT; virtual ones do not (Linux
    // makes the same choice when running under a hypervisor).
    timer::busy_wait_microseconds(if under_hypervisor() { 100 } else { 10_000 });
    for &apic_id in apic_ids {
        apic::send_startup(apic_id, TRAMPOLINE_PAGE);
    }
    timer::busy_wait_microseconds(200);
    if online() < expected {
        for &apic_id in apic_ids {
            apic::send_startup(apic_id, TRAMPOLINE_PAGE);
        }
    }
    // Up to one second for the stragglers.
    for _ in 0..10_000 {
        if online() >= expected {
            break;
        }
        timer::busy_wait_microseconds(100);
    }
    online()
}

fn under_hypervisor() -> bool {
    super::cpu::cpuid(1, 0).ecx & (1 << 31) != 0
}
