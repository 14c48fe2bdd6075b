//! Layer 1 of Lamina: spinlocks.
//!
//! **Provides** [`SpinLock<T, L, G, H>`](SpinLock): data that lives inside its
//! lock, reached only through a guard. Two lock algorithms sit behind one
//! sealed interface, [`RawLock`], and are interchangeable by the type
//! parameter `L`:
//! - [`TicketLock`] (the default): a fetch-and-increment ticket and a
//!   now-serving counter, compared with `!=` so that wrap-around of the `u32`
//!   counters is correct (mC2's bug was `<`);
//! - [`McsLock`]: a queue lock in which every waiter spins on its own node.
//!   The nodes are a fixed array inside the lock, indexed by a CPU slot that
//!   the kernel provides through [`CpuSlot`] (see `mcs.rs` for why).
//!
//! Both are FIFO: they refine the atomic specification in [`spec`], which the
//! refinement tests check on random step sequences and loom checks on the
//! real code: every interleaving of 2 threads, and of 3 threads within a
//! preemption bound.
//!
//! **Relies on** nothing from the machine layer in the lock algorithms:
//! what the kernel must say about the hardware comes in through traits —
//! [`GuardPolicy`] (e.g. "interrupts disabled while held"), [`HeldLevels`]
//! (per-CPU storage for the debug-build lock-order check) and [`CpuSlot`]
//! (the current CPU's index, for MCS nodes). On the kernel target, the
//! `kernel` module implements them with the machine layer's safe per-CPU
//! and interrupt APIs and names the kernel's locks, `KernelTicketLock` and
//! `KernelMcsLock`.
//!
//! **Must never**: allocate, block, or call upward; touch hardware itself; hand out
//! `&mut T` without holding the lock. `unsafe` is confined to the one module
//! that holds the lock cell (`cell.rs`), whose safety rests on the mutual
//! exclusion of this crate's own two locks — which is why [`RawLock`] is
//! sealed.
//!
//! ```
//! use spinlock::{CpuSlot, Level, McsLock, SpinLock};
//!
//! // A ticket lock (the default), usable as a static.
//! static TICKS: SpinLock<u64> = SpinLock::new(Level::new(2), 0);
//! *TICKS.lock() += 1;
//!
//! // The same data behind an MCS lock, for a machine with one CPU.
//! struct OnlyCpu;
//! impl CpuSlot for OnlyCpu {
//!     fn current() -> usize {
//!         0
//!     }
//! }
//! let ticks: SpinLock<u64, McsLock<OnlyCpu, 1>> = SpinLock::new(Level::new(2), 0);
//! ticks.with(|count| *count += 1);
//! assert_eq!(ticks.try_lock().map(|count| *count), Some(1));
//! ```
//!
//! **Lock order** is the layer order of DESIGN.md: every lock has a
//! [`Level`] (the number of the layer, or sub-layer, that owns it), and while
//! a CPU holds a lock of level `Y` it may only take locks of levels strictly
//! below `Y` — a layer only calls the layers below it. Debug builds check
//! this and panic with "lock order violation"; release builds compile it away.
#![no_std]
// `unsafe` is forbidden in every module but `cell`, the lock cell.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

#[cfg(any(test, loom, feature = "std"))]
extern crate std;

#[macro_use]
#[forbid(unsafe_code)]
mod sync;

#[forbid(unsafe_code)]
mod big_lock;
#[allow(unsafe_code)]
mod cell;
#[forbid(unsafe_code)]
mod guard;
#[cfg(target_os = "none")]
#[forbid(unsafe_code)]
pub mod kernel;
#[forbid(unsafe_code)]
mod lock;
#[forbid(unsafe_code)]
mod mcs;
#[forbid(unsafe_code)]
mod order;
#[forbid(unsafe_code)]
mod raw;
#[forbid(unsafe_code)]
pub mod spec;
#[forbid(unsafe_code)]
mod ticket;

#[cfg(test)]
#[forbid(unsafe_code)]
mod tests;

pub use big_lock::BigLock;
pub use guard::{GuardPolicy, NoGuard};
pub use lock::{SpinLock, SpinLockGuard};
pub use mcs::{Arrival, CpuSlot, McsLock};
#[cfg(any(test, feature = "std"))]
pub use order::ThreadLevels;
pub use order::{HeldLevels, Level, LevelSet, Untracked};
pub use raw::RawLock;
pub use sync::spin_hint;
pub use ticket::{Ticket, TicketLock};
