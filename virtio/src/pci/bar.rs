//! Base address registers: where a function's register blocks live and how
//! big they are, found by the PCI sizing dance (write all ones, read back
//! the mask, restore) with decoding switched off meanwhile.
//!
//! Must never: leave a BAR or the command register changed, or trust a
//! BAR's type, size or address without checking (a region must not wrap).

use super::command::{read_command, write_command, Command};
use super::identity::{header_type, HeaderLayout};
use super::{ConfigSpace, PciError};

/// A general header has six BARs.
pub const BAR_COUNT: u8 = 6;

const FIRST_BAR: u16 = 0x10;
const IO_SPACE_BIT: u32 = 0x1;
const IO_ADDRESS_MASK: u32 = !0x3;
const MEMORY_ADDRESS_MASK: u32 = !0xF;
const MEMORY_TYPE_SHIFT: u32 = 1;
const MEMORY_TYPE_MASK: u32 = 0x3;
const MEMORY_TYPE_32: u32 = 0;
const MEMORY_TYPE_64: u32 = 2;
const PREFETCHABLE_BIT: u32 = 0x8;
/// x86 has 64 KiB of I/O ports.
const IO_PORT_LIMIT: u64 = 0x1_0000;

/// How wide a memory BAR's address is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Addressing {
    /// Anywhere below 4 GiB; one register.
    Bits32,
    /// Anywhere; this register and the next.
    Bits64,
}

/// Whether reads of a memory BAR have no side effects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Prefetchable {
    /// Reads may be merged and prefetched.
    Yes,
    /// Reads may have side effects.
    No,
}

/// One decoded, sized BAR.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bar {
    /// A block of I/O ports (the legacy virtio registers live in one).
    Io {
        /// The first port.
        port: u16,
        /// How many ports.
        size: u32,
    },
    /// A block of physical memory (the modern virtio structures).
    Memory {
        /// The physical address (0 if firmware left it unassigned).
        address: u64,
        /// Its size in bytes, a power of two.
        size: u64,
        /// 32- or 64-bit addressing.
        addressing: Addressing,
        /// Whether it may be prefetched.
        prefetchable: Prefetchable,
    },
}

impl Bar {
    /// The region's size in bytes.
    pub fn size(&self) -> u64 {
        match *self {
            Bar::Io { size, .. } => u64::from(size),
            Bar::Memory { size, .. } => size,
        }
    }

    /// Whether `length` bytes from `offset` lie inside the region.
    pub fn holds(&self, offset: u32, length: u32) -> bool {
        let end = u64::from(offset) + u64::from(length);
        end <= self.size()
    }
}

/// What one of the six BAR registers holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BarSlot {
    /// Not implemented (reads back no size bits).
    Unused,
    /// A region.
    Present(Bar),
    /// The upper half of the 64-bit BAR in the slot below.
    UpperHalf,
    /// Implemented but unusable.
    Invalid(PciError),
}

/// All six BARs of a general-header function.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bars {
    slots: [BarSlot; BAR_COUNT as usize],
}

impl Bars {
    /// The slot at `index`.
    pub fn slot(&self, index: u8) -> BarSlot {
        match self.slots.get(usize::from(index)) {
            Some(slot) => *slot,
            None => BarSlot::Invalid(PciError::NoSuchBar { index }),
        }
    }

    /// The region at `index`, if the slot holds one.
    pub fn get(&self, index: u8) -> Option<Bar> {
        match self.slot(index) {
            BarSlot::Present(bar) => Some(bar),
            _ => None,
        }
    }
}

/// Decodes and sizes all six BARs, with I/O and memory decoding off while
/// the registers hold all ones, and restores everything afterwards.
pub fn probe_bars(config: &impl ConfigSpace) -> Result<Bars, PciError> {
    if header_type(config).layout != HeaderLayout::General {
        return Err(PciError::NotGeneralHeader);
    }
    let command = read_command(config);
    let decoding_off = command.bits() & !(Command::IO_SPACE | Command::MEMORY_SPACE).bits();
    write_command(config, Command::from_bits(decoding_off));
    let mut slots = [BarSlot::Unused; BAR_COUNT as usize];
    let mut index = 0;
    while index < BAR_COUNT {
        index += probe_slot(config, index, &mut slots);
    }
    write_command(config, command);
    Ok(Bars { slots })
}

