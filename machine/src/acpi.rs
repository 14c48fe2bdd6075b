//! ACPI tables: just what the machine layer needs.
//!
//! Finds the root pointer, walks the RSDT/XSDT, and reads the MADT (which
//! CPUs, I/O APICs and interrupt overrides exist), the FADT (the PM1a control
//! port) and the `\_S5` sleep type in the DSDT (for power-off). All tables
//! are untrusted bytes read through a [`PhysicalReader`]; bad checksums and
//! short tables are [`AcpiError`]s, never trusted.

extern crate alloc;
use alloc::vec::Vec;

use crate::bootinfo::{PhysicalReader, RsdpLocation};
use crate::bytes::{byte_sum, slice_at, u16_at, u32_at, u64_at, u8_at};

/// Why the ACPI tables could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcpiError {
    NoRootPointer,
    BadChecksum { signature: [u8; 4] },
    Unreadable { address: u64 },
    Truncated { signature: [u8; 4] },
    NoMadt,
}

impl core::fmt::Display for AcpiError {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NoRootPointer => write!(formatter, "no ACPI root pointer (RSDP) found"),
            Self::BadChecksum { signature } => write!(formatter, "ACPI table {} has a bad checksum", signature_text(signature)),
            Self::Unreadable { address } => write!(formatter, "ACPI table at {address:#x} is not readable"),
            Self::Truncated { signature } => write!(formatter, "ACPI table {} is truncated", signature_text(signature)),
            Self::NoMadt => write!(formatter, "no ACPI MADT (interrupt controller table)"),
        }
    }
}

fn signature_text(signature: &[u8; 4]) -> &str {
    core::str::from_utf8(signature).unwrap_or("????")
}

/// A processor the firmware lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Processor {
    pub apic_id: u32,
    pub usable: bool,
}

/// An I/O APIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoApic {
    pub id: u8,
    pub address: u64,
    pub first_interrupt: u32,
}

/// An ISA IRQ that is wired to a different global system interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterruptOverride {
    pub isa_irq: u8,
    pub global_interrupt: u32,
    pub flags: u16,
}

/// What the machine layer learns from ACPI.
#[derive(Debug, Clone, Default)]
pub struct AcpiInformation {
    pub local_apic_address: u64,
    pub processors: Vec<Processor>,
    pub io_apics: Vec<IoApic>,
    pub overrides: Vec<InterruptOverride>,
    pub pm1a_control_port: Option<u16>,
    pub s5_sleep_type: Option<u16>,
}

impl AcpiInformation {
    /// The global system interrupt an ISA IRQ arrives on.
    pub fn global_interrupt_for_isa(&self, isa_irq: u8) -> u32 {
        self.overrides
            .iter()
            .find(|entry| entry.isa_irq == isa_irq)
            .map_or(u32::from(isa_irq), |entry| entry.global_interrupt)
    }
}

const RSDP_SIGNATURE: &[u8; 8] = b"RSD PTR ";
const HEADER_LENGTH: usize = 36;
const MAX_TABLE_LENGTH: usize = 1 << 20;

/// Finds and parses all tables, starting from where the loader says the
/// RSDP is (or the BIOS area when it says nothing).
pub fn parse(memory: &dyn PhysicalReader, rsdp: RsdpLocation) -> Result<AcpiInformation, AcpiError> {
    let root = match rsdp {
        RsdpLocation::Copied { bytes, length } => parse_rsdp(&bytes[..length])?,
        RsdpLocation::Physical(address) => {
            parse_rsdp(memory.read(address, 36).or_else(|| memory.read(address, 20)).ok_or(AcpiError::NoRootPointer)?)?
        }
        RsdpLocation::Unknown => search_bios_area(memory)?,
    };
    let tables = root_table_entries(memory, root)?;
    let mut information = AcpiInformation::default();
    let mut saw_madt = false;
    for address in tables {
        let Ok(table) = read_table(memory, address) else { continue };
        match &table[..4] {
            b"APIC" => {
                parse_madt(table, &mut information)?;
                saw_madt = true;
            }
            b"FACP" => parse_fadt(memory, table, &mut information),
            _ => {}
        }
    }
    if !saw_madt {
        return Err(AcpiError::NoMadt);
    }
    Ok(information)
}

