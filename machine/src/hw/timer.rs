//! Time: the local APIC timer and the TSC, calibrated against PIT channel 0.
//!
//! PIT channel 0 (1.193182 MHz) is counted down by polling, which works on
//! every PC machine type (channel 2's gate at port 0x61 is missing on
//! `microvm` and under qboot). Over that interval we count TSC cycles and
//! local-APIC timer ticks, which gives both rates.

use core::sync::atomic::{AtomicU64, Ordering};

use super::cpu::{self, inb, outb};
use super::apic;

/// Periodic timer ticks per second on every CPU (the scheduler's time
/// slice; sleepers are woken between ticks, see `arm_one_shot`).
pub const TICK_HERTZ: u64 = 100;
/// Nanoseconds between two periodic ticks.
pub const TICK_NANOSECONDS: u64 = 1_000_000_000 / TICK_HERTZ;

const PIT_FREQUENCY_HZ: u64 = 1_193_182;
const PIT_CHANNEL0: u16 = 0x40;
const PIT_COMMAND: u16 = 0x43;
const CALIBRATION_MS: u64 = 10;

static TSC_PER_MS: AtomicU64 = AtomicU64::new(0);
static APIC_TICKS_PER_MS: AtomicU64 = AtomicU64::new(0);
static BOOT_TSC: AtomicU64 = AtomicU64::new(0);

fn read_pit_count() -> u16 {
    outb(PIT_COMMAND, 0x00); // latch channel 0
    let low = inb(PIT_CHANNEL0);
    let high = inb(PIT_CHANNEL0);
    u16::from_le_bytes([low, high])
}

/// Measures the TSC and APIC-timer rates (bootstrap processor, interrupts off).
pub(crate) fn calibrate() {
    BOOT_TSC.store(cpu::read_timestamp_counter(), Ordering::Relaxed);
    let pit_ticks = (PIT_FREQUENCY_HZ * CALIBRATION_MS / 1000) as u16;
    outb(PIT_COMMAND, 0x30); // channel 0, low then high byte, mode 0
    apic::start_counting(u32::MAX);
    let tsc_start = cpu::read_timestamp_counter();
    outb(PIT_CHANNEL0, pit_ticks as u8);
    outb(PIT_CHANNEL0, (pit_ticks >> 8) as u8);
    // Mode 0 counts down to zero and then wraps to 0xFFFF.
    let mut previous = pit_ticks;
    loop {
        let count = read_pit_count();
        if count == 0 || count > previous {
            break;
        }
        previous = count;
    }
    let tsc_elapsed = cpu::read_timestamp_counter() - tsc_start;
    let apic_elapsed = u64::from(u32::MAX - apic::current_count());
    TSC_PER_MS.store((tsc_elapsed / CALIBRATION_MS).max(1), Ordering::Relaxed);
    APIC_TICKS_PER_MS.store((apic_elapsed / CALIBRATION_MS).max(1), Ordering::Relaxed);
}

/// TSC cycles per millisecond.
pub fn tsc_per_millisecond() -> u64 {
    TSC_PER_MS.load(Ordering::Relaxed)
}

/// Local-APIC timer ticks (divide by 16) per millisecond.
pub fn apic_ticks_per_millisecond() -> u64 {
    APIC_TICKS_PER_MS.load(Ordering::Relaxed)
}

/// The time-stamp counter's reading at calibration: uptime 0 (what user
/// mode needs, with [`tsc_per_millisecond`], to read the uptime itself).
pub fn boot_timestamp() -> u64 {
    BOOT_TSC.load(Ordering::Relaxed)
}

/// Nanoseconds since calibration: floor(elapsed * 10^6 / per_ms), split
/// as the vDSO computes it (whole milliseconds, then the rest) so that no
/// 128-bit division (a software routine, 2 % of a `clock_gettime`) runs
/// and both read the same number.
pub fn uptime_nanoseconds() -> u64 {
    uptime_at(cpu::read_timestamp_counter())
}

/// The uptime (ns) when the time-stamp counter read `timestamp`.
pub fn uptime_at(timestamp: u64) -> u64 {
    nanoseconds_of_cycles(timestamp.saturating_sub(BOOT_TSC.load(Ordering::Relaxed)))
}

/// How long `cycles` of the time-stamp counter last, in nanoseconds.
pub fn nanoseconds_of_cycles(cycles: u64) -> u64 {
    let per_ms = tsc_per_millisecond().max(1);
    (cycles / per_ms) * 1_000_000 + (cycles % per_ms) * 1_000_000 / per_ms
}

/// Spins for `microseconds`.
pub fn busy_wait_microseconds(microseconds: u64) {
    let cycles = tsc_per_millisecond() * microseconds / 1000;
    let start = cpu::read_timestamp_counter();
    while cpu::read_timestamp_counter() - start < cycles {
        cpu::relax();
    }
}

/// Starts this CPU's periodic timer at `hertz` on `vector`.
pub(crate) fn start_periodic(vector: u8, hertz: u64) {
    let initial = (apic_ticks_per_millisecond() * 1000 / hertz).clamp(1, u64::from(u32::MAX));
    apic::start_periodic(vector, initial as u32);
}

/// Arms this CPU's timer to interrupt once on `vector` when the uptime
/// clock reaches `deadline` (ns; at once if it has), replacing any
/// earlier arming or periodic timer. Call with interrupts off, so the
/// interrupt cannot come between reading the clock and arming.
pub fn arm_one_shot(vector: u8, deadline: u64) {
    let delay = deadline.saturating_sub(uptime_nanoseconds());
    let ticks = u128::from(delay) * u128::from(apic_ticks_per_millisecond()) / 1_000_000;
    // Round up, so the interrupt does not come before the deadline.
    apic::start_one_shot(vector, (ticks + 1).min(u128::from(u32::MAX)) as u32);
}
