//! PCI: how a virtio function is found and described through its
//! configuration space (virtio 1.2 §4.1). Declarations only.

mod bar;
mod capabilities;
mod command;
mod config_space;
mod error;
mod identity;
mod scan;

#[cfg(test)]
mod capability_tests;
#[cfg(test)]
pub(crate) mod fake_config;
#[cfg(test)]
mod tests;

pub use bar::{probe_bar, probe_bars, Addressing, Bar, BarSlot, Bars, Prefetchable, BAR_COUNT};
pub use capabilities::{
    read_capabilities, Capabilities, MsiCapability, MsixCapability, MsixLocation, MsixState, NotifyStructure,
    StructureLocation, StructureStart, CAPABILITY_HOPS_LIMIT,
};
pub use command::{disable, enable, legacy_interrupt, Command, InterruptPin, LegacyInterrupt};
pub use config_space::{ConfigSpace, CONFIG_SPACE_SIZE};
pub use error::PciError;
pub use identity::{
    header_type, identify, DeviceType, FunctionKind, HeaderLayout, HeaderType, Identification, Interface,
    VirtioIdentity, VIRTIO_VENDOR_ID,
};
pub use scan::{scan, FoundDevice, PciAddress, PciBus};
