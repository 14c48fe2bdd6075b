//! Layer 0 of Lamina: the machine.
//!
//! Provides boot (PVH and multiboot2), CPU set-up, traps, paging hardware,
//! the APIC and its timer, SMP start-up, per-CPU data and the kernel heap to
//! the layers above, as safe APIs. It relies on nothing but the hardware. It
//! is the only crate (with the spinlock and frame cells named in DESIGN.md)
//! allowed `unsafe`, and every `unsafe` block carries a `// SAFETY:` comment.
//! It must never call a layer above it except through the two entry points
//! the kernel image defines (`lamina_bootstrap_main`, `lamina_secondary_main`).
//!
//! The pure parts (boot-information, ACPI-table and symbol-table parsing)
//! build on the host too, so `cargo test` checks them; the hardware parts
//! build only for `target_os = "none"`.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod acpi;
pub mod bootinfo;
pub mod bytes;
pub mod frame_states;
pub mod heap_caches;
pub mod loaded_roots;
pub mod symbols;
pub mod user_half;

#[cfg(target_os = "none")]
mod hw;

#[cfg(target_os = "none")]
pub use hw::{
    apic, backtrace, context, cpu, cpu_snapshot, frame_access, gdt, heap, irq_lock, layout, paging, pci, percpu, protection_probes, rtc, serial, set_once, stacks, start::Handoff, stop, svm, timer, tlb, trap,
    trap_entry::TrapFrame, user,
};

/// Prints to the console.
#[macro_export]
macro_rules! print {
    ($($argument:tt)*) => { $crate::serial::print(format_args!($($argument)*)) };
}

/// Prints a line to the console.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($argument:tt)*) => { $crate::serial::print(format_args!("{}\n", format_args!($($argument)*))) };
}

/// Prints a line even if the console lock is held (fatal paths only).
#[macro_export]
macro_rules! emergency_println {
    ($($argument:tt)*) => { $crate::serial::print_emergency(format_args!("{}\n", format_args!($($argument)*))) };
}
