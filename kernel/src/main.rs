//! The Lamina kernel image.
//!
//! This crate only links the layers into one ELF and names the two functions
//! the machine layer's start-up code calls when a CPU is ready:
//! `lamina_bootstrap_main` (the first CPU) and `lamina_secondary_main`
//! (every other CPU). Giving a function a fixed symbol name is an unsafe
//! attribute in Rust, so this crate denies `unsafe_code` and allows it on
//! exactly these two items; everything they do happens in the safe `init`
//! crate.
#![no_std]
#![no_main]
#![deny(unsafe_code)]

use machine::Handoff;

/// Called by the machine layer on the bootstrap processor.
// SAFETY: the machine layer declares this symbol with the same signature,
// and nothing else in the image defines it.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub fn lamina_bootstrap_main(handoff: Handoff) -> ! {
    init::bootstrap_main(handoff)
}

/// Called by the machine layer on every application processor.
// SAFETY: as above.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub fn lamina_secondary_main(cpu_index: usize) -> ! {
    init::secondary_main(cpu_index)
}
