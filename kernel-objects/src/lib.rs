//! The kernel objects behind capabilities, one of each for the machine:
//! the physical frame allocator, the kernel-memory budget, the container
//! tree, user address spaces, the capability database with the processes
//! that hold capability spaces, memory objects and the native system
//! calls, and the checked copy between the kernel and a process's memory.
//! What boot established ([`SystemFacts`]) is kept here for everything
//! above.
//!
//! Sits above the layers (`frames`, `containers`, `vmem`, `sched`, `sync`,
//! `caps`, `reservations`) and below every personality: the Linux
//! personality, the in-kernel tests and the benchmarks build on it. Must
//! never contain `unsafe` code, nor know about any personality (what a
//! personality must do when a capability goes, it registers here).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod address_spaces;
pub mod allocation_failures;
pub mod capabilities;
pub mod device_memory;
pub mod group_kernels;
pub mod groups;
pub mod kernel_containers;
pub mod kernel_memory;
pub mod physical_memory;
pub mod system;
pub mod untyped_memory;
pub mod user_memory;
pub mod virtual_machines;

pub use system::SystemFacts;
pub use untyped_memory::OwnedFrame;
