//! Model checks of the threads layer's handshakes (`--cfg loom`): the very
//! code the kernel runs, with loom's threads as CPUs.

#[cfg(loom)]
mod loom_clock_set;
#[cfg(loom)]
mod loom_idle;
#[cfg(loom)]
mod loom_kick;
#[cfg(loom)]
mod loom_park;
#[cfg(loom)]
mod loom_sleepers;
#[cfg(loom)]
mod loom_steal;
#[cfg(loom)]
mod loom_support;
#[cfg(loom)]
mod loom_thread_end;
