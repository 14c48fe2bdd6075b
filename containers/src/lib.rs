//! Layer 2 of Lamina: quota containers (mC2/CertiKOS's containers, after
//! HiStar's).
//!
//! **Provides** [`Containers`]: a tree of page quotas. The root holds the
//! machine's pages; [`create_child`](Containers::create_child) carves a
//! child's quota out of its parent's, [`charge`](Containers::charge) and
//! [`release`](Containers::release) count the pages a container uses
//! against its own quota, and [`destroy`](Containers::destroy) gives the
//! unused part of a leaf's quota back to its parent. Pages a destroyed
//! container still has charged stay charged, now counted by its parent,
//! until they are released through the dead id (its tombstone forwards the
//! release to the nearest live ancestor). A [`ContainerId`] is an arena
//! index plus a generation, so a stale id is an error value, never a panic
//! and never another container.
//!
//! Charges and releases come from every CPU at once, so they take no lock:
//! each container's usage is one atomic word updated by a compare-and-swap
//! loop that never lets usage pass the quota. Changes to the tree's shape
//! (create, destroy) take the tree lock at [`CONTAINERS_LEVEL`]; carving a
//! child's quota is itself such a compare-and-swap on the parent's word, so
//! it can never oversubscribe the parent against racing charges.
//!
//! Everything refines the atomic specification in [`spec`]: host tests run
//! random operation sequences against both and compare every result and
//! every observable, std threads stress the conservation of pages, and loom
//! model-checks this very code under `--cfg loom`.
//!
//! **Relies on** the spinlock layer for the tree lock, a ticket lock that
//! behaves as the environment says ([`TreeLocking`]: the kernel's guard
//! policy and per-CPU lock-order store, std threads on the host, loom), and
//! on the heap once, at construction, for the fixed table of containers.
//!
//! **Must never** touch hardware or frames (it only counts pages; the frame
//! allocator hands them out), use `unsafe`, allocate after construction,
//! call a layer above, or panic on anything a caller passes: every refusal
//! is a [`QuotaError`] and leaves every count as it was.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(any(test, loom, feature = "std"))]
extern crate std;

mod charging;
mod container_id;
mod containers;
mod counters;
mod error;
mod free_slots;
mod shape;
pub mod spec;
#[cfg(any(test, feature = "std"))]
mod std_locking;
mod sync;
mod tree_changes;
mod tree_lock;
mod usage_word;

#[cfg(test)]
mod tests;

pub use container_id::ContainerId;
#[cfg(any(test, feature = "std"))]
pub use containers::StdContainers;
pub use containers::{Containers, DEFAULT_CAPACITY, MAX_CAPACITY};
pub use error::QuotaError;
#[cfg(any(test, feature = "std"))]
pub use std_locking::StdLocking;
pub use tree_changes::Destroyed;
pub use tree_lock::{Spinning, TreeGuard, TreeLock, TreeLocking, CONTAINERS_LEVEL};
pub use usage_word::MAX_PAGES;
