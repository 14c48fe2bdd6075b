//! What every virtio device's start shares: finding its modern interface's
//! structures in its BARs, and the errors of a start.
//!
//! Must never hand out a structure outside a mapped BAR.

use machine::pci::PciFunction;
use virtio::pci::{read_capabilities, Command, StructureLocation};
use virtio::transport::{ModernTransport, NotifyRegion, Region};

use crate::pci_access::{Config, StructureRegisters};

/// Why a device could not be started (it is then left alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartError {
    /// No modern interface (a legacy-only device): not supported yet.
    NoModernInterface,
    /// A structure lies outside a mapped BAR.
    BadStructure,
    /// The device refused initialization or a queue.
    Refused,
    /// No frame for the rings or buffers.
    OutOfMemory,
}

/// The modern transport of the virtio device at `function`, with memory
/// space and bus mastering enabled.
pub fn modern_transport(function: &PciFunction) -> Result<ModernTransport<StructureRegisters>, StartError> {
    let config = Config(function);
    let capabilities = read_capabilities(&config).map_err(|_| StartError::NoModernInterface)?;
    let (Some(common), Some(notify), Some(isr)) = (capabilities.common, capabilities.notify, capabilities.isr) else {
        return Err(StartError::NoModernInterface);
    };
    let region = |location: StructureLocation| structure(function, location).ok_or(StartError::BadStructure);
    let device = capabilities.device.map(region).transpose()?;
    let notify_region = NotifyRegion { region: region(notify.location)?, offset_multiplier: notify.offset_multiplier };
    let transport = ModernTransport::new(region(common)?, notify_region, region(isr)?, device).map_err(|_| StartError::BadStructure)?;
    virtio::pci::enable(&config, Command::MEMORY_SPACE | Command::BUS_MASTER);
    Ok(transport)
}

/// The registers of the structure at `location`, in its BAR's window.
fn structure(function: &PciFunction, location: StructureLocation) -> Option<Region<StructureRegisters>> {
    let bar = usize::from(location.bar);
    let registers = if let Some(window) = function.memory_window(bar) {
        StructureRegisters::Memory { window, start: u64::from(location.offset), length: location.length }
    } else {
        let window = function.io_window(bar)?;
        StructureRegisters::Ports { window, start: u16::try_from(location.offset).ok()?, length: location.length }
    };
    Some(Region { registers, length: location.length })
}
