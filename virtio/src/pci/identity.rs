//! Who a PCI function is: vendor and device id, header type, and for a
//! virtio function its device type and whether it also speaks the legacy
//! interface (virtio 1.2 §4.1.2).
//!
//! Must never: take a function of another vendor, or a non-general header,
//! for a virtio device.

use super::ConfigSpace;

/// The vendor id of every virtio PCI function (Red Hat, Inc.).
pub const VIRTIO_VENDOR_ID: u16 = 0x1AF4;

const VENDOR_ID: u16 = 0x00;
const DEVICE_ID: u16 = 0x02;
const REVISION_ID: u16 = 0x08;
const HEADER_TYPE: u16 = 0x0E;
const SUBSYSTEM_ID: u16 = 0x2E;

/// What a vendor id of all ones means: no function answers here.
const NO_FUNCTION: u16 = 0xFFFF;
/// Transitional devices (legacy and modern interfaces) use these ids; the
/// subsystem id says the device type.
const TRANSITIONAL_IDS: core::ops::RangeInclusive<u16> = 0x1000..=0x103F;
/// Modern-only devices use 0x1040 plus the device type.
const MODERN_BASE: u16 = 0x1040;
const MODERN_IDS: core::ops::RangeInclusive<u16> = MODERN_BASE..=0x107F;

const MULTI_FUNCTION_BIT: u8 = 0x80;
const LAYOUT_MASK: u8 = 0x7F;

/// The virtio device types this kernel knows by name (virtio 1.2 §5).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DeviceType {
    /// Type 1: network card.
    Network,
    /// Type 2: block device.
    Block,
    /// Type 3: console.
    Console,
    /// Any other type number.
    Other(u16),
}

impl DeviceType {
    /// The type for its number.
    pub fn from_number(number: u16) -> Self {
        match number {
            1 => Self::Network,
            2 => Self::Block,
            3 => Self::Console,
            other => Self::Other(other),
        }
    }
}

/// Which register interfaces a virtio function offers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Interface {
    /// Transitional: the legacy I/O BAR 0 and (usually) the modern
    /// capabilities as well.
    Transitional,
    /// Modern only: the capabilities, no legacy registers.
    Modern,
}

/// A virtio function's identity.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VirtioIdentity {
    /// The PCI device id.
    pub device_id: u16,
    /// Which interfaces it offers.
    pub interface: Interface,
    /// What it is.
    pub device_type: DeviceType,
    /// The PCI revision id (1 or more for modern-only devices).
    pub revision: u8,
}

/// What answered at a configuration address.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Identification {
    /// Nothing: the vendor id reads all ones.
    Absent,
    /// A function that is not a virtio device.
    NotVirtio {
        /// Its vendor id.
        vendor: u16,
        /// Its device id.
        device: u16,
    },
    /// A virtio device.
    Virtio(VirtioIdentity),
}

/// The register layout a header type names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HeaderLayout {
    /// Type 0: an endpoint with six BARs.
    General,
    /// Type 1: a PCI-to-PCI bridge.
    Bridge,
    /// Type 2: a CardBus bridge.
    CardBus,
    /// A reserved type number.
    Reserved(u8),
}

/// Whether a device has functions beyond function 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FunctionKind {
    /// Only function 0 exists.
    Single,
    /// Functions 1 to 7 may exist too.
    MultiFunction,
}

/// The header type register, decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HeaderType {
    /// The register layout from offset 0x10 on.
    pub layout: HeaderLayout,
    /// Whether the device has more functions (meaningful on function 0).
    pub functions: FunctionKind,
}

/// Reads the header type register.
pub fn header_type(config: &impl ConfigSpace) -> HeaderType {
    let raw = config.read_u8(HEADER_TYPE);
    let layout = match raw & LAYOUT_MASK {
        0 => HeaderLayout::General,
        1 => HeaderLayout::Bridge,
        2 => HeaderLayout::CardBus,
        other => HeaderLayout::Reserved(other),
    };
    let functions = if raw & MULTI_FUNCTION_BIT != 0 {
        FunctionKind::MultiFunction
    } else {
        FunctionKind::Single
    };
    HeaderType { layout, functions }
}

/// Says what answers at this function's configuration space.
pub fn identify(config: &impl ConfigSpace) -> Identification {
    let vendor = config.read_u16(VENDOR_ID);
    let device = config.read_u16(DEVICE_ID);
    if vendor == NO_FUNCTION {
        return Identification::Absent;
    }
    let is_general = header_type(config).layout == HeaderLayout::General;
    let interface = match device {
        _ if vendor != VIRTIO_VENDOR_ID || !is_general => None,
        id if TRANSITIONAL_IDS.contains(&id) => Some(Interface::Transitional),
        id if MODERN_IDS.contains(&id) => Some(Interface::Modern),
        _ => None,
    };
    match interface {
        None => Identification::NotVirtio { vendor, device },
        Some(interface) => Identification::Virtio(virtio_identity(config, device, interface)),
    }
}

fn virtio_identity(config: &impl ConfigSpace, device_id: u16, interface: Interface) -> VirtioIdentity {
    let type_number = match interface {
        Interface::Transitional => config.read_u16(SUBSYSTEM_ID),
        // In range by MODERN_IDS, so this cannot underflow.
        Interface::Modern => device_id - MODERN_BASE,
    };
    VirtioIdentity {
        device_id,
        interface,
        device_type: DeviceType::from_number(type_number),
        revision: config.read_u8(REVISION_ID),
    }
}
