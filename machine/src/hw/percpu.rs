//! Per-CPU data, reached through the GS base.
//!
//! Each CPU has one [`PerCpu`], allocated at start-up and never freed. It
//! holds the CPU's index, APIC id, GDT, TSS and tick counter. The registry
//! lists every CPU that came online, in index order.

extern crate alloc;
use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::context::ThreadContext;
use super::cpu::{self, MSR_GS_BASE};
use super::irq_lock::IrqLock;
use super::gdt::{self, DescriptorTable, TaskStateSegment};
use super::stacks::KernelStack;

/// The most CPUs Lamina runs on.
pub const MAX_CPUS: usize = 256;

/// One CPU's private data.
#[repr(C)]
pub struct PerCpu {
    /// Address of this structure: `gs:[0]`.
    self_address: u64,
    /// User-mode entry and exit (`user.rs`, reached from assembly at the
    /// offsets below): the kernel stack pointer to return to when user
    /// mode is left, the `UserContext` being run, and a scratch word.
    /// Atomics only so that Rust sees them as written behind its back.
    user_kernel_stack: AtomicU64,
    user_context: AtomicU64,
    user_scratch: AtomicU64,
    /// Dense index, 0 for the bootstrap processor.
    pub index: usize,
    pub apic_id: u32,
    /// Timer interrupts taken on this CPU.
    pub ticks: AtomicU64,
    /// Bit set of the lock levels this CPU holds (the spinlock layer's
    /// debug-build lock-order check keeps it; see `spinlock::order`).
    held_lock_levels: AtomicU64,
    /// The stack this CPU started on.
    pub boot_stack: KernelStack,
    /// The context running on this CPU, and the one it just left (held
    /// until the switch away from it is complete).
    current_context: IrqLock<Option<Arc<ThreadContext>>>,
    previous_context: IrqLock<Option<Arc<ThreadContext>>>,
    tss: TaskStateSegment,
    descriptor_table: DescriptorTable,
}

/// `gs:` offsets of the user-mode words and of the TSS's ring-0 stack.
pub(crate) const USER_KERNEL_STACK_OFFSET: usize = core::mem::offset_of!(PerCpu, user_kernel_stack);
pub(crate) const USER_CONTEXT_OFFSET: usize = core::mem::offset_of!(PerCpu, user_context);
pub(crate) const USER_SCRATCH_OFFSET: usize = core::mem::offset_of!(PerCpu, user_scratch);
pub(crate) const TSS_RING0_STACK_OFFSET: usize = core::mem::offset_of!(PerCpu, tss) + 4;

/// What `gs:` reads on a CPU before [`install`]: no per-CPU data (a zero
/// `self_address`), index 0. Set by [`use_placeholder`] first thing on
/// every CPU, so that [`current`] and [`current_index`] are one load
/// through `gs:` and never an MSR read.
#[repr(C, align(64))]
struct NoPerCpuYet([u64; 8]);
static NO_PER_CPU_YET: NoPerCpuYet = NoPerCpuYet([0; 8]);
const SELF_ADDRESS_OFFSET: usize = core::mem::offset_of!(PerCpu, self_address);
const INDEX_OFFSET: usize = core::mem::offset_of!(PerCpu, index);
const _: () = assert!(SELF_ADDRESS_OFFSET + 8 <= core::mem::size_of::<NoPerCpuYet>() && INDEX_OFFSET + 8 <= core::mem::size_of::<NoPerCpuYet>());

/// Points this CPU's GS base at the placeholder (before anything may ask
/// for the CPU's index).
pub(crate) fn use_placeholder() {
    cpu::write_msr(MSR_GS_BASE, &NO_PER_CPU_YET as *const NoPerCpuYet as u64);
}

static CPUS: [AtomicPtr<PerCpu>; MAX_CPUS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];
static ONLINE: AtomicUsize = AtomicUsize::new(0);

/// Interrupt stacks (double fault, NMI, machine check) for one CPU.
pub struct InterruptStacks {
    pub double_fault: KernelStack,
    pub nmi: KernelStack,
    pub machine_check: KernelStack,
}

