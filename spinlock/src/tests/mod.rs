//! Tests: host refinement and thread tests in a normal build, model
//! checking of the same code under `--cfg loom`.

mod support;

#[cfg(not(loom))]
mod big_lock;
#[cfg(not(loom))]
mod guard_policy;
#[cfg(not(loom))]
mod lock_order;
#[cfg(not(loom))]
mod refinement;
#[cfg(not(loom))]
mod threads;

#[cfg(loom)]
mod loom_big_lock;
#[cfg(loom)]
mod loom_mcs;
#[cfg(loom)]
mod loom_support;
#[cfg(loom)]
mod loom_ticket;
