//! The kernel half of the threads layer (built for the kernel target only).

pub mod cpu_work;
mod lock;
pub mod report;
pub mod scheduler;
pub mod sleepers;
pub mod stacks;
pub mod thread;
pub mod trace;