/// The root table: the XSDT (64-bit entries) or the RSDT (32-bit entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootTable {
    Rsdt(u64),
    Xsdt(u64),
}

fn parse_rsdp(bytes: &[u8]) -> Result<RootTable, AcpiError> {
    let first = slice_at(bytes, 0, 20).ok_or(AcpiError::NoRootPointer)?;
    if &first[..8] != RSDP_SIGNATURE {
        return Err(AcpiError::NoRootPointer);
    }
    if byte_sum(first) != 0 {
        return Err(AcpiError::BadChecksum { signature: *b"RSDP" });
    }
    let revision = first[15];
    if revision >= 2 {
        let whole = slice_at(bytes, 0, 36).ok_or(AcpiError::Truncated { signature: *b"RSDP" })?;
        let xsdt = u64_at(whole, 24).unwrap_or(0);
        if byte_sum(whole) == 0 && xsdt != 0 {
            return Ok(RootTable::Xsdt(xsdt));
        }
    }
    Ok(RootTable::Rsdt(u64::from(u32_at(first, 16).unwrap_or(0))))
}

fn search_bios_area(memory: &dyn PhysicalReader) -> Result<RootTable, AcpiError> {
    let area = memory.read(0xE0000, 0x20000).ok_or(AcpiError::NoRootPointer)?;
    (0..area.len() - 20)
        .step_by(16)
        .filter(|offset| &area[*offset..*offset + 8] == RSDP_SIGNATURE)
        .find_map(|offset| parse_rsdp(&area[offset..area.len().min(offset + 36)]).ok())
        .ok_or(AcpiError::NoRootPointer)
}

fn read_table(memory: &dyn PhysicalReader, address: u64) -> Result<&[u8], AcpiError> {
    let header = memory.read(address, HEADER_LENGTH).ok_or(AcpiError::Unreadable { address })?;
    let signature: [u8; 4] = header[..4].try_into().unwrap_or([b'?'; 4]);
    let length = u32_at(header, 4).unwrap_or(0) as usize;
    if !(HEADER_LENGTH..=MAX_TABLE_LENGTH).contains(&length) {
        return Err(AcpiError::Truncated { signature });
    }
    let table = memory.read(address, length).ok_or(AcpiError::Unreadable { address })?;
    if byte_sum(table) != 0 {
        return Err(AcpiError::BadChecksum { signature });
    }
    Ok(table)
}

fn root_table_entries(memory: &dyn PhysicalReader, root: RootTable) -> Result<Vec<u64>, AcpiError> {
    let (address, entry_size) = match root {
        RootTable::Rsdt(address) => (address, 4),
        RootTable::Xsdt(address) => (address, 8),
    };
    let table = read_table(memory, address)?;
    let entries = table[HEADER_LENGTH..]
        .chunks_exact(entry_size)
        .map(|entry| if entry_size == 4 { u64::from(u32_at(entry, 0).unwrap_or(0)) } else { u64_at(entry, 0).unwrap_or(0) })
        .filter(|address| *address != 0)
        .collect();
    Ok(entries)
}

const MADT_LOCAL_APIC: u8 = 0;
const MADT_IO_APIC: u8 = 1;
const MADT_INTERRUPT_OVERRIDE: u8 = 2;
const MADT_LOCAL_APIC_ADDRESS: u8 = 5;
const MADT_LOCAL_X2APIC: u8 = 9;
const MADT_ENABLED: u32 = 1 << 0;
const MADT_ONLINE_CAPABLE: u32 = 1 << 1;

