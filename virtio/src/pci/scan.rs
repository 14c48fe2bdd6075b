//! Bus enumeration: every bus, device and function, brute force (no bridge
//! walk), keeping the virtio functions.
//!
//! Must never: look at functions 1–7 of a device whose function 0 does not
//! say it is multi-function (single-function devices may answer on all
//! eight with copies of function 0).

use super::identity::{header_type, identify, FunctionKind, Identification, VirtioIdentity};
use super::ConfigSpace;
use alloc::vec::Vec;

const DEVICES_PER_BUS: u8 = 32;
const FUNCTIONS_PER_DEVICE: u8 = 8;

/// A function's place on the PCI buses.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub struct PciAddress {
    bus: u8,
    device: u8,
    function: u8,
}

impl PciAddress {
    /// The address, if `device` is below 32 and `function` below 8.
    pub fn new(bus: u8, device: u8, function: u8) -> Option<Self> {
        match device < DEVICES_PER_BUS && function < FUNCTIONS_PER_DEVICE {
            true => Some(Self { bus, device, function }),
            false => None,
        }
    }

    /// The bus number.
    pub fn bus(&self) -> u8 {
        self.bus
    }

    /// The device number (below 32).
    pub fn device(&self) -> u8 {
        self.device
    }

    /// The function number (below 8).
    pub fn function(&self) -> u8 {
        self.function
    }
}

/// The kernel's way to the configuration space of any function.
pub trait PciBus {
    /// One function's configuration space (may borrow the bus).
    type Function<'a>: ConfigSpace
    where
        Self: 'a;

    /// The configuration space at `address`.
    fn function(&self, address: PciAddress) -> Self::Function<'_>;
}

/// A virtio function found by [`scan`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FoundDevice {
    /// Where it is.
    pub address: PciAddress,
    /// What it is.
    pub identity: VirtioIdentity,
}

/// Finds every virtio function on buses 0 to 255, in address order.
pub fn scan(bus: &impl PciBus) -> Vec<FoundDevice> {
    let mut found = Vec::new();
    for bus_number in 0..=u8::MAX {
        for device in 0..DEVICES_PER_BUS {
            scan_device(bus, bus_number, device, &mut found);
        }
    }
    found
}

fn scan_device(bus: &impl PciBus, bus_number: u8, device: u8, found: &mut Vec<FoundDevice>) {
    for function in 0..FUNCTIONS_PER_DEVICE {
        let Some(address) = PciAddress::new(bus_number, device, function) else {
            return;
        };
        let config = bus.function(address);
        match identify(&config) {
            Identification::Absent if function == 0 => return,
            Identification::Virtio(identity) => found.push(FoundDevice { address, identity }),
            _ => {}
        }
        if function == 0 && header_type(&config).functions == FunctionKind::Single {
            return;
        }
    }
}
