//! Lamina's threads layer (mC2's "threads" layer).
//!
//! Provides kernel threads with per-CPU scheduling: each CPU runs threads
//! from its own ReadyQ; other CPUs hand it woken threads through its PendQ
//! and an IPI when it is idle. Threads yield, park (block until woken) and
//! wake each other; the LAPIC timer preempts; each CPU has an idle thread
//! that halts. Threads can be pinned to a CPU or migrated.
//!
//! Relies on the machine layer for context switching, per-CPU identity,
//! IPIs and the timer, on the spinlock layer for its queue locks and on the
//! frame layer (through the kernel) for stacks. Must never contain
//! `unsafe`, and never hold a queue lock across a context switch.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

#[macro_use]
mod atomics;
pub mod idle_flag;
pub mod kick_flag;
pub mod park_permit;
pub mod pending_hint;
pub mod placement;
pub mod queues;
pub mod sleep_list;
pub mod thread_end;
pub mod tick_plan;

#[cfg(test)]
mod tests;
pub mod spec;

#[cfg(target_os = "none")]
mod kernel;
#[cfg(target_os = "none")]
pub use kernel::scheduler::{
    cpu_time_of, current, current_is_injectable, enable_preemption, exit, idle_loop, init_cpu, kick, migrate_current, own_cpu_time, park, place, set_allowed, set_domain, spawn, spawn_in, spawn_on,
    spawn_here_allowed, spawn_placed, switch_count, threads_taken, unpark, unpark_and_park, wake_ipis_taken, yield_now, Pinning, SpawnError,
};
#[cfg(target_os = "none")]
pub use kernel::sleepers::{sleep_until, wake_every_sleeper, Woken};
#[cfg(target_os = "none")]
pub use kernel::stacks::{release_spare_stacks, StackSource, SPARE_STACKS, THREAD_PAGES};
#[cfg(target_os = "none")]
pub use kernel::report::{report, CpuReport, QueueContents, ThreadSummary};
#[cfg(target_os = "none")]
pub use kernel::thread::Thread;
#[cfg(target_os = "none")]
pub use kernel::cpu_work::run_everywhere;
pub use park_permit::ParkState;
