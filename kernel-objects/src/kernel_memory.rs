//! The kernel-memory budget requests reserve from (Biscuit's scheme, crate
//! `reservations`), and the one way a request allocates heap memory:
//! drawing on its reservation first, then allocating fallibly.
//!
//! At boot half of the free heap is set aside for requests; the other half
//! serves the kernel's own bounded structures (threads, queues, per-CPU
//! state) and absorbs fragmentation of the first-fit heap. A request whose
//! reservation succeeded therefore finds its memory: it can neither fail
//! half-way nor panic for lack of heap. Must never allocate for a request
//! without a draw on its reservation.

use alloc::vec::Vec;

use reservations::{Account, Budget, Reservation, ReservationError};

/// Bytes per reserved page.
pub const PAGE_BYTES: usize = 4096;

/// The budget every request reserves from.
pub static KERNEL_BUDGET: Budget = Budget::new(0);

/// Sets aside half of the heap that is free now. Returns the pages.
pub fn init() -> u64 {
    let (free_bytes, _) = machine::heap::usage();
    let pages = (free_bytes / PAGE_BYTES / 2) as u64;
    KERNEL_BUDGET.set_aside(pages);
    pages
}

/// Why a request's allocation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestMemoryError {
    /// The request used more than it reserved (its bound is wrong).
    Reservation(ReservationError),
    /// The heap could not give memory the budget promised: the budget's
    /// margin was too small. Nothing was drawn.
    Heap,
}

/// A zeroed buffer of `bytes`, drawn on `reservation` (whole pages).
pub fn reserved_buffer<A: Account>(reservation: &mut Reservation<'_, A>, bytes: usize) -> Result<Vec<u8>, RequestMemoryError> {
    let pages = bytes.div_ceil(PAGE_BYTES) as u64;
    reservation.draw(pages).map_err(RequestMemoryError::Reservation)?;
    let mut buffer = Vec::new();
    if buffer.try_reserve_exact(bytes).is_err() {
        // Cannot fail: `pages` were just drawn.
        let _ = reservation.give_back(pages);
        return Err(RequestMemoryError::Heap);
    }
    buffer.resize(bytes, 0);
    Ok(buffer)
}

/// Whether a buffer of `bytes` of a program's data (a call's transfer
/// buffer, a pipe's or socket's queue growing) may be allocated now: one
/// of at most a page always may; a larger one only while it leaves a
/// sixteenth of the heap free. Only such buffers — each allocated
/// fallibly, its refusal a short transfer or ENOMEM — ask, so the
/// kernel's own infallible allocations (a process, a thread, a table)
/// always find that sixteenth: CI saw blocked pipe writers' buffers empty
/// the heap and then `setgroups`' copy, an infallible one, panic the
/// kernel. (A reserve applied to every allocation above a page made those
/// infallible ones fail instead, and was taken back.)
pub fn program_data_fits(bytes: usize) -> bool {
    if bytes <= PAGE_BYTES {
        return true;
    }
    let (free, total) = machine::heap::usage();
    free.saturating_sub(bytes) >= total / 16
}
