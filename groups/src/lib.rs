//! CPU groups: the multikernel's partition of the machine (issue 20,
//! docs/multikernel.md "Groups").
//!
//! With `groups=N` on the kernel command line Lamina runs N kernel
//! instances. Each owns a contiguous run of CPUs ([`GroupLayout`]), a
//! share of the free physical memory ([`partition_ranges`]) and the
//! processes placed in it ([`choose_group`]); the instances' capability
//! databases talk only through message channels
//! (`caps::distributed`). This crate is the arithmetic of that partition
//! and the placement policy, as plain functions the kernel calls and the
//! host tests check against the executable specification in [`spec`].
//!
//! **Must never** touch hardware, allocate in the kernel's hot paths, use
//! `unsafe`, or panic on anything a caller passes (a bad option or layout
//! is an error value).
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod layout;
mod memory;
mod options;
mod placement;
pub mod spec;

pub use layout::{GroupLayout, LayoutError, MAX_CPUS};
pub use memory::{partition_ranges, FrameSpan};
pub use options::{parse_options, GroupOptions, OptionError};
pub use placement::{choose_group, Policy};
