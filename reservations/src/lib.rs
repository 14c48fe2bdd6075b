//! Kernel-memory reservations (Biscuit, OSDI'18 §5): a request reserves the
//! kernel memory its worst case needs *before* it starts, so that no kernel
//! allocation can fail half-way through it.
//!
//! **Provides**
//! - [`Budget`]: the kernel memory (in pages) that requests may reserve, a
//!   lock-free counter shared by every CPU;
//! - [`Reservation`]: what one request reserved, from the budget and from
//!   the caller's quota account ([`Account`], the caller's container); it
//!   records what the request really uses ([`Reservation::draw`]) and
//!   refuses — with [`ReservationError::Overdrawn`], and a debug-build
//!   assertion — a request that would use more than it reserved;
//! - [`Bound`]: a request's worst case, written as a fixed part plus a part
//!   per unit of its argument, so that bounds are computed, not guessed.
//!
//! Finishing a request ([`Reservation::finish`]) returns the unused part to
//! both; the pages it keeps (objects that outlive the request) stay charged
//! until [`Budget::release_kept`] and [`Account::release`] when they are
//! freed.
//!
//! **Relies on** nothing but atomics, and the caller's [`Account`].
//!
//! **Must never** panic on anything a caller passes (overflow is an error),
//! hand out more than the budget holds, or leave a charge behind when a
//! reservation fails: a failed `reserve` changes nothing.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(test, loom))]
extern crate std;

mod account;
mod bound;
mod budget;
mod error;
mod reservation;
mod sync;

#[cfg(test)]
mod tests;

pub use account::{Account, Unlimited};
pub use bound::Bound;
pub use budget::Budget;
pub use error::ReservationError;
pub use reservation::Reservation;
