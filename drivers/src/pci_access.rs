//! The machine layer's PCI handles seen through `virtio`'s traits:
//! configuration space, and a structure's registers in an I/O or memory
//! window.
//!
//! Must never reach past a structure: every register access is an offset
//! into it, checked against its length here and against the BAR's size by
//! the machine layer's windows. An access that fails those checks reads as
//! all ones and writes nothing (a device that moved or lied).

use machine::pci::{IoWindow, MemoryWindow, PciFunction};
use virtio::pci::ConfigSpace;
use virtio::transport::RegistersByWidth;

/// One function's configuration space. Writes to the registers the machine
/// layer keeps (the BARs) are dropped: BARs are sized and placed at boot.
pub struct Config<'a>(pub &'a PciFunction);

impl ConfigSpace for Config<'_> {
    fn read_u32(&self, offset: u16) -> u32 {
        u8::try_from(offset).map_or(u32::MAX, |offset| self.0.read_config_u32(offset))
    }

    fn write_u32(&self, offset: u16, value: u32) {
        if let Ok(offset) = u8::try_from(offset) {
            let _ = self.0.write_config_u32(offset, value);
        }
    }
}

/// A structure's registers: `length` bytes from `start` in a BAR's window.
pub enum StructureRegisters {
    /// In I/O space.
    Ports { window: IoWindow, start: u16, length: u32 },
    /// In memory, mapped uncached.
    Memory { window: MemoryWindow, start: u64, length: u32 },
}

impl StructureRegisters {
    fn inside(&self, offset: u32, width: u32) -> bool {
        let length = match self {
            Self::Ports { length, .. } | Self::Memory { length, .. } => *length,
        };
        offset.checked_add(width).is_some_and(|end| end <= length)
    }

    fn read(&self, offset: u32, width: u32) -> u32 {
        if !self.inside(offset, width) {
            return u32::MAX;
        }
        let value = match self {
            Self::Ports { window, start, .. } => {
                let port = start.wrapping_add(offset as u16);
                match width {
                    1 => window.read_u8(port).map(u32::from),
                    2 => window.read_u16(port).map(u32::from),
                    _ => window.read_u32(port),
                }
            }
            Self::Memory { window, start, .. } => {
                let at = start + u64::from(offset);
                match width {
                    1 => window.read_u8(at).map(u32::from),
                    2 => window.read_u16(at).map(u32::from),
                    _ => window.read_u32(at),
                }
            }
        };
        value.unwrap_or(u32::MAX)
    }

    fn write(&self, offset: u32, width: u32, value: u32) {
        if !self.inside(offset, width) {
            return;
        }
        let _ = match self {
            Self::Ports { window, start, .. } => {
                let port = start.wrapping_add(offset as u16);
                match width {
                    1 => window.write_u8(port, value as u8),
                    2 => window.write_u16(port, value as u16),
                    _ => window.write_u32(port, value),
                }
            }
            Self::Memory { window, start, .. } => {
                let at = start + u64::from(offset);
                match width {
                    1 => window.write_u8(at, value as u8),
                    2 => window.write_u16(at, value as u16),
                    _ => window.write_u32(at, value),
                }
            }
        };
    }
}

impl RegistersByWidth for StructureRegisters {
    fn read_width(&self, offset: u32, width: u32) -> u32 {
        self.read(offset, width)
    }

    fn write_width(&self, offset: u32, width: u32, value: u32) {
        self.write(offset, width, value);
    }
}
