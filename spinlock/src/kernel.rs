//! The kernel's choices, wired to the machine layer's safe per-CPU and
//! interrupt APIs (kernel target only): interrupts off while a lock is held,
//! held levels in the per-CPU block, the CPU index as MCS slot.

use machine::{cpu, percpu};

use crate::{CpuSlot, GuardPolicy, HeldLevels, LevelSet, McsLock, SpinLock, TicketLock};

/// Interrupts disabled from before acquire until after release, so that an
/// interrupt handler on this CPU never spins on a lock its CPU holds.
#[derive(Debug)]
pub struct IrqOff;

impl GuardPolicy for IrqOff {
    /// Whether interrupts were enabled before.
    type Token = bool;

    #[inline(always)]
    fn enter() -> bool {
        let were_enabled = cpu::interrupts_enabled();
        cpu::disable_interrupts();
        were_enabled
    }

    #[inline(always)]
    fn exit(were_enabled: bool) {
        if were_enabled {
            cpu::enable_interrupts();
        }
    }
}

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
