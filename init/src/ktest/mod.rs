//! In-kernel tests: run in QEMU by `make test`, reported on the serial port.

mod boot_checks;
mod capabilities;
mod containers;
mod exceptions;
mod exhaustion;
mod frames_and_contexts;
mod frames_every_cpu;
mod locks;
mod memory;
mod runner;
pub mod smp;
mod stall_report;
mod stress_plan;
mod sync_objects;
mod threads;
mod user_mode;
mod watchdog;

pub use runner::run_all;
