//! Lamina's capability layer (SemperOS/M3 and seL4's mapping database).
//!
//! **Provides** capability spaces (one per process: slots holding
//! capabilities), capabilities (an object, rights, a byte-granular view for
//! memory), the derivation tree (every copy records its parent; a
//! capability knows its children), and the operations on them: create,
//! derive, delegate (two steps, as SemperOS's handshake), offer and obtain,
//! drop, and two-phase revoke (mark, then sweep; never acknowledged before
//! it is complete). Every object has a [`GlobalKey`] that another kernel
//! could use. [`CapDatabase`] is a state machine without I/O or locks;
//! [`SharedCaps`] puts it behind one lock and runs the long operations a
//! batch at a time. [`spec::CapsSpec`] is the executable specification.
//!
//! **Relies on** the spinlock layer for the database lock and the sync
//! layer's condition variable to wait for revocations; the caller undoes
//! effects (unmapping, closing) from [`Removed`] records.
//!
//! **Must never** let rights grow along a derivation, let anything derived
//! from a doomed capability survive its revoke, recurse over the tree, or
//! panic on anything a caller can pass: every refusal is a [`CapError`],
//! and running out of kernel heap is [`CapError::OutOfMemory`].
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(any(test, loom))]
extern crate std;

mod arena;
mod audit;
mod database;
pub mod distributed;
mod error;
mod exchange;
mod ids;
mod node;
mod object;
mod removed;
mod revoke;
mod rights;
mod shared;
mod space;
pub mod spec;
mod teardown;
mod tree;

#[cfg(loom)]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use database::{CapDatabase, Capability, SpaceObjects};
pub use error::CapError;
pub use exchange::{DelegateOffer, Narrowing};
pub use ids::{CapId, ObjectId, Placement, RevokeId, RevokeScope, Slot, SpaceId};
pub use object::{GlobalKey, ObjectInfo, ObjectKind, UseSite, View};
pub use removed::{LastReference, Removed, RemovedBatch, BATCH};
pub use revoke::{RevokeStart, SweepStatus};
pub use rights::Rights;
pub use shared::{RevokeReport, SharedCaps, CAPS_LEVEL};
pub use teardown::TeardownStatus;
