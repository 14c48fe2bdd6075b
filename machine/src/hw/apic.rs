//! The local APIC (xAPIC, memory-mapped): identity, end of interrupt,
//! inter-processor interrupts and the timer.
//!
//! Every CPU's local APIC sits at the same physical address, mapped once
//! (uncached) in the device-memory region; each CPU reaches its own.

use core::sync::atomic::{AtomicU64, Ordering};

use super::cpu;
use super::trap::VECTOR_SPURIOUS;

const ID: u64 = 0x20;
const TASK_PRIORITY: u64 = 0x80;
const END_OF_INTERRUPT: u64 = 0xB0;
const SPURIOUS: u64 = 0xF0;
const ERROR_STATUS: u64 = 0x280;
const COMMAND_LOW: u64 = 0x300;
const COMMAND_HIGH: u64 = 0x310;
const TIMER_VECTOR: u64 = 0x320;
const LINT0: u64 = 0x350;
const TIMER_INITIAL: u64 = 0x380;
const TIMER_CURRENT: u64 = 0x390;
const TIMER_DIVIDE: u64 = 0x3E0;

const APIC_ENABLE: u32 = 1 << 8;
const MASKED: u32 = 1 << 16;
const TIMER_PERIODIC: u32 = 1 << 17;
const DELIVERY_PENDING: u32 = 1 << 12;
const DELIVERY_NMI: u32 = 0b100 << 8;
const DELIVERY_INIT: u32 = 0b101 << 8;
const DELIVERY_STARTUP: u32 = 0b110 << 8;
const LEVEL_ASSERT: u32 = 1 << 14;
const ALL_EXCLUDING_SELF: u32 = 0b11 << 18;

/// Virtual address of the local APIC registers (0 until mapped).
static BASE: AtomicU64 = AtomicU64::new(0);

fn register(offset: u64) -> Option<*mut u32> {
    let base = BASE.load(Ordering::Relaxed);
    (base != 0).then_some((base + offset) as *mut u32)
}

fn read(offset: u64) -> u32 {
    match register(offset) {
        // SAFETY: `BASE` is only set to an uncached mapping of the local APIC
        // page, and `offset` is one of its 32-bit registers.
        Some(address) => unsafe { address.read_volatile() },
        None => 0,
    }
}

fn write(offset: u64, value: u32) {
    if let Some(address) = register(offset) {
        // SAFETY: as in `read`.
        unsafe { address.write_volatile(value) }
    }
}

/// Records where the APIC is mapped (bootstrap processor, once).
pub(crate) fn set_base(virtual_address: u64) {
    BASE.store(virtual_address, Ordering::Relaxed);
}

/// Enables this CPU's local APIC: spurious vector, all priorities accepted,
/// LINT0 (the legacy PIC) masked.
pub(crate) fn enable_local() {
    write(SPURIOUS, APIC_ENABLE | u32::from(VECTOR_SPURIOUS));
    write(TASK_PRIORITY, 0);
    write(LINT0, MASKED);
    write(ERROR_STATUS, 0);
}

/// This CPU's APIC id.
pub fn id() -> u32 {
    read(ID) >> 24
}

pub(crate) fn end_of_interrupt() {
    write(END_OF_INTERRUPT, 0);
}

/// Writes the interrupt command register: destination first, then the
/// command, which sends. Interrupts stay off from the first write until
/// delivery: an interrupt handler that sends an IPI of its own between
/// the two writes would leave its destination in the high half, and the
/// interrupted send would go to the wrong CPU (a lost wake-up IPI).
fn send(destination: u32, command: u32) {
    cpu::without_interrupts(|| {
        write(COMMAND_HIGH, destination << 24);
        write(COMMAND_LOW, command);
        while read(COMMAND_LOW) & DELIVERY_PENDING != 0 {
            core::hint::spin_loop();
        }
    });
}

/// Sends interrupt `vector` to the CPU with APIC id `destination`.
pub fn send_ipi(destination: u32, vector: u8) {
    send(destination, u32::from(vector));
}

pub(crate) fn send_init(destination: u32) {
    send(destination, DELIVERY_INIT | LEVEL_ASSERT);
}

pub(crate) fn send_startup(destination: u32, page: u8) {
    send(destination, DELIVERY_STARTUP | u32::from(page));
}

/// An NMI to every other CPU (used to stop the machine).
pub(crate) fn send_nmi_to_others() {
    send(0, ALL_EXCLUDING_SELF | DELIVERY_NMI);
}

/// Starts the timer counting down from `initial` (divide by 16), one-shot, masked.
pub(crate) fn start_counting(initial: u32) {
    write(TIMER_DIVIDE, 0b0011);
    write(TIMER_VECTOR, MASKED);
    write(TIMER_INITIAL, initial);
}

pub(crate) fn current_count() -> u32 {
    read(TIMER_CURRENT)
}

/// One timer interrupt on `vector` after `initial` ticks (divide by 16);
/// a new call before it fires replaces it.
pub(crate) fn start_one_shot(vector: u8, initial: u32) {
    write(TIMER_DIVIDE, 0b0011);
    write(TIMER_VECTOR, u32::from(vector));
    write(TIMER_INITIAL, initial.max(1));
}

/// Periodic timer interrupts on `vector` every `initial` ticks (divide by 16).
pub(crate) fn start_periodic(vector: u8, initial: u32) {
    write(TIMER_DIVIDE, 0b0011);
    write(TIMER_VECTOR, TIMER_PERIODIC | u32::from(vector));
    write(TIMER_INITIAL, initial);
}
