//! Tests of the cached allocator: units, refinement against the spec,
//! std threads, and loom models (under `--cfg loom`).

mod support;

#[cfg(not(loom))]
mod cached_refinement;
#[cfg(not(loom))]
mod cached_threads;
#[cfg(not(loom))]
mod cached_units;
#[cfg(loom)]
mod loom_cached;
