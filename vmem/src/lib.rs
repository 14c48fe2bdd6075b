//! The virtual-memory layer of Lamina (DESIGN.md's "virtual memory"): user
//! address spaces.
//!
//! **Provides** [`AddressSpace`]: the user half of a 4-level x86-64 page
//! table with map, unmap, protect and translate; demand-zero regions;
//! page-fault decisions ([`AddressSpace::handle_fault`]); copy-on-write
//! fork that rolls back completely when memory runs out; and the set of
//! CPUs that have run the space, so that every operation that takes rights
//! away returns a [`TlbFlush`] naming exactly those CPUs. Frames mapped by
//! several spaces are counted in the shared [`OwnerTable`] and freed
//! exactly when their last owner lets go. W^X: no page is ever writable
//! and executable at once.
//!
//! Everything refines [`spec::AddressSpaceSpec`] (a map from virtual page
//! to contents and rights); host tests compare the two over random
//! operation sequences, and loom checks the owner table.
//!
//! **Relies on** two traits the kernel implements: [`FrameMemory`] (the
//! space's tables and pages, through the machine layer's `SpaceTables`,
//! which checks every entry write against its record of the frames: a
//! table links only frames the space adopted, a leaf only those or mapped
//! pages, and a frame goes back only when no entry names it) and
//! [`FrameSource`] (frames charged to the space's container). The host
//! tests' `fake` applies the same rules (`machine::frame_states`).
//!
//! **Must never** use `unsafe`, touch the kernel half of a root (entries
//! 256..512 are copied once at creation and never changed), panic on a
//! caller's input, or lose a frame: every frame it takes goes back to the
//! source by `unmap`, a fault's copy, or `destroy`.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod cpu_set;
mod entry;
mod error;
mod fault;
mod fork;
mod memory;
mod owners;
mod rights;
mod space;
pub mod spec;
mod sync;
mod table_list;
#[cfg(test)]
mod table_walk;
#[cfg(all(test, not(loom)))]
pub mod fake;

#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, loom))]
mod loom_tests;

pub use cpu_set::{CpuSet, TlbFlush};
pub use error::{Fault, VmError};
pub use fault::{Access, FaultOutcome};
pub use memory::{FrameMemory, FrameSource, FreshFrame, SharedFrame, PAGE_SIZE};
pub use owners::{LeaveOutcome, OwnerTable};
pub use rights::Rights;
pub use space::{AddressSpace, Translation, USER_END};
