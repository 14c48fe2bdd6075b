//! Lamina's top layer (for now): what runs once the machine layer hands over.
//!
//! Brings the layers above the machine up in order, prints the banner, and
//! then runs either the kernel monitor on the serial console or, in a
//! `ktest` build, the in-kernel tests. It relies on the machine layer's safe
//! API and must never contain `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod address_spaces;
mod boot;
#[cfg_attr(not(any(feature = "ktest", feature = "kbench")), allow(dead_code))]
mod capabilities;
#[cfg(any(feature = "ktest", not(feature = "kbench")))]
mod cpu_work;
#[cfg_attr(not(any(feature = "ktest", feature = "kbench")), allow(dead_code))]
mod errno;
mod faults;
mod kernel_containers;
mod kernel_memory;
#[cfg(feature = "kbench")]
mod kbench;
#[cfg(feature = "ktest")]
mod ktest;
#[cfg(not(any(feature = "ktest", feature = "kbench")))]
mod monitor;
#[cfg(any(feature = "ktest", feature = "kbench"))]
mod native_harness;
mod panic;
mod physical_memory;
mod system;
#[cfg_attr(any(feature = "ktest", feature = "kbench"), allow(dead_code))]
mod userland;

pub use boot::{bootstrap_main, secondary_main};
