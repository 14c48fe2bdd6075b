//! What every CPU is doing right now: stall reports for kernel developers.
//!
//! [`take`] asks every other CPU, by NMI, to record where it was
//! interrupted (instruction, interrupt flag, whether it sat in `hlt`, ring,
//! and the return addresses of its frame-pointer chain) into its slot, and
//! waits a bounded time for the answers. An NMI reaches a CPU even with
//! interrupts off, so a CPU spinning on a lock or stuck in a loop answers
//! too; one that does not answer is reported as silent.
//!
//! The NMI handler only stores words into its own CPU's slot: it takes no
//! lock and prints nothing, so it cannot deadlock with the code it
//! interrupted. Symbolizing and printing happen on the asking CPU.
//!
//! Once a snapshot has been asked for, every NMI that is not a fatal stop
//! records a snapshot (a late answer must not be mistaken for an unexpected
//! NMI, which is fatal).

extern crate alloc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::percpu::{self, MAX_CPUS};
use super::trap_entry::TrapFrame;
use super::{apic, backtrace, cpu, timer};

/// Return addresses kept per CPU.
pub const SNAPSHOT_FRAMES: usize = 10;

/// How long [`take`] waits for the other CPUs' answers.
const ANSWER_WAIT_MICROSECONDS: u64 = 200_000;

const HLT_OPCODE: u8 = 0xF4;
const RFLAGS_INTERRUPTS: u64 = 1 << 9;

/// Where one CPU was when it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSnapshot {
    pub cpu: usize,
    /// The interrupted instruction (0 when the CPU was in user mode).
    pub instruction: u64,
    pub interrupts_enabled: bool,
    /// The CPU was halted (the interrupted instruction follows a `hlt`).
    pub halted: bool,
    pub user_mode: bool,
    /// Return addresses of the frame-pointer chain, innermost first; 0 ends it.
    pub callers: [u64; SNAPSHOT_FRAMES],
}

/// What [`take`] learned about one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuState {
    Answered(CpuSnapshot),
    /// The CPU did not answer the NMI in time.
    Silent { cpu: usize },
}

/// One CPU's answer, written only by that CPU's NMI handler.
struct Slot {
    /// The request this slot answers; written last.
    answered: AtomicU64,
    instruction: AtomicU64,
    flags: AtomicU64,
    callers: [AtomicU64; SNAPSHOT_FRAMES],
}

const FLAG_INTERRUPTS: u64 = 1;
const FLAG_HALTED: u64 = 2;
const FLAG_USER: u64 = 4;

impl Slot {
    const fn new() -> Self {
        Self {
            answered: AtomicU64::new(0),
            instruction: AtomicU64::new(0),
            flags: AtomicU64::new(0),
            callers: [const { AtomicU64::new(0) }; SNAPSHOT_FRAMES],
        }
    }

    fn read(&self, cpu: usize) -> CpuSnapshot {
        let flags = self.flags.load(Ordering::Relaxed);
        CpuSnapshot {
            cpu,
            instruction: self.instruction.load(Ordering::Relaxed),
            interrupts_enabled: flags & FLAG_INTERRUPTS != 0,
            halted: flags & FLAG_HALTED != 0,
            user_mode: flags & FLAG_USER != 0,
            callers: core::array::from_fn(|index| self.callers[index].load(Ordering::Relaxed)),
        }
    }
}

static SLOTS: [Slot; MAX_CPUS] = [const { Slot::new() }; MAX_CPUS];
/// The number of the latest request (0: none yet). Only grows.
static REQUEST: AtomicU64 = AtomicU64::new(0);
/// One request at a time.
static ASKING: AtomicBool = AtomicBool::new(false);

/// True once some CPU asked for a snapshot: NMIs are then answers.
pub(crate) fn is_requested() -> bool {
    REQUEST.load(Ordering::Acquire) != 0
}

/// The NMI handler's body: records where this CPU was.
pub(crate) fn answer(frame: &TrapFrame) {
    let user_mode = frame.from_user();
    let (instruction, frame_pointer) = if user_mode { (0, 0) } else { (frame.rip, frame.rbp) };
    let halted = !user_mode && backtrace::byte_at(instruction.wrapping_sub(1)) == Some(HLT_OPCODE);
    record(instruction, frame_pointer, frame.rflags & RFLAGS_INTERRUPTS != 0, halted, user_mode);
}

fn record(instruction: u64, frame_pointer: u64, interrupts: bool, halted: bool, user_mode: bool) {
    let slot = &SLOTS[percpu::current_index()];
    slot.instruction.store(instruction, Ordering::Relaxed);
    let flags = u64::from(interrupts) * FLAG_INTERRUPTS + u64::from(halted) * FLAG_HALTED + u64::from(user_mode) * FLAG_USER;
    slot.flags.store(flags, Ordering::Relaxed);
    let mut callers = [0u64; SNAPSHOT_FRAMES];
    backtrace::return_addresses(frame_pointer, &mut callers);
    for (stored, address) in slot.callers.iter().zip(callers) {
        stored.store(address, Ordering::Relaxed);
    }
    // Release: the asker's Acquire load sees the words above.
    slot.answered.store(REQUEST.load(Ordering::Acquire), Ordering::Release);
}

/// Asks every online CPU where it is and returns what each said, in CPU
/// order (this CPU records itself). `None` when another snapshot is being
/// taken right now.
pub fn take() -> Option<Vec<CpuState>> {
    if ASKING.swap(true, Ordering::Acquire) {
        return None;
    }
    let request = REQUEST.fetch_add(1, Ordering::AcqRel) + 1;
    let me = percpu::current_index();
    record_self();
    apic::send_nmi_to_others();
    let online = percpu::online_count();
    let answered = |cpu: usize| SLOTS[cpu].answered.load(Ordering::Acquire) == request;
    let deadline = timer::uptime_nanoseconds() + ANSWER_WAIT_MICROSECONDS * 1_000;
    while !(0..online).all(answered) && timer::uptime_nanoseconds() < deadline {
        cpu::relax();
    }
    let states = (0..online)
        .map(|cpu| if cpu == me || answered(cpu) { CpuState::Answered(SLOTS[cpu].read(cpu)) } else { CpuState::Silent { cpu } })
        .collect();
    ASKING.store(false, Ordering::Release);
    Some(states)
}

#[inline(never)]
fn record_self() {
    let frame_pointer: u64;
    // SAFETY: reading rbp has no side effects.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) frame_pointer, options(nomem, nostack, preserves_flags)) };
    record(record_self as *const () as u64, frame_pointer, cpu::interrupts_enabled(), false, false);
}
