//! Kernel stacks, each with unmapped guard memory below it.
//!
//! The stack region is cut into fixed slots of [`SLOT_SIZE`]; a stack
//! occupies the top [`STACK_SIZE`] of its slot and the rest of the slot (at
//! least one page) is never mapped, so running off the bottom of a stack
//! faults on the guard instead of overwriting a neighbour.

extern crate alloc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::irq_lock::IrqLock;
use super::layout::{Range, PAGE_SIZE, STACKS_BASE};
use super::frame_access::Frame;
use super::paging::{self, MapError, TableFrameSource};
use super::tlb;

/// Bytes of one kernel stack.
pub const STACK_SIZE: u64 = 64 * 1024;
/// Bytes of address space per stack: the stack plus its guard below.
pub const SLOT_SIZE: u64 = 128 * 1024;
const MAX_SLOTS: u64 = 1 << 20;

static NEXT_SLOT: AtomicU64 = AtomicU64::new(0);

/// A mapped kernel stack. Made only by this layer (its fields are
/// private), so a stack handed to a context or switched to is one this
/// layer mapped; not `Copy` or `Clone`, so one stack has one owner (a
/// context, a CPU's boot path, or the code about to free it).
#[derive(Debug, PartialEq, Eq)]
pub struct KernelStack {
    bottom: u64,
    top: u64,
}

impl KernelStack {
    pub(crate) fn new(bottom: u64, top: u64) -> Self {
        Self { bottom, top }
    }

    /// Its lowest address (the guard page is just below).
    pub fn bottom(&self) -> u64 {
        self.bottom
    }

    /// One past its highest address.
    pub fn top(&self) -> u64 {
        self.top
    }
}

/// Serializes changes to the kernel's page tables after boot (stacks of
/// different CPUs share intermediate tables).
static KERNEL_TABLES: IrqLock<()> = IrqLock::new(());

/// Slots of freed kernel stacks, reused before new ones (so the stack
/// region's page tables stay few); under `KERNEL_TABLES`.
static FREE_SLOTS: IrqLock<Vec<u64>> = IrqLock::new(Vec::new());

/// Frames per kernel stack.
pub const STACK_FRAMES: u64 = STACK_SIZE / PAGE_SIZE;

/// Maps a new kernel stack in the kernel's tables, with held frames from
/// `frames` (given up to the stack until it is freed).
pub fn allocate_kernel_stack(frames: &mut dyn TableFrameSource) -> Result<KernelStack, MapError> {
    let _tables = KERNEL_TABLES.lock();
    let reused = FREE_SLOTS.lock().pop();
    let slot = reused.unwrap_or_else(|| NEXT_SLOT.fetch_add(1, Ordering::Relaxed));
    let stack = slot_stack(slot);
    match paging::map_fresh(super::start::kernel_root(), Range { start: stack.bottom(), end: stack.top() }, frames) {
        Ok(()) => Ok(stack),
        Err(error) => {
            // Give back what was mapped before the frames ran out.
            let mut freed = |frame| frames.free_table(Frame::of_machine(frame));
            paging::unmap_and_free(super::start::kernel_root(), Range { start: stack.bottom(), end: stack.top() }, &mut freed);
            recycle_slot(slot);
            Err(error)
        }
    }
}

/// Unmaps a kernel stack made by [`allocate_kernel_stack`], invalidates it
/// on every CPU and gives its frames (and page tables left empty) to
/// `frames`. The caller guarantees nothing runs on the stack or refers to
/// it any more; must be called with no spinlock held (a shootdown).
pub fn free_kernel_stack(stack: KernelStack, frames: &mut dyn TableFrameSource) {
    let range = Range { start: stack.bottom(), end: stack.top() };
    // The stack's frames plus at most a leaf and a second-level table.
    let mut unmapped = [0u64; STACK_FRAMES as usize + 2];
    let mut count = 0;
    {
        let _tables = KERNEL_TABLES.lock();
        let mut freed = |frame| {
            if let Some(slot) = unmapped.get_mut(count) {
                *slot = frame;
                count += 1;
            }
        };
        paging::unmap_and_free(super::start::kernel_root(), range, &mut freed);
    }
    tlb::shootdown(&tlb::CpuSet::online(), tlb::Flush::Pages { start: stack.bottom(), count: STACK_FRAMES });
    for &frame in &unmapped[..count] {
        frames.free_table(Frame::of_machine(frame));
    }
    {
        let _tables = KERNEL_TABLES.lock();
        recycle_slot((stack.top() - STACKS_BASE) / SLOT_SIZE - 1);
    }
}

/// Remembers a free slot (with `KERNEL_TABLES` held); a slot that cannot be
/// remembered for lack of heap is simply never used again.
fn recycle_slot(slot: u64) {
    let mut free = FREE_SLOTS.lock();
    if free.try_reserve(1).is_ok() {
        free.push(slot);
    }
}

fn slot_stack(slot: u64) -> KernelStack {
    let top = STACKS_BASE + (slot + 1) * SLOT_SIZE;
    KernelStack { bottom: top - STACK_SIZE, top }
}

/// Maps a new stack (fresh zeroed frames) in the tables rooted at `root`.
pub(crate) fn allocate(root: u64, frames: &mut dyn TableFrameSource) -> Result<KernelStack, MapError> {
    // Relaxed: slot numbers only need to be unique.
    let stack = slot_stack(NEXT_SLOT.fetch_add(1, Ordering::Relaxed));
    paging::map_fresh(root, Range { start: stack.bottom(), end: stack.top() }, frames)?;
    Ok(stack)
}

/// True when `address` lies in the guard part of some stack slot.
pub fn is_guard(address: u64) -> bool {
    if !(STACKS_BASE..STACKS_BASE + MAX_SLOTS * SLOT_SIZE).contains(&address) {
        return false;
    }
    (address - STACKS_BASE) % SLOT_SIZE < SLOT_SIZE - STACK_SIZE
}

/// Switches to `stack` and calls `function(argument)`; never returns.
pub(crate) fn switch_to(stack: KernelStack, function: extern "C" fn(u64) -> !, argument: u64) -> ! {
    // SAFETY: `stack` is mapped and unused; the old stack is abandoned, and
    // `function` never returns, so nothing refers to the old frames again.
    unsafe {
        core::arch::asm!(
            "mov rsp, {top}",
            "xor ebp, ebp",
            "call {function}",
            "ud2",
            top = in(reg) stack.top(),
            function = in(reg) function,
            in("rdi") argument,
            options(noreturn)
        )
    }
}
