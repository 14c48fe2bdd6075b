//! Device drivers: what the kernel drives over PCI: virtio block disks
//! and a virtio network card.
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

mod bring_up;
mod dma;
mod pci_access;
mod registry;
mod virtio_block;
mod virtio_net;

pub use registry::{block_devices, network_card, probe};
pub use bring_up::StartError;
pub use virtio_block::{BlockIoError, VirtioBlock, SECTOR_BYTES};
pub use virtio_net::{set_waker, VirtioNet};
