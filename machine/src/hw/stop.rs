//! Ending the machine: power-off, QEMU's exit device, and stopping every
//! CPU after a fatal error.
//!
//! A fatal error (panic or kernel-mode exception) on one CPU sends an NMI to
//! every other CPU, which then halts, so the report is the last thing
//! printed and no CPU keeps running on broken state.

use core::sync::atomic::{AtomicBool, AtomicU16, Ordering};

use super::{apic, cpu};

/// Codes written to QEMU's `isa-debug-exit` device (port 0xf4); QEMU exits
/// with `(code << 1) | 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// All in-kernel tests passed (QEMU exits 33).
    Success = 0x10,
    /// A test failed, or the kernel panicked (QEMU exits 35).
    Failure = 0x11,
    /// The machine cannot run Lamina, e.g. too little memory (QEMU exits 37).
    BootFailure = 0x12,
}

const DEBUG_EXIT_PORT: u16 = 0xf4;
static STOPPING: AtomicBool = AtomicBool::new(false);
static PM1A_CONTROL_PORT: AtomicU16 = AtomicU16::new(0);
static S5_SLEEP_TYPE: AtomicU16 = AtomicU16::new(0);

/// Records how ACPI powers the machine off (from the FADT and `\_S5`).
pub(crate) fn set_acpi_power_off(pm1a_control_port: Option<u16>, s5_sleep_type: Option<u16>) {
    PM1A_CONTROL_PORT.store(pm1a_control_port.unwrap_or(0), Ordering::Relaxed);
    S5_SLEEP_TYPE.store(s5_sleep_type.unwrap_or(0), Ordering::Relaxed);
}

/// True once some CPU has begun a fatal stop.
pub fn is_stopping() -> bool {
    STOPPING.load(Ordering::Acquire)
}

/// Marks the machine as stopping and halts every other CPU. If another CPU
/// got here first, this CPU just halts.
pub(crate) fn begin_fatal() {
    cpu::disable_interrupts();
    if STOPPING.swap(true, Ordering::AcqRel) {
        stopped_by_other_cpu();
    }
    apic::send_nmi_to_others();
}

/// Where a CPU ends when another CPU stops the machine.
pub(crate) fn stopped_by_other_cpu() -> ! {
    cpu::halt_forever()
}

/// Ends the run: tells QEMU's exit device `code`, then halts (on hardware
/// without the device the write does nothing).
pub fn halt_machine(code: ExitCode) -> ! {
    cpu::outl(DEBUG_EXIT_PORT, code as u32);
    cpu::halt_forever()
}

/// Stops every other CPU, then ends the run with `code` (used by the panic
/// handler and by the in-kernel test runner on failure).
pub fn fatal_stop(code: ExitCode) -> ! {
    begin_fatal();
    halt_machine(code)
}

/// Powers the machine off through ACPI (S5); falls back to the exit device.
pub fn power_off() -> ! {
    cpu::disable_interrupts();
    let port = PM1A_CONTROL_PORT.load(Ordering::Relaxed);
    if port != 0 {
        const SLEEP_ENABLE: u16 = 1 << 13;
        let sleep_type = S5_SLEEP_TYPE.load(Ordering::Relaxed);
        cpu::outw(port, (sleep_type << 10) | SLEEP_ENABLE);
    }
    halt_machine(ExitCode::Success)
}
