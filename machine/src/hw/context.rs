//! Kernel thread contexts and the context switch.
//!
//! A [`ThreadContext`] owns a guarded kernel stack and, while its thread is
//! not running, the thread's saved stack pointer (the callee-saved registers
//! sit on its stack). [`switch_to`] saves the running context of this CPU
//! and resumes another one. The API is safe because the machine layer keeps
//! the invariants the switch needs:
//!
//! 1. a context runs on at most one CPU: `switch_to` claims the next context
//!    with an atomic flag, and the flag of the context left behind is cleared
//!    only after the CPU has left its stack (in `finish_switch`, on the new
//!    stack); a CPU that wants to resume a context still being left waits;
//! 2. the saved stack pointer is only read when the context is not running;
//! 3. switches happen with interrupts off, so an interrupt handler never
//!    sees a half-switched CPU.
//!
//! Scheduling policy (which context runs next) is the threads layer's job.

extern crate alloc;
use alloc::sync::Arc;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use super::irq_lock::IrqLock;
use super::stacks::KernelStack;
use super::{cpu, percpu};

/// The kernel-mode state of one thread.
pub struct ThreadContext {
    saved_stack_pointer: UnsafeCell<u64>,
    running: AtomicBool,
    /// Set once its stack was taken back: never run again.
    retired: AtomicBool,
    stack: IrqLock<Option<KernelStack>>,
}

// SAFETY: `saved_stack_pointer` is written only by the CPU that is switching
// away from the context (which holds it via `running`) and read only by a
// CPU that has claimed it through `running`, so accesses never overlap.
unsafe impl Sync for ThreadContext {}
// SAFETY: as above; the context holds no CPU-local state.
unsafe impl Send for ThreadContext {}

impl ThreadContext {
    /// The context of the code already running on this CPU (its boot path);
    /// becomes this CPU's current context.
    pub fn adopt_current() -> Arc<ThreadContext> {
        let context = Arc::new(ThreadContext {
            saved_stack_pointer: UnsafeCell::new(0),
            running: AtomicBool::new(true),
            retired: AtomicBool::new(false),
            stack: IrqLock::new(None),
        });
        percpu::set_current_context(context.clone());
        context
    }

    /// A new context that, when first switched to, calls `entry(argument)`
    /// with interrupts enabled on `stack`. `entry` must never return.
    pub fn new(stack: KernelStack, entry: fn(usize) -> !, argument: usize) -> Arc<ThreadContext> {
        // Initial stack from the saved stack pointer up: the six callee-saved
        // registers `switch` pops (r15, r14, r13, r12 = argument, rbx =
        // entry, rbp), the return address (the first-run trampoline), then
        // padding so the trampoline's call sees a 16-byte aligned stack.
        let start = context_thread_start as *const () as u64;
        let frame = [0u64, 0, 0, argument as u64, entry as *const () as u64, 0, start, 0, 0];
        let stack_pointer = stack.top() - (frame.len() as u64) * 8;
        for (index, word) in frame.iter().enumerate() {
            // SAFETY: the stack is mapped, unused (the context is new) and
            // the eight words lie just below its top.
            unsafe { ((stack_pointer + index as u64 * 8) as *mut u64).write(*word) };
        }
        Arc::new(ThreadContext {
            saved_stack_pointer: UnsafeCell::new(stack_pointer),
            running: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            stack: IrqLock::new(Some(stack)),
        })
    }

    /// Takes the stack back from a context no CPU runs, which retires it:
    /// it is never run again (`switch_to` refuses it). `None` while it
    /// runs, for an adopted boot context, or once taken.
    pub fn take_stack(&self) -> Option<KernelStack> {
        // Acquire: claim it as a switch would, and keep the claim for good,
        // so no CPU can switch to it once its stack is gone.
        self.running.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok()?;
        self.retired.store(true, Ordering::Release);
        self.stack.lock().take()
    }

    /// True while some CPU runs (or is still leaving) this context.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }
}

/// The context running on this CPU.
pub fn current() -> Arc<ThreadContext> {
    percpu::current_context()
}

/// Saves the current context of this CPU and resumes `next`, returning when
/// some CPU switches back to the current one. Interrupts are off during the
/// switch and restored afterwards. Switching to the current context is a
/// no-op.
pub fn switch_to(next: Arc<ThreadContext>) {
    let off = cpu::InterruptsOff::new();
    if percpu::is_current_context(&off, &next) {
        return;
    }
    // Claim `next`; if its old CPU is still leaving it, wait for that.
    // Acquire: see the saved stack pointer that CPU stored before releasing.
    // A retired context (its stack taken back) is never claimed again.
    while next.running.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        if next.retired.load(Ordering::Acquire) {
            return;
        }
        cpu::relax();
    }
    let resume_from = next.saved_stack_pointer.get();
    let current = percpu::replace_current_context(&off, next);
    let save_into = current.saved_stack_pointer.get();
    percpu::set_previous_context(&off, current);
    // SAFETY: (1) `current` is this CPU's running context, so no other CPU
    // reads its saved stack pointer until `finish_switch` below (run by
    // whichever context resumes next here) clears its flag; (2) `next` was
    // claimed above, so its saved stack pointer is stable and points at a
    // frame laid out by `switch` or by `ThreadContext::new`; (3) the Arcs
    // stored in per-CPU data keep both contexts (and their stacks) alive.
    unsafe { switch(save_into, resume_from) };
    finish_switch(&off);
}

/// Runs on the new stack right after every switch: releases the context
/// this CPU just left.
fn finish_switch(off: &cpu::InterruptsOff) {
    if let Some(previous) = percpu::take_previous_context(off) {
        // Release: publishes the saved stack pointer to the next claimer.
        previous.running.store(false, Ordering::Release);
    }
}

/// First code of a new context: finish the switch, enable interrupts, run.
extern "C" fn thread_entry(entry: usize, argument: usize) -> ! {
    // Interrupts are off (the switch that led here turned them off).
    let off = cpu::InterruptsOff::new();
    finish_switch(&off);
    drop(off);
    cpu::enable_interrupts();
    // SAFETY: `entry` was stored by `ThreadContext::new` from a `fn(usize) -> !`.
    let entry: fn(usize) -> ! = unsafe { core::mem::transmute::<usize, fn(usize) -> !>(entry) };
    entry(argument)
}

core::arch::global_asm!(
    ".text",
    // switch(save_into: *mut u64 (rdi), resume_from: *const u64 (rsi))
    "context_switch:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "mov [rdi], rsp",
    "mov rsp, [rsi]",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    // First return of a new context lands here with rbx = entry, r12 = argument.
    "context_thread_start:",
    "mov rdi, rbx",
    "mov rsi, r12",
    "xor ebp, ebp",
    "call {thread_entry}",
    "ud2",
    thread_entry = sym thread_entry,
);

extern "C" {
    fn context_switch(save_into: *mut u64, resume_from: *const u64);
    fn context_thread_start();
}

/// # Safety
/// See the comment at the call site in [`switch_to`].
unsafe fn switch(save_into: *mut u64, resume_from: *const u64) {
    // SAFETY: forwarded from the caller.
    unsafe { context_switch(save_into, resume_from) }
}