fn parse_madt(table: &[u8], information: &mut AcpiInformation) -> Result<(), AcpiError> {
    let truncated = AcpiError::Truncated { signature: *b"APIC" };
    information.local_apic_address = u64::from(u32_at(table, HEADER_LENGTH).ok_or(truncated)?);
    let mut offset = HEADER_LENGTH + 8;
    while offset + 2 <= table.len() {
        let entry_type = table[offset];
        let length = usize::from(table[offset + 1]);
        let entry = slice_at(table, offset, length).filter(|_| length >= 2).ok_or(truncated)?;
        parse_madt_entry(entry_type, entry, information).ok_or(truncated)?;
        offset += length;
    }
    Ok(())
}

fn parse_madt_entry(entry_type: u8, entry: &[u8], information: &mut AcpiInformation) -> Option<()> {
    match entry_type {
        MADT_LOCAL_APIC => {
            let flags = u32_at(entry, 4)?;
            let usable = flags & (MADT_ENABLED | MADT_ONLINE_CAPABLE) != 0;
            information.processors.push(Processor { apic_id: u32::from(u8_at(entry, 3)?), usable });
        }
        MADT_LOCAL_X2APIC => {
            let flags = u32_at(entry, 8)?;
            let usable = flags & (MADT_ENABLED | MADT_ONLINE_CAPABLE) != 0;
            information.processors.push(Processor { apic_id: u32_at(entry, 4)?, usable });
        }
        MADT_IO_APIC => information.io_apics.push(IoApic {
            id: u8_at(entry, 2)?,
            address: u64::from(u32_at(entry, 4)?),
            first_interrupt: u32_at(entry, 8)?,
        }),
        MADT_INTERRUPT_OVERRIDE => information.overrides.push(InterruptOverride {
            isa_irq: u8_at(entry, 3)?,
            global_interrupt: u32_at(entry, 4)?,
            flags: u16_at(entry, 8)?,
        }),
        MADT_LOCAL_APIC_ADDRESS => information.local_apic_address = u64_at(entry, 4)?,
        _ => {}
    }
    Some(())
}

const FADT_DSDT: usize = 40;
const FADT_PM1A_CONTROL: usize = 64;
const FADT_EXTENDED_DSDT: usize = 140;

fn parse_fadt(memory: &dyn PhysicalReader, table: &[u8], information: &mut AcpiInformation) {
    information.pm1a_control_port = u32_at(table, FADT_PM1A_CONTROL).and_then(|port| u16::try_from(port).ok()).filter(|port| *port != 0);
    let dsdt = u64_at(table, FADT_EXTENDED_DSDT)
        .filter(|address| *address != 0)
        .or_else(|| u32_at(table, FADT_DSDT).map(u64::from))
        .unwrap_or(0);
    if let Ok(dsdt) = read_table(memory, dsdt) {
        information.s5_sleep_type = find_s5_sleep_type(dsdt);
    }
}

/// Finds `Name(_S5, Package(){a, b, …})` in AML and returns SLP_TYPa.
/// A byte scan, not an AML interpreter: enough for the package forms
/// firmware uses for `\_S5`.
pub fn find_s5_sleep_type(aml: &[u8]) -> Option<u16> {
    let at = aml.windows(4).position(|window| window == b"_S5_")?;
    let mut offset = at + 4;
    if u8_at(aml, offset)? != 0x12 {
        return None; // not a PackageOp
    }
    offset += 1;
    let length_bytes = usize::from(u8_at(aml, offset)? >> 6);
    offset += 1 + length_bytes + 1; // PkgLength, then NumElements
    match u8_at(aml, offset)? {
        0x00 => Some(0),             // ZeroOp
        0x01 => Some(1),             // OneOp
        0x0A => u8_at(aml, offset + 1).map(u16::from), // BytePrefix
        value => Some(u16::from(value)),
    }
}

#[cfg(test)]
#[path = "acpi_tests.rs"]
mod tests;
