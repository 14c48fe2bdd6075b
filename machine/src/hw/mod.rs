//! The hardware half of the machine layer (built only for the kernel target).

pub mod apic;
pub mod backtrace;
pub mod boot_frames;
pub mod context;
pub mod cpu;
pub mod cpu_snapshot;
pub mod frame_access;
mod entry;
pub mod gdt;
pub mod heap;
pub mod ioapic;
pub mod irq_lock;
pub mod layout;
pub mod paging;
pub mod percpu;
pub mod rtc;
pub mod serial;
pub mod set_once;
mod smp;
pub mod stacks;
pub mod start;
pub mod stop;
pub mod timer;
pub mod tlb;
pub mod trap;
pub mod trap_entry;
pub mod user;
