//! virtio over PCI (skeleton: being written).
#![no_std]
#![forbid(unsafe_code)]
