//! The Linux ABI as Lamina implements it, as plain logic and data that
//! need no hardware, so that they are tested on the host (the running
//! personality that uses them is the `linux-personality` crate).
//!
//! **Provides** [`load_plan`]: what to map for a static or static-PIE
//! x86-64 ELF executable (refusing dynamically linked and malformed ones
//! with an error), and [`InitialStack`]: the bytes and pointer of the
//! stack Linux gives a new program (argc, argv, envp, auxv and the strings
//! and random bytes they point to).
//!
//! **Must never** panic on any input: a malformed executable or an
//! oversized argument list is an error value.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

mod elf_plan;
mod errno;
mod file_status;
pub mod cpu_times;
pub mod credentials;
pub mod event_counter;
pub mod flock_table;
pub mod futex;
pub mod interrupted_states;
mod initial_stack;
mod layer_errors;
pub mod line_discipline;
pub mod message_queue;
pub mod poll;
pub mod pollers;
pub mod procfs_text;
pub mod record_locks;
pub mod resource_limits;
pub mod restart;
pub mod scheduling;
pub mod address_layout;
pub mod sigevent;
pub mod signal_frame;
pub mod signalfd;
pub mod syscall_trace;
pub mod sysv_ipc;
pub mod timerfd;
pub mod vdso;
mod sysno;
mod user_values;
mod wait_status;

pub use errno::Errno;
pub use elf_plan::{interpreter_plan, interpreter_plan_at, load_plan, load_plan_at, ElfError, LoadPlan, Segment, INTERPRETER_BASE, PIE_BASE};
pub use initial_stack::{auxv, InitialStack, StackError, STACK_TOP};
pub use sysno::Sysno;
pub use user_values::{ItimerSpec, ItimerVal, Timespec, Timeval, UserValue};
pub use file_status::{makedev, DirentFormat, FileStatus, Timestamp, STATX_BASIC_STATS, STATX_BYTES, STAT_BYTES};
pub use wait_status::{child_codes, WaitStatus};

#[cfg(test)]
mod tests;
#[cfg(all(test, loom))]
mod futex_loom;
#[cfg(all(test, loom))]
mod pollers_loom;
