//! Symbolized backtraces by walking frame pointers.
//!
//! The kernel is built with frame pointers, so each frame holds the caller's
//! frame pointer and return address. The walk checks every frame pointer
//! (kernel half, aligned, mapped, growing) before reading it, so a corrupt
//! stack ends the walk instead of faulting.

use super::{layout, paging};
use crate::symbols::SymbolTable;

const MAX_FRAMES: usize = 48;

/// Prints the frames starting at `instruction` with frame pointer `frame_pointer`.
pub fn print_from(instruction: u64, frame_pointer: u64) {
    let symbols = SymbolTable::parse(layout::kernel_symbols());
    crate::emergency_println!("  backtrace:");
    print_frame(0, instruction, symbols.as_ref());
    let mut previous = instruction;
    let mut repeats = 0;
    for (depth, return_address) in (1..MAX_FRAMES).zip(ReturnAddresses::from(frame_pointer)) {
        // The call instruction is just before the return address.
        let call_site = return_address - 1;
        if call_site == previous {
            repeats += 1;
        } else {
            report_repeats(repeats);
            repeats = 0;
            print_frame(depth, call_site, symbols.as_ref());
        }
        previous = call_site;
    }
    report_repeats(repeats);
}

/// Fills `callers` with the return addresses of the chain that starts at
/// `frame_pointer`, innermost first, and zeroes the rest. Takes no lock and
/// allocates nothing (the NMI snapshot uses it).
pub fn return_addresses(frame_pointer: u64, callers: &mut [u64]) {
    callers.fill(0);
    for (slot, address) in callers.iter_mut().zip(ReturnAddresses::from(frame_pointer)) {
        *slot = address;
    }
}

/// Fills `callers` with the return addresses of the current call chain
/// (this function's caller's caller first), zeroing the rest. Takes no
/// lock and allocates nothing: allocation-failure injection names the path
/// of an allocation with it.
#[inline(never)]
pub fn current_return_addresses(callers: &mut [u64]) {
    let frame_pointer: u64;
    // SAFETY: reading rbp has no side effects.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) frame_pointer, options(nomem, nostack, preserves_flags)) };
    return_addresses(frame_pointer, callers);
}

/// The byte at kernel address `address`, if it is mapped.
pub fn byte_at(address: u64) -> Option<u8> {
    if !is_readable(address) {
        return None;
    }
    // SAFETY: the address was just checked to be mapped kernel memory.
    Some(unsafe { (address as *const u8).read_volatile() })
}

/// Walks a frame-pointer chain outwards; ends at a zero return address, an
/// unreadable frame or a frame that does not grow.
struct ReturnAddresses {
    frame_pointer: u64,
}

impl ReturnAddresses {
    fn from(frame_pointer: u64) -> Self {
        Self { frame_pointer }
    }
}

impl Iterator for ReturnAddresses {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let (caller_frame, return_address) = read_frame(self.frame_pointer)?;
        if return_address == 0 {
            return None;
        }
        // A frame that does not grow ends the walk after this address.
        self.frame_pointer = if caller_frame > self.frame_pointer { caller_frame } else { 0 };
        Some(return_address)
    }
}

fn report_repeats(repeats: usize) {
    if repeats > 0 {
        crate::emergency_println!("        (the frame above repeats {repeats} more times)");
    }
}

/// Prints the backtrace of the current call chain.
#[inline(never)]
pub fn print_current() {
    let frame_pointer: u64;
    // SAFETY: reading rbp has no side effects.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) frame_pointer, options(nomem, nostack, preserves_flags)) };
    let here = print_current as *const () as u64;
    print_from(here, frame_pointer);
}

fn print_frame(depth: usize, address: u64, symbols: Option<&SymbolTable<'_>>) {
    match symbols.and_then(|table| table.lookup(address)) {
        Some((symbol, offset)) => crate::emergency_println!("    #{depth:<2} {address:#018x} {}+{offset:#x}", symbol.name),
        None => crate::emergency_println!("    #{depth:<2} {address:#018x} <unknown>"),
    }
}

fn is_readable(address: u64) -> bool {
    address >= layout::DIRECT_MAP_BASE && paging::translate(address).is_some()
}

/// (caller's frame pointer, return address) stored at `frame_pointer`.
fn read_frame(frame_pointer: u64) -> Option<(u64, u64)> {
    if frame_pointer % 8 != 0 || !is_readable(frame_pointer) || !is_readable(frame_pointer + 15) {
        return None;
    }
    let slot = frame_pointer as *const u64;
    // SAFETY: both words were just checked to be mapped kernel memory and
    // aligned; a stale value only ends or shortens the walk.
    unsafe { Some((slot.read_volatile(), slot.add(1).read_volatile())) }
}
