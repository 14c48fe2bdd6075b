//! Tests: unit, refinement (implementation against `spec`, step by step)
//! and std-thread stress tests in a normal build; loom model checking of
//! the same code under `--cfg loom`.

#[cfg(not(loom))]
mod linearize;
#[cfg(not(loom))]
mod prng;
#[cfg(not(loom))]
mod refine_bounded_queue;
#[cfg(not(loom))]
mod refine_channel;
#[cfg(not(loom))]
mod refine_condvar;
#[cfg(not(loom))]
mod refine_endpoint;
#[cfg(not(loom))]
mod units_endpoint;
#[cfg(not(loom))]
mod serial;
#[cfg(not(loom))]
mod stepped;
#[cfg(not(loom))]
mod threads_bounded_queue;
#[cfg(not(loom))]
mod threads_channel;
#[cfg(not(loom))]
mod threads_completions;
#[cfg(not(loom))]
mod threads_condvar;
#[cfg(not(loom))]
mod threads_sleep_lock;
#[cfg(not(loom))]
mod units;

#[cfg(loom)]
mod loom_bounded_queue;
#[cfg(loom)]
mod loom_channel;
#[cfg(loom)]
mod loom_completions;
#[cfg(loom)]
mod loom_condvar;
#[cfg(loom)]
mod loom_endpoint;
#[cfg(loom)]
mod loom_sleep_lock;
#[cfg(loom)]
mod loom_word_ring;
#[cfg(not(loom))]
mod threads_word_ring;
#[cfg(loom)]
mod loom_support;
