//! Device drivers: what the kernel drives over PCI, today virtio block
//! disks (network cards arrive here with issue 19).
//!
//! **Provides** [`probe`], which finds and starts the disks once at boot,
//! and [`block_devices`], each a [`VirtioBlock`] that reads, writes and
//! flushes whole sectors, many requests in flight, completed by interrupt.
//!
//! **Relies on** `virtio` for the protocol (a plain data structure, tested
//! on the host), the machine layer's PCI windows and interrupt routing,
//! `kernel-objects`' DMA frames, and the scheduler to park a requester
//! until its completion's interrupt unparks it.
//!
//! **Must never** panic on what a device says (its answers are checked by
//! `virtio`; a broken queue fails requests with an error), hand a device
//! an address of memory it does not own, or block while holding a lock.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod dma;
mod pci_access;
mod registry;
mod virtio_block;

pub use registry::{block_devices, probe};
pub use virtio_block::{BlockIoError, VirtioBlock, SECTOR_BYTES};
