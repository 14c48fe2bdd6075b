//! Whether new programs get randomised address spaces, and their layouts.
//!
//! On by default, as on Linux (`randomize_va_space = 2`); `norandmaps` on
//! the kernel command line turns it off for every program (Linux's option
//! of that name), and a process whose personality has
//! `ADDR_NO_RANDOMIZE` (`setarch -R`) gets the fixed layout alone. The
//! layouts themselves are `linux_abi::address_layout`'s.

use core::sync::atomic::{AtomicBool, Ordering};

use linux_abi::address_layout::AddressLayout;

static RANDOMIZE: AtomicBool = AtomicBool::new(true);

/// Reads `norandmaps` from the kernel command line (at boot).
pub fn configure(command_line: &str) {
    let off = command_line.split_whitespace().any(|word| word == "norandmaps");
    RANDOMIZE.store(!off, Ordering::Relaxed);
}

/// `/proc/sys/kernel/randomize_va_space`: 2 (stack, mmap, PIE, vDSO and
/// brk) or 0 (`norandmaps`).
pub fn level() -> u32 {
    if RANDOMIZE.load(Ordering::Relaxed) { 2 } else { 0 }
}

/// The layout of a program a process with `personality` starts.
pub fn layout_for(personality: u32) -> AddressLayout {
    AddressLayout::for_personality(personality, RANDOMIZE.load(Ordering::Relaxed), || {
        let mut bytes = [0u8; 32];
        crate::random::fill(&mut bytes);
        core::array::from_fn(|index| u64::from_le_bytes(bytes[index * 8..index * 8 + 8].try_into().unwrap_or_default()))
    })
}