/// Creates, loads and registers this CPU's data: GDT, TSS, GS base.
pub fn install(index: usize, apic_id: u32, boot_stack: KernelStack, stacks: InterruptStacks) -> &'static PerCpu {
    let mut tss = TaskStateSegment::default();
    tss.interrupt_stacks[usize::from(gdt::IST_DOUBLE_FAULT) - 1] = stacks.double_fault.top();
    tss.interrupt_stacks[usize::from(gdt::IST_NMI) - 1] = stacks.nmi.top();
    tss.interrupt_stacks[usize::from(gdt::IST_MACHINE_CHECK) - 1] = stacks.machine_check.top();
    tss.privilege_stacks[0] = boot_stack.top();
    let per_cpu = Box::leak(Box::new(PerCpu {
        self_address: 0,
        user_kernel_stack: AtomicU64::new(0),
        user_context: AtomicU64::new(0),
        user_scratch: AtomicU64::new(0),
        index,
        apic_id,
        ticks: AtomicU64::new(0),
        held_lock_levels: AtomicU64::new(0),
        boot_stack,
        current_context: IrqLock::new(None),
        previous_context: IrqLock::new(None),
        tss,
        descriptor_table: DescriptorTable::new(&TaskStateSegment::default()),
    }));
    per_cpu.self_address = per_cpu as *const PerCpu as u64;
    per_cpu.descriptor_table = DescriptorTable::new(&per_cpu.tss);
    let per_cpu: &'static PerCpu = per_cpu;
    // SAFETY: the table and TSS live in a leaked allocation (forever, never
    // moved) owned by this CPU alone.
    unsafe { gdt::load(&per_cpu.descriptor_table) };
    cpu::write_msr(MSR_GS_BASE, per_cpu.self_address);
    // Release: readers of the registry see the fully built structure.
    CPUS[index].store(per_cpu as *const PerCpu as *mut PerCpu, Ordering::Release);
    ONLINE.fetch_add(1, Ordering::AcqRel);
    per_cpu
}

/// This CPU's data, once [`install`] ran on it.
#[inline]
pub fn current() -> Option<&'static PerCpu> {
    let address = cpu::read_gs_word(SELF_ADDRESS_OFFSET);
    if address == 0 {
        return None;
    }
    // SAFETY: the GS base is only ever set (by `install`) to the address of
    // a leaked, never-freed `PerCpu`.
    Some(unsafe { &*(address as *const PerCpu) })
}

/// This CPU's index (0 before per-CPU data exists).
#[inline]
pub fn current_index() -> usize {
    cpu::read_gs_word(INDEX_OFFSET) as usize
}

/// Number of CPUs online.
pub fn online_count() -> usize {
    ONLINE.load(Ordering::Acquire)
}

/// The CPU with `index`, if online.
pub fn cpu(index: usize) -> Option<&'static PerCpu> {
    let pointer = CPUS.get(index)?.load(Ordering::Acquire);
    // SAFETY: non-null entries point at leaked, never-freed `PerCpu`s.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

fn this_cpu() -> &'static PerCpu {
    current().expect("per-CPU data is installed before any context switch")
}

/// The context running on this CPU (adopting the boot path on first use).
pub(crate) fn current_context() -> Arc<ThreadContext> {
    let existing = this_cpu().current_context.lock().clone();
    existing.unwrap_or_else(ThreadContext::adopt_current)
}

pub(crate) fn set_current_context(context: Arc<ThreadContext>) {
    *this_cpu().current_context.lock() = Some(context);
}

pub(crate) fn set_previous_context(context: Arc<ThreadContext>) {
    *this_cpu().previous_context.lock() = Some(context);
}

pub(crate) fn take_previous_context() -> Option<Arc<ThreadContext>> {
    this_cpu().previous_context.lock().take()
}

/// The lock levels this CPU holds (0 before per-CPU data exists).
pub fn held_lock_levels() -> u64 {
    current().map_or(0, |per_cpu| per_cpu.held_lock_levels.load(Ordering::Relaxed))
}

/// Replaces the lock levels this CPU holds (ignored before per-CPU data exists).
pub fn set_held_lock_levels(levels: u64) {
    if let Some(per_cpu) = current() {
        // Relaxed: only this CPU reads or writes its own set.
        per_cpu.held_lock_levels.store(levels, Ordering::Relaxed);
    }
}
