//! Per-CPU data, reached through the GS base.
//!
//! Each CPU has one [`PerCpu`], allocated at start-up and never freed. It
//! holds the CPU's index, APIC id, GDT, TSS and tick counter. The registry
//! lists every CPU that came online, in index order.

extern crate alloc;
use alloc::boxed::Box;
use alloc::sync::Arc;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::context::ThreadContext;
use super::cpu::{self, MSR_GS_BASE};
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
    current_context: ContextSlot,
    previous_context: ContextSlot,
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
        current_context: ContextSlot(UnsafeCell::new(None)),
        previous_context: ContextSlot(UnsafeCell::new(None)),
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

/// A context slot of one CPU's data: touched only by that CPU, with its
/// interrupts off, so it needs no lock (a switch uses both slots; three
/// `IrqLock` round trips there cost ~60 instructions per switch).
struct ContextSlot(UnsafeCell<Option<Arc<ThreadContext>>>);

// SAFETY: a slot is reached only through this CPU's own `PerCpu` (the
// accessors below start from `this_cpu()`, the GS base) and only with
// this CPU's interrupts off (each takes an `InterruptsOff`): no other CPU
// and no interrupt handler on this one can be inside an access meanwhile.
unsafe impl Sync for ContextSlot {}

impl ContextSlot {
    /// Puts `value` in the slot and returns what it held.
    fn replace(&self, _off: &cpu::InterruptsOff, value: Option<Arc<ThreadContext>>) -> Option<Arc<ThreadContext>> {
        // SAFETY: no other access overlaps (see the `Sync` impl), and a
        // move runs no code that could reach the slot again.
        unsafe { core::mem::replace(&mut *self.0.get(), value) }
    }

    /// Whether the slot holds `context`.
    fn holds(&self, _off: &cpu::InterruptsOff, context: &Arc<ThreadContext>) -> bool {
        // SAFETY: as in `replace`; a pointer comparison runs no code.
        unsafe { (*self.0.get()).as_ref().is_some_and(|held| Arc::ptr_eq(held, context)) }
    }

    /// Whether the slot holds nothing.
    fn is_empty(&self, _off: &cpu::InterruptsOff) -> bool {
        // SAFETY: as in `replace`.
        unsafe { (*self.0.get()).is_none() }
    }

    /// A new reference to what the slot holds.
    fn cloned(&self, _off: &cpu::InterruptsOff) -> Option<Arc<ThreadContext>> {
        // SAFETY: as in `replace`; `Arc::clone` only counts.
        unsafe { (*self.0.get()).clone() }
    }
}

/// The context running on this CPU (adopting the boot path on first use).
pub(crate) fn current_context() -> Arc<ThreadContext> {
    let off = cpu::InterruptsOff::new();
    let existing = this_cpu().current_context.cloned(&off);
    drop(off);
    existing.unwrap_or_else(ThreadContext::adopt_current)
}

/// Whether `context` is the one running on this CPU.
pub(crate) fn is_current_context(off: &cpu::InterruptsOff, context: &Arc<ThreadContext>) -> bool {
    this_cpu().current_context.holds(off, context)
}

pub(crate) fn set_current_context(context: Arc<ThreadContext>) {
    let off = cpu::InterruptsOff::new();
    let old = this_cpu().current_context.replace(&off, Some(context));
    drop(old);
}

/// Makes `next` this CPU's running context; returns the one it replaces
/// (adopting the boot path if there was none).
pub(crate) fn replace_current_context(off: &cpu::InterruptsOff, next: Arc<ThreadContext>) -> Arc<ThreadContext> {
    let slot = &this_cpu().current_context;
    if slot.is_empty(off) {
        ThreadContext::adopt_current();
    }
    slot.replace(off, Some(next)).expect("the current context was adopted above")
}

pub(crate) fn set_previous_context(off: &cpu::InterruptsOff, context: Arc<ThreadContext>) {
    let old = this_cpu().previous_context.replace(off, Some(context));
    debug_assert!(old.is_none(), "every switch releases the context it left");
    drop(old);
}

pub(crate) fn take_previous_context(off: &cpu::InterruptsOff) -> Option<Arc<ThreadContext>> {
    this_cpu().previous_context.replace(off, None)
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
