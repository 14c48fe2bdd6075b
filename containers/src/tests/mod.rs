//! Tests: unit tests of every refusal and of the tree's semantics,
//! refinement against `spec` on random operation sequences, and std-thread
//! stress in a normal build; loom models of the same code under
//! `--cfg loom`.

#[cfg(not(loom))]
mod errors;
#[cfg(not(loom))]
mod observe;
#[cfg(not(loom))]
mod refinement;
#[cfg(not(loom))]
mod semantics;
#[cfg(not(loom))]
mod threads;

#[cfg(loom)]
mod loom_carve;
#[cfg(loom)]
mod loom_charge;
#[cfg(loom)]
mod loom_destroy;
#[cfg(loom)]
mod loom_queries;
#[cfg(loom)]
mod loom_support;
