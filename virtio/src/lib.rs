//! virtio over PCI as host-tested logic (virtio 1.2; the legacy interface
//! of virtio 0.9.5 for transitional devices).
//!
//! **Provides** device discovery from PCI configuration space ([`pci`]:
//! identity, BARs, the capability list, a bus scan); the two register
//! layouts behind one [`transport::Transport`] trait and the initialization
//! sequence ([`transport`]); the split virtqueue as a data structure over
//! DMA memory ([`queue`]); the block device's requests, configuration and
//! completions ([`block`]); the network device's packet slots ([`net`]).
//!
//! **Relies on** the kernel for every hardware access, through small traits:
//! [`pci::ConfigSpace`] and [`pci::PciBus`] (configuration space through
//! ports 0xCF8/0xCFC), [`transport::Registers`] (I/O ports for the legacy
//! interface, MMIO for the modern one) and [`queue::DmaMemory`] (physical
//! frames through the direct map, volatile accesses, and the memory
//! barriers named by [`queue::Barrier`]). Host tests implement all of them
//! over plain memory, with fake devices on the other side.
//!
//! **Must never** touch hardware itself, or panic on anything a device or
//! its configuration space can say: looping or out-of-range capability
//! lists, odd BARs, bogus used-ring ids, lengths and indices, unknown
//! status bytes all become error values; arithmetic on such values is
//! checked.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod block;
pub mod net;
pub mod pci;
pub mod queue;
#[cfg(test)]
mod testing;
pub mod transport;
