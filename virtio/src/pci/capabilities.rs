//! The capability list: the virtio structures (virtio 1.2 §4.1.4: common,
//! notify, ISR, device and PCI-access configuration) and the MSI and MSI-X
//! capabilities, found by a bounded walk.
//!
//! Must never: follow more than [`CAPABILITY_HOPS_LIMIT`] pointers, read a
//! capability that points into the header or runs past the 256 bytes of
//! configuration space, or use a virtio capability shorter than its type
//! needs. Reserved `cfg_type` and BAR values are ignored (§4.1.4).

use super::bar::{Bar, Bars};
use super::{ConfigSpace, PciError, CONFIG_SPACE_SIZE};

/// At most (256 − 64) / 4 capabilities fit after the header: a longer walk
/// is a loop.
pub const CAPABILITY_HOPS_LIMIT: usize = 48;

const STATUS: u16 = 0x06;
const STATUS_CAPABILITY_LIST: u16 = 0x10;
const CAPABILITY_POINTER: u16 = 0x34;
const FIRST_CAPABILITY: u8 = 0x40;
/// Capability pointers' low two bits are reserved (PCI 3.0 §6.7).
const POINTER_MASK: u8 = !0x3;

const ID_MSI: u8 = 0x05;
const ID_VENDOR: u8 = 0x09;
const ID_MSIX: u8 = 0x11;

const VIRTIO_COMMON: u8 = 1;
const VIRTIO_NOTIFY: u8 = 2;
const VIRTIO_ISR: u8 = 3;
const VIRTIO_DEVICE: u8 = 4;
const VIRTIO_PCI_ACCESS: u8 = 5;
/// `struct virtio_pci_cap` and, for notify, its multiplier after it.
const VIRTIO_CAP_LENGTH: u8 = 16;
const VIRTIO_NOTIFY_CAP_LENGTH: u8 = 20;
const MSIX_CAP_LENGTH: u16 = 12;
const MSI_CAP_LENGTH: u16 = 4;
const LAST_BAR: u8 = 5;
const MSIX_TABLE_SIZE_MASK: u16 = 0x7FF;
const MSIX_ENABLE: u16 = 0x8000;
const MSIX_BIR_MASK: u32 = 0x7;

/// Where a virtio structure lives: `length` bytes at `offset` in BAR `bar`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct StructureLocation {
    /// The BAR index (0 to 5).
    pub bar: u8,
    /// The offset inside the BAR.
    pub offset: u32,
    /// The structure's length in bytes.
    pub length: u32,
}

impl StructureLocation {
    /// The BAR holding the structure, checked to hold all of it.
    pub fn bar_in(&self, bars: &Bars) -> Result<Bar, PciError> {
        match bars.get(self.bar) {
            Some(bar) if bar.holds(self.offset, self.length) => Ok(bar),
            _ => Err(PciError::StructureOutsideBar { bar: self.bar }),
        }
    }

    /// Where the structure starts: the BAR's base plus the offset, checked
    /// to lie inside the BAR.
    pub fn start_in(&self, bars: &Bars) -> Result<StructureStart, PciError> {
        let outside = PciError::StructureOutsideBar { bar: self.bar };
        match self.bar_in(bars)? {
            Bar::Io { port, .. } => {
                let start = u32::from(port).checked_add(self.offset).ok_or(outside)?;
                u16::try_from(start)
                    .map(|port| StructureStart::Io { port })
                    .map_err(|_| outside)
            }
            Bar::Memory { address, .. } => {
                let physical = address.checked_add(u64::from(self.offset)).ok_or(outside)?;
                Ok(StructureStart::Memory { physical })
            }
        }
    }
}

/// The first register of a structure, in the space its BAR decodes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StructureStart {
    /// An I/O port.
    Io {
        /// The port.
        port: u16,
    },
    /// A physical address (to be mapped uncached).
    Memory {
        /// The address.
        physical: u64,
    },
}

/// The notification structure: queue `q`'s doorbell is at
/// `queue_notify_off(q) × offset_multiplier` inside it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NotifyStructure {
    /// Where the structure lives.
    pub location: StructureLocation,
    /// `notify_off_multiplier`.
    pub offset_multiplier: u32,
}

/// The MSI capability (reported; this crate does not program it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MsiCapability {
    /// Where it starts in configuration space.
    pub offset: u8,
    /// Its message control register.
    pub control: u16,
}

/// Where an MSI-X table or pending-bit array lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MsixLocation {
    /// The BAR index (the BIR field; may be a reserved value 6 or 7).
    pub bar: u8,
    /// The offset inside the BAR (8-aligned).
    pub offset: u32,
}

/// Whether a function signals through MSI-X (which also moves the legacy
/// virtio device configuration from 0x14 to 0x18).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MsixState {
    /// MSI-X is off: INTx (or MSI) is used.
    Disabled,
    /// MSI-X is on.
    Enabled,
}

/// The MSI-X capability (reported; this crate does not program it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MsixCapability {
    /// Where it starts in configuration space.
    pub offset: u8,
    /// How many vectors the table has (1 to 2048).
    pub table_size: u16,
    /// Whether MSI-X is enabled now (the legacy virtio device
    /// configuration moves to 0x18 when it is).
    pub state: MsixState,
    /// The vector table.
    pub table: MsixLocation,
    /// The pending-bit array.
    pub pending_bits: MsixLocation,
}

