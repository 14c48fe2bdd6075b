//! Kernel stacks, each with unmapped guard memory below it.
//!
//! The stack region is cut into fixed slots of [`SLOT_SIZE`]; a stack
//! occupies the top [`STACK_SIZE`] of its slot and the rest of the slot (at
//! least one page) is never mapped, so running off the bottom of a stack
//! faults on the guard instead of overwriting a neighbour.

use core::sync::atomic::{AtomicU64, Ordering};

use super::irq_lock::IrqLock;
use super::layout::{Range, STACKS_BASE};
use super::paging::{self, MapError, TableFrameSource};

/// Bytes of one kernel stack.
pub const STACK_SIZE: u64 = 64 * 1024;
/// Bytes of address space per stack: the stack plus its guard below.
pub const SLOT_SIZE: u64 = 128 * 1024;
const MAX_SLOTS: u64 = 1 << 20;

static NEXT_SLOT: AtomicU64 = AtomicU64::new(0);

/// A mapped kernel stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelStack {
    pub bottom: u64,
    pub top: u64,
}

/// Serializes changes to the kernel's page tables after boot (stacks of
/// different CPUs share intermediate tables).
static KERNEL_TABLES: IrqLock<()> = IrqLock::new(());

/// Maps a new kernel stack in the kernel's tables, with frames from `frames`.
pub fn allocate_kernel_stack(frames: &mut dyn TableFrameSource) -> Result<KernelStack, MapError> {
    let _tables = KERNEL_TABLES.lock();
    allocate(super::start::kernel_root(), frames)
}

/// Maps a new stack (fresh zeroed frames) in the tables rooted at `root`.
pub fn allocate(root: u64, frames: &mut dyn TableFrameSource) -> Result<KernelStack, MapError> {
    // Relaxed: slot numbers only need to be unique.
    let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    let top = STACKS_BASE + (slot + 1) * SLOT_SIZE;
    let bottom = top - STACK_SIZE;
    paging::map_fresh(root, Range { start: bottom, end: top }, frames)?;
    Ok(KernelStack { bottom, top })
}

/// True when `address` lies in the guard part of some stack slot.
pub fn is_guard(address: u64) -> bool {
    if !(STACKS_BASE..STACKS_BASE + MAX_SLOTS * SLOT_SIZE).contains(&address) {
        return false;
    }
    (address - STACKS_BASE) % SLOT_SIZE < SLOT_SIZE - STACK_SIZE
}

/// Switches to `stack` and calls `function(argument)`; never returns.
pub fn switch_to(stack: KernelStack, function: extern "C" fn(u64) -> !, argument: u64) -> ! {
    // SAFETY: `stack` is mapped and unused; the old stack is abandoned, and
    // `function` never returns, so nothing refers to the old frames again.
    unsafe {
        core::arch::asm!(
            "mov rsp, {top}",
            "xor ebp, ebp",
            "call {function}",
            "ud2",
            top = in(reg) stack.top,
            function = in(reg) function,
            in("rdi") argument,
            options(noreturn)
        )
    }
}
