//! The Lamina kernel image: links every crate into one ELF, runs the boot
//! sequence above the machine layer, and then hands the machine to what
//! this image is for — the Linux personality (or the kernel monitor) in
//! the normal image, the in-kernel tests (feature `ktest`) or the in-kernel
//! benchmarks (feature `kbench`). The panic handler and the deliberate
//! faults the boot tests ask for live here too.
//!
//! It names the two functions the machine layer's start-up code calls when
//! a CPU is ready: `lamina_bootstrap_main` (the first CPU) and
//! `lamina_secondary_main` (every other CPU). Giving a function a fixed
//! symbol name is an unsafe attribute in Rust, so this crate denies
//! `unsafe_code` and allows it on exactly these two items. It must hold no
//! kernel service of its own: what the kernel does lives in the crates it
//! links.
#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

mod boot;
mod faults;
#[cfg(not(any(feature = "ktest", feature = "kbench")))]
mod monitor;
mod panic;

use machine::Handoff;

/// Called by the machine layer on the bootstrap processor.
// SAFETY: the machine layer declares this symbol with the same signature,
// and nothing else in the image defines it.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub fn lamina_bootstrap_main(handoff: Handoff) -> ! {
    boot::bootstrap_main(handoff)
}

/// Called by the machine layer on every application processor.
// SAFETY: as above.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub fn lamina_secondary_main(cpu_index: usize) -> ! {
    boot::secondary_main(cpu_index)
}