/// The one BAR at `index`; see [`probe_bars`].
pub fn probe_bar(config: &impl ConfigSpace, index: u8) -> Result<Bar, PciError> {
    match probe_bars(config)?.slot(index) {
        BarSlot::Present(bar) => Ok(bar),
        BarSlot::Unused => Err(PciError::BarUnused { index }),
        BarSlot::UpperHalf => Err(PciError::BarIsUpperHalf { index }),
        BarSlot::Invalid(error) => Err(error),
    }
}

/// Fills the slot at `index` (and the next one for a 64-bit BAR); returns
/// how many slots it used.
fn probe_slot(config: &impl ConfigSpace, index: u8, slots: &mut [BarSlot; BAR_COUNT as usize]) -> u8 {
    let offset = bar_offset(index);
    let (raw, mask) = size_mask(config, offset);
    if raw & IO_SPACE_BIT != 0 {
        slots[usize::from(index)] = io_bar(index, raw, mask);
        return 1;
    }
    match (raw >> MEMORY_TYPE_SHIFT) & MEMORY_TYPE_MASK {
        MEMORY_TYPE_32 => {
            slots[usize::from(index)] = memory_bar(index, u64::from(raw), u64::from(mask & MEMORY_ADDRESS_MASK));
            1
        }
        MEMORY_TYPE_64 if index + 1 < BAR_COUNT => {
            let (high, high_mask) = size_mask(config, bar_offset(index + 1));
            let address = u64::from(high) << 32 | u64::from(raw);
            let mask = u64::from(high_mask) << 32 | u64::from(mask & MEMORY_ADDRESS_MASK);
            slots[usize::from(index)] = memory_bar(index, address, mask);
            slots[usize::from(index + 1)] = BarSlot::UpperHalf;
            2
        }
        MEMORY_TYPE_64 => {
            slots[usize::from(index)] = BarSlot::Invalid(PciError::BarUpperHalfMissing { index });
            1
        }
        _ => {
            slots[usize::from(index)] = BarSlot::Invalid(PciError::BarTypeReserved { index });
            1
        }
    }
}

fn bar_offset(index: u8) -> u16 {
    FIRST_BAR + 4 * u16::from(index)
}

/// Returns the register's value and what it reads back after all ones were
/// written; the value is written back.
fn size_mask(config: &impl ConfigSpace, offset: u16) -> (u32, u32) {
    let original = config.read_u32(offset);
    config.write_u32(offset, u32::MAX);
    let mask = config.read_u32(offset);
    config.write_u32(offset, original);
    (original, mask)
}

/// The size a sizing mask says: its lowest writable address bit. A mask
/// without address bits is an unimplemented BAR.
fn size_from_mask(mask: u64) -> Option<u64> {
    1u64.checked_shl(mask.trailing_zeros())
}

fn io_bar(index: u8, raw: u32, mask: u32) -> BarSlot {
    let Some(size) = size_from_mask(u64::from(mask & IO_ADDRESS_MASK)) else {
        return BarSlot::Unused;
    };
    let port = u64::from(raw & IO_ADDRESS_MASK);
    match (u16::try_from(port), u32::try_from(size)) {
        (Ok(port), Ok(size)) if port_end(port, size) <= IO_PORT_LIMIT => BarSlot::Present(Bar::Io { port, size }),
        _ => BarSlot::Invalid(PciError::BarPastAddressSpace { index }),
    }
}

fn port_end(port: u16, size: u32) -> u64 {
    u64::from(port) + u64::from(size)
}

fn memory_bar(index: u8, raw: u64, mask: u64) -> BarSlot {
    let Some(size) = size_from_mask(mask) else {
        return BarSlot::Unused;
    };
    let address = raw & !u64::from(!MEMORY_ADDRESS_MASK);
    if address.checked_add(size).is_none() {
        return BarSlot::Invalid(PciError::BarPastAddressSpace { index });
    }
    let addressing = match (raw as u32 >> MEMORY_TYPE_SHIFT) & MEMORY_TYPE_MASK {
        MEMORY_TYPE_64 => Addressing::Bits64,
        _ => Addressing::Bits32,
    };
    let prefetchable = match raw as u32 & PREFETCHABLE_BIT {
        0 => Prefetchable::No,
        _ => Prefetchable::Yes,
    };
    BarSlot::Present(Bar::Memory {
        address,
        size,
        addressing,
        prefetchable,
    })
}
