//! In-kernel tests: run in QEMU by `make test` (`cargo xtask test --only
//! ktest`), reported on the serial port. Linked only into the test image.
//! Each file holds the tests of one subject and lists them where they are
//! written, with [`kernel_tests!`]; the runner's list of files is checked by
//! the compiler (a file whose tests are not run is an unused-item error).
//! Never contains `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]
#![deny(dead_code)]

extern crate alloc;

mod boot_checks;
mod capabilities;
mod containers;
mod exceptions;
mod exhaustion;
mod frame_record;
mod protection_faults;
mod frames_and_contexts;
mod frames_every_cpu;
mod groups;
mod locks;
mod memory;
mod multikernel;
mod runner;
mod small_space;
mod socket_charges;
pub mod smp;
mod stall_report;
mod stress_plan;
mod sync_objects;
mod threads;
mod tlb_reach;
mod user_mode;
mod virtualization;
mod waiting;
mod watchdog;

pub use runner::run_all;
