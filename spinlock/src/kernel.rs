//! The kernel's choices, wired to the machine layer's safe per-CPU and
//! interrupt APIs (kernel target only): interrupts off while a lock is held,
//! held levels in the per-CPU block, the CPU index as MCS slot.

use machine::{cpu, percpu};

use crate::{CpuSlot, GuardPolicy, HeldLevels, LevelSet, McsLock, SpinLock, TicketLock};

/// Interrupts disabled from before acquire until after release, so that an
/// interrupt handler on this CPU never spins on a lock its CPU holds.
///
/// In the big-kernel-lock build (feature `big-kernel-lock`, for the
/// server/client benchmark) it also holds `BIG_KERNEL_LOCK` from after
/// interrupts go off until before they come back: no two CPUs are ever in
/// a critical section of the kernel at once.
#[derive(Debug)]
pub struct IrqOff;

impl GuardPolicy for IrqOff {
    /// Whether interrupts were enabled before.
    type Token = bool;

    #[inline(always)]
    fn enter() -> bool {
        let interrupts = cpu::InterruptsOff::new();
        #[cfg(feature = "big-kernel-lock")]
        BIG_KERNEL_LOCK.enter();
        interrupts.into_token()
    }

    #[inline(always)]
    fn exit(were_enabled: bool) {
        #[cfg(feature = "big-kernel-lock")]
        BIG_KERNEL_LOCK.exit();
        drop(cpu::InterruptsOff::from_token(were_enabled));
    }
}

/// The one lock of the big-kernel-lock build, taken around every kernel
/// lock (see [`IrqOff`]).
#[cfg(feature = "big-kernel-lock")]
pub static BIG_KERNEL_LOCK: crate::BigLock<KernelCpu> = crate::BigLock::new();

/// Whether this kernel was built with one big lock instead of fine-grained
/// locking.
pub const BIG_KERNEL_LOCK_BUILD: bool = cfg!(feature = "big-kernel-lock");

/// The held lock levels, in this CPU's per-CPU block.
#[derive(Debug)]
pub struct PerCpuLevels;

impl HeldLevels for PerCpuLevels {
    fn held() -> LevelSet {
        LevelSet::from_bits(percpu::held_lock_levels())
    }

    fn set_held(levels: LevelSet) {
        percpu::set_held_lock_levels(levels.bits());
    }
}

/// The running CPU's dense index as its MCS slot.
#[derive(Debug)]
pub struct KernelCpu;

impl CpuSlot for KernelCpu {
    #[inline(always)]
    fn current() -> usize {
        percpu::current_index()
    }
}

/// The kernel's ticket lock: interrupts off, lock order checked in debug
/// builds.
pub type KernelTicketLock<T> = SpinLock<T, TicketLock, IrqOff, PerCpuLevels>;

/// The kernel's MCS lock, with a node for each of `CPUS` CPUs (64 bytes
/// each: 16 KiB per lock for all `MAX_CPUS`; pass fewer where the CPU count
/// is known to be small).
pub type KernelMcsLock<T, const CPUS: usize = { percpu::MAX_CPUS }> =
    SpinLock<T, McsLock<KernelCpu, CPUS>, IrqOff, PerCpuLevels>;
