//! The first instructions: boot headers and the 32-bit to 64-bit switch.
//!
//! Both boot protocols enter in 32-bit protected mode with paging off:
//! QEMU's PVH loader at `pvh_entry` (named by the Xen PHYS32_ENTRY note,
//! `%ebx` = start_info), GRUB's multiboot2 at `multiboot2_entry` (the ELF
//! entry, `%eax` = magic, `%ebx` = info). The shared path checks for long
//! mode, builds boot page tables (the first 4 GiB identity-mapped and again
//! at the direct-map base, the first 1 GiB at the kernel's higher-half base),
//! enters long mode and calls [`super::start::bootstrap_processor_entry`] on
//! the boot stack. This file may not do anything a later, safe layer could.

use super::start::bootstrap_processor_entry;

/// Boot protocol codes passed from the entry code to Rust.
pub const PROTOCOL_PVH: u32 = 1;
pub const PROTOCOL_MULTIBOOT2: u32 = 2;

/// Size of the boot stack (in .bss, used until the machine layer switches to
/// a guarded stack).
pub const BOOT_STACK_SIZE: usize = 64 * 1024;

core::arch::global_asm!(
    r#"
    .set KERNEL_VIRTUAL_BASE, 0xFFFFFFFF80000000
    .set MULTIBOOT2_MAGIC, 0xE85250D6
    .set MULTIBOOT2_BOOTLOADER_MAGIC, 0x36d76289

    .section .boot.header, "a"
    .balign 8
multiboot2_header:
    .long MULTIBOOT2_MAGIC
    .long 0
    .long multiboot2_header_end - multiboot2_header
    .long 0x100000000 - (MULTIBOOT2_MAGIC + (multiboot2_header_end - multiboot2_header))
    .balign 8
    .short 0
    .short 0
    .long 8
multiboot2_header_end:

    .section .note.pvh, "a", @note
    .balign 4
    .long 4
    .long 8
    .long 18
    .asciz "Xen"
    .balign 4
    .quad pvh_entry

    .section .boot.text, "ax"
    .code32
    .global pvh_entry
pvh_entry:
    mov $1, %edi
    jmp boot32_common

    .global multiboot2_entry
multiboot2_entry:
    mov $2, %edi
    cmp $MULTIBOOT2_BOOTLOADER_MAGIC, %eax
    je boot32_common
    mov $boot_message_bad_loader, %ebp
    jmp boot32_fail

boot32_common:
    cli
    cld
    mov %ebx, %esi
    mov $boot32_stack_top, %esp

    /* Long mode available? */
    mov $0x80000000, %eax
    cpuid
    cmp $0x80000001, %eax
    jb boot32_no_long_mode
    mov $0x80000001, %eax
    cpuid
    test $(1 << 29), %edx
    jz boot32_no_long_mode
    mov %edx, %ebp              /* keep extended features: bit 20 = NX */

    /* Four page directories of 2 MiB pages: identity map of 0..4 GiB. */
    mov $boot_page_directories, %ebx
    xor %ecx, %ecx
1:
    mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax              /* present | writable | large */
    mov %eax, (%ebx, %ecx, 8)
    mov %ecx, %eax
    shr $11, %eax               /* high dword: bits 32+ of ecx << 21 */
    mov %eax, 4(%ebx, %ecx, 8)
    inc %ecx
    cmp $2048, %ecx
    jne 1b

    /* Low PDPT: four entries, one per page directory. */
    mov $boot_pdpt_low, %ebx
    mov $boot_page_directories, %eax
    or $0x3, %eax
    mov %eax, 0(%ebx)
    add $4096, %eax
    mov %eax, 8(%ebx)
    add $4096, %eax
    mov %eax, 16(%ebx)
    add $4096, %eax
    mov %eax, 24(%ebx)

    /* High PDPT: entry 510 = the first GiB at KERNEL_VIRTUAL_BASE. */
    mov $boot_pdpt_high, %ebx
    mov $boot_page_directories, %eax
    or $0x3, %eax
    mov %eax, (510 * 8)(%ebx)

    /* PML4: 0 and 256 (direct map) -> low PDPT, 511 -> high PDPT. */
    mov $boot_pml4, %ebx
    mov $boot_pdpt_low, %eax
    or $0x3, %eax
    mov %eax, 0(%ebx)
    mov %eax, (256 * 8)(%ebx)
    mov $boot_pdpt_high, %eax
    or $0x3, %eax
    mov %eax, (511 * 8)(%ebx)

    /* CR4.PAE | CR4.PGE, CR3, EFER.LME (+ NXE when present), CR0.PG | WP. */
    mov %cr4, %eax
    or $((1 << 5) | (1 << 7)), %eax
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $(1 << 8), %eax
    test $(1 << 20), %ebp
    jz 2f
    or $(1 << 11), %eax
2:
    wrmsr
    mov %cr0, %eax
    or $((1 << 31) | (1 << 16)), %eax
    mov %eax, %cr0

    lgdt boot_gdt_pointer
    ljmp $0x08, $boot64_low

boot32_no_long_mode:
    mov $boot_message_no_long_mode, %ebp
boot32_fail:
    /* Print the message at %ebp on COM1, then stop. */
    mov $0x3F8, %dx
3:
    movb (%ebp), %al
    test %al, %al
    jz 4f
    out %al, %dx
    inc %ebp
    jmp 3b
4:
    /* isa-debug-exit code 0x12: fatal boot error (harmless without the device). */
    mov $0xf4, %dx
    mov $0x12, %eax
    out %eax, %dx
5:
    hlt
    jmp 5b

    .code64
boot64_low:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    movabs $boot_stack_top, %rsp
    xor %ebp, %ebp
    /* edi = protocol, esi = boot information (physical). */
    movabs ${entry}, %rax
    call *%rax
6:
    hlt
    jmp 6b

    .section .boot.rodata, "a"
    .balign 16
boot_gdt:
    .quad 0
    .quad 0x00209A0000000000    /* 0x08: 64-bit code */
    .quad 0x0000920000000000    /* 0x10: data */
boot_gdt_end:
boot_gdt_pointer:
    .short boot_gdt_end - boot_gdt - 1
    .long boot_gdt
boot_message_no_long_mode:
    .asciz "\r\nlamina: boot failed: this CPU has no 64-bit long mode\r\n"
boot_message_bad_loader:
    .asciz "\r\nlamina: boot failed: entered without a multiboot2 or PVH boot loader\r\n"

    .section .boot.bss, "aw", @nobits
    .balign 4096
    .global boot_pml4
boot_pml4:
    .skip 4096
boot_pdpt_low:
    .skip 4096
boot_pdpt_high:
    .skip 4096
boot_page_directories:
    .skip 4096 * 4
    .skip 4096
boot32_stack_top:

    .section .bss.boot_stack, "aw", @nobits
    .balign 4096
    .global boot_stack_bottom
boot_stack_bottom:
    .skip {stack_size}
    .global boot_stack_top
boot_stack_top:
    .text
"#,
    entry = sym bootstrap_processor_entry,
    stack_size = const BOOT_STACK_SIZE,
    options(att_syntax)
);