/// What the capability list says (the first instance of each virtio
/// structure, as §4.1.4 recommends).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Capabilities {
    /// `VIRTIO_PCI_CAP_COMMON_CFG`.
    pub common: Option<StructureLocation>,
    /// `VIRTIO_PCI_CAP_NOTIFY_CFG`.
    pub notify: Option<NotifyStructure>,
    /// `VIRTIO_PCI_CAP_ISR_CFG`.
    pub isr: Option<StructureLocation>,
    /// `VIRTIO_PCI_CAP_DEVICE_CFG`.
    pub device: Option<StructureLocation>,
    /// Where `VIRTIO_PCI_CAP_PCI_CFG` starts in configuration space.
    pub pci_access: Option<u8>,
    /// The MSI capability.
    pub msi: Option<MsiCapability>,
    /// The MSI-X capability.
    pub msix: Option<MsixCapability>,
}

impl Capabilities {
    /// Whether the modern interface is complete (common, notify and ISR).
    pub fn has_modern_interface(&self) -> bool {
        self.common.is_some() && self.notify.is_some() && self.isr.is_some()
    }
}

/// Walks the capability list.
pub fn read_capabilities(config: &impl ConfigSpace) -> Result<Capabilities, PciError> {
    let mut found = Capabilities::default();
    if config.read_u16(STATUS) & STATUS_CAPABILITY_LIST == 0 {
        return Ok(found);
    }
    let mut pointer = config.read_u8(CAPABILITY_POINTER) & POINTER_MASK;
    let mut hops = 0;
    while pointer != 0 {
        hops += 1;
        if hops > CAPABILITY_HOPS_LIMIT {
            return Err(PciError::CapabilityListLoops);
        }
        if pointer < FIRST_CAPABILITY {
            return Err(PciError::CapabilityPointerInHeader { pointer });
        }
        record(config, pointer, &mut found)?;
        pointer = config.read_u8(u16::from(pointer) + 1) & POINTER_MASK;
    }
    Ok(found)
}

/// Checks that `length` bytes from `offset` fit in configuration space.
fn fits(offset: u8, length: u16) -> Result<u16, PciError> {
    let start = u16::from(offset);
    match start + length <= CONFIG_SPACE_SIZE {
        true => Ok(start),
        false => Err(PciError::CapabilityPastConfigSpace { offset, length }),
    }
}

fn record(config: &impl ConfigSpace, offset: u8, found: &mut Capabilities) -> Result<(), PciError> {
    match config.read_u8(u16::from(offset)) {
        ID_VENDOR => record_virtio(config, offset, found),
        ID_MSI => {
            let start = fits(offset, MSI_CAP_LENGTH)?;
            let control = config.read_u16(start + 2);
            found.msi.get_or_insert(MsiCapability { offset, control });
            Ok(())
        }
        ID_MSIX => {
            let msix = read_msix(config, offset)?;
            found.msix.get_or_insert(msix);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn read_msix(config: &impl ConfigSpace, offset: u8) -> Result<MsixCapability, PciError> {
    let start = fits(offset, MSIX_CAP_LENGTH)?;
    let control = config.read_u16(start + 2);
    let location = |raw: u32| MsixLocation {
        bar: (raw & MSIX_BIR_MASK) as u8,
        offset: raw & !MSIX_BIR_MASK,
    };
    Ok(MsixCapability {
        offset,
        table_size: (control & MSIX_TABLE_SIZE_MASK) + 1,
        state: match control & MSIX_ENABLE {
            0 => MsixState::Disabled,
            _ => MsixState::Enabled,
        },
        table: location(config.read_u32(start + 4)),
        pending_bits: location(config.read_u32(start + 8)),
    })
}

fn record_virtio(config: &impl ConfigSpace, offset: u8, found: &mut Capabilities) -> Result<(), PciError> {
    let start = u16::from(offset);
    // The first dword always fits: offsets are at most 0xFC.
    let length = config.read_u8(start + 2);
    let cfg_type = config.read_u8(start + 3);
    if !(VIRTIO_COMMON..=VIRTIO_PCI_ACCESS).contains(&cfg_type) {
        return Ok(());
    }
    let needed = match cfg_type {
        VIRTIO_NOTIFY => VIRTIO_NOTIFY_CAP_LENGTH,
        _ => VIRTIO_CAP_LENGTH,
    };
    if length < needed {
        return Err(PciError::VirtioCapabilityTooShort { offset, length });
    }
    fits(offset, u16::from(length))?;
    let bar = config.read_u8(start + 4);
    if bar > LAST_BAR {
        return Ok(());
    }
    let location = StructureLocation {
        bar,
        offset: config.read_u32(start + 8),
        length: config.read_u32(start + 12),
    };
    if location.offset.checked_add(location.length).is_none() {
        return Err(PciError::StructureOverflows { offset });
    }
    match cfg_type {
        VIRTIO_COMMON => _ = found.common.get_or_insert(location),
        VIRTIO_NOTIFY => {
            let offset_multiplier = config.read_u32(start + 16);
            found.notify.get_or_insert(NotifyStructure {
                location,
                offset_multiplier,
            });
        }
        VIRTIO_ISR => _ = found.isr.get_or_insert(location),
        VIRTIO_DEVICE => _ = found.device.get_or_insert(location),
        _ => _ = found.pci_access.get_or_insert(offset),
    }
    Ok(())
}
