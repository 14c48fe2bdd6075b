//! The I/O APIC: routes device interrupts (global system interrupts) to a
//! CPU and vector.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const SELECT: u64 = 0x00;
const WINDOW: u64 = 0x10;
const VERSION: u32 = 0x01;
const REDIRECTION_BASE: u32 = 0x10;
const MASKED: u32 = 1 << 16;
const ACTIVE_LOW: u32 = 1 << 13;
const LEVEL_TRIGGERED: u32 = 1 << 15;

static BASE: AtomicU64 = AtomicU64::new(0);
static FIRST_INTERRUPT: AtomicU32 = AtomicU32::new(0);

fn write_register(index: u32, value: u32) {
    let base = BASE.load(Ordering::Relaxed);
    if base == 0 {
        return;
    }
    // SAFETY: `BASE` is an uncached mapping of the I/O APIC's register page;
    // the select/window pair is only used by the bootstrap processor during
    // boot, so the two writes are not interleaved with another CPU's.
    unsafe {
        ((base + SELECT) as *mut u32).write_volatile(index);
        ((base + WINDOW) as *mut u32).write_volatile(value);
    }
}

fn read_register(index: u32) -> u32 {
    let base = BASE.load(Ordering::Relaxed);
    if base == 0 {
        return 0;
    }
    // SAFETY: as in `write_register`.
    unsafe {
        ((base + SELECT) as *mut u32).write_volatile(index);
        ((base + WINDOW) as *const u32).read_volatile()
    }
}

/// Records the mapped I/O APIC and masks all of its inputs.
pub(crate) fn init(virtual_address: u64, first_interrupt: u32) {
    BASE.store(virtual_address, Ordering::Relaxed);
    FIRST_INTERRUPT.store(first_interrupt, Ordering::Relaxed);
    let inputs = ((read_register(VERSION) >> 16) & 0xFF) + 1;
    for input in 0..inputs {
        write_register(REDIRECTION_BASE + 2 * input, MASKED);
        write_register(REDIRECTION_BASE + 2 * input + 1, 0);
    }
}

/// Polarity and trigger of an interrupt line (MADT override flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineMode {
    pub active_low: bool,
    pub level_triggered: bool,
}

impl LineMode {
    /// ISA defaults (active high, edge) unless the MADT flags say otherwise.
    pub fn from_madt_flags(flags: u16) -> Self {
        Self { active_low: flags & 0b11 == 0b11, level_triggered: (flags >> 2) & 0b11 == 0b11 }
    }
}

/// Delivers global interrupt `global_interrupt` as `vector` to APIC `destination`.
pub(crate) fn route(global_interrupt: u32, vector: u8, destination: u32, mode: LineMode) {
    let input = global_interrupt - FIRST_INTERRUPT.load(Ordering::Relaxed);
    let mut low = u32::from(vector);
    if mode.active_low {
        low |= ACTIVE_LOW;
    }
    if mode.level_triggered {
        low |= LEVEL_TRIGGERED;
    }
    write_register(REDIRECTION_BASE + 2 * input + 1, destination << 24);
    write_register(REDIRECTION_BASE + 2 * input, low);
}
