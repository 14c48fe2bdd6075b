//! What the boot loader tells the kernel, from either boot protocol.
//!
//! Parses the PVH `hvm_start_info` (QEMU direct boot) and the multiboot2
//! information (GRUB) into one [`BootInformation`]: the memory map, the
//! modules (the initramfs), the command line and where the ACPI root pointer
//! is. The structures are untrusted bytes reached through a
//! [`PhysicalReader`]; anything malformed is a [`BootInfoError`]. No heap:
//! this runs before the kernel heap exists.

use crate::bytes::{slice_at, u32_at, u64_at};

/// Gives read access to physical memory (the direct map in the kernel, a
/// buffer in tests).
pub trait PhysicalReader {
    /// The `length` bytes at physical `address`, if readable.
    fn read(&self, address: u64, length: usize) -> Option<&[u8]>;
}

/// Which loader started the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootProtocol {
    Pvh,
    Multiboot2,
}

/// What a memory-map region holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    Usable,
    Reserved,
    AcpiReclaimable,
    AcpiNonVolatile,
    Defective,
}

impl MemoryKind {
    fn from_e820(code: u32) -> Self {
        match code {
            1 => MemoryKind::Usable,
            3 => MemoryKind::AcpiReclaimable,
            4 => MemoryKind::AcpiNonVolatile,
            5 => MemoryKind::Defective,
            _ => MemoryKind::Reserved,
        }
    }
}

/// A physical range `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRegion {
    pub start: u64,
    pub end: u64,
    pub kind: MemoryKind,
}

/// Where the ACPI root system description pointer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RsdpLocation {
    /// Not given: search the BIOS area.
    Unknown,
    /// At this physical address.
    Physical(u64),
    /// The loader copied it (multiboot2); `length` bytes of `bytes` are valid.
    Copied { bytes: [u8; 36], length: usize },
}

/// A module (initramfs) the loader put in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootModule {
    pub start: u64,
    pub end: u64,
}

pub const MAX_MEMORY_REGIONS: usize = 128;
pub const MAX_MODULES: usize = 8;
pub const MAX_COMMAND_LINE: usize = 512;

/// Everything the kernel keeps from the boot loader.
#[derive(Debug, Clone)]
pub struct BootInformation {
    pub protocol: BootProtocol,
    regions: [MemoryRegion; MAX_MEMORY_REGIONS],
    region_count: usize,
    modules: [BootModule; MAX_MODULES],
    module_count: usize,
    command_line: [u8; MAX_COMMAND_LINE],
    command_line_length: usize,
    pub rsdp: RsdpLocation,
}

/// Why boot information was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootInfoError {
    Unreadable { address: u64 },
    BadMagic { found: u32 },
    Truncated,
    NoMemoryMap,
    TooManyRegions,
}

impl core::fmt::Display for BootInfoError {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Unreadable { address } => write!(formatter, "boot information at {address:#x} is not readable"),
            Self::BadMagic { found } => write!(formatter, "boot information has bad magic {found:#x}"),
            Self::Truncated => write!(formatter, "boot information is truncated"),
            Self::NoMemoryMap => write!(formatter, "the boot loader gave no memory map"),
            Self::TooManyRegions => write!(formatter, "the memory map has more than {MAX_MEMORY_REGIONS} regions"),
        }
    }
}

impl BootInformation {
    fn empty(protocol: BootProtocol) -> Self {
        let no_region = MemoryRegion { start: 0, end: 0, kind: MemoryKind::Reserved };
        Self {
            protocol,
            regions: [no_region; MAX_MEMORY_REGIONS],
            region_count: 0,
            modules: [BootModule { start: 0, end: 0 }; MAX_MODULES],
            module_count: 0,
            command_line: [0; MAX_COMMAND_LINE],
            command_line_length: 0,
            rsdp: RsdpLocation::Unknown,
        }
    }

    /// The memory map, as the loader gave it (empty regions dropped).
    pub fn memory_regions(&self) -> &[MemoryRegion] {
        &self.regions[..self.region_count]
    }

    pub fn modules(&self) -> &[BootModule] {
        &self.modules[..self.module_count]
    }

    /// The kernel command line (invalid UTF-8 is cut at the first bad byte).
    pub fn command_line(&self) -> &str {
        let bytes = &self.command_line[..self.command_line_length];
        match core::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => core::str::from_utf8(&bytes[..error.valid_up_to()]).unwrap_or(""),
        }
    }

    /// Total bytes of usable memory (saturating: a map may claim more
    /// than 2^64 bytes).
    pub fn usable_bytes(&self) -> u64 {
        self.memory_regions()
            .iter()
            .filter(|region| region.kind == MemoryKind::Usable)
            .fold(0u64, |total, region| total.saturating_add(region.end - region.start))
    }

    fn push_region(&mut self, start: u64, length: u64, kind: MemoryKind) -> Result<(), BootInfoError> {
        if length == 0 {
            return Ok(());
        }
        let slot = self.regions.get_mut(self.region_count).ok_or(BootInfoError::TooManyRegions)?;
        *slot = MemoryRegion { start, end: start.saturating_add(length), kind };
        self.region_count += 1;
        Ok(())
    }

    fn push_module(&mut self, start: u64, end: u64) {
        if let Some(slot) = self.modules.get_mut(self.module_count) {
            *slot = BootModule { start, end };
            self.module_count += 1;
        }
    }

    fn set_command_line(&mut self, bytes: &[u8]) {
        let text = bytes.split(|byte| *byte == 0).next().unwrap_or(&[]);
        let length = text.len().min(MAX_COMMAND_LINE);
        self.command_line[..length].copy_from_slice(&text[..length]);
        self.command_line_length = length;
    }
}

fn read<'a>(memory: &'a dyn PhysicalReader, address: u64, length: usize) -> Result<&'a [u8], BootInfoError> {
    memory.read(address, length).ok_or(BootInfoError::Unreadable { address })
}

/// Reads a NUL-terminated string of at most `MAX_COMMAND_LINE` bytes.
fn read_c_string(memory: &dyn PhysicalReader, address: u64) -> &[u8] {
    (1..=MAX_COMMAND_LINE)
        .rev()
        .find_map(|length| memory.read(address, length))
        .map(|bytes| bytes.split(|byte| *byte == 0).next().unwrap_or(&[]))
        .unwrap_or(&[])
}

/// The most memory-map entries read (empty ones included).
const MAX_MEMORY_MAP_ENTRIES: usize = 4 * MAX_MEMORY_REGIONS;

/// The address of entry `index` of a table at `table` (an overflow is a
/// table that cannot be read).
fn entry_address(table: u64, index: usize, entry_length: usize) -> Result<u64, BootInfoError> {
    (index as u64)
        .checked_mul(entry_length as u64)
        .and_then(|offset| table.checked_add(offset))
        .ok_or(BootInfoError::Unreadable { address: table })
}

const PVH_MAGIC: u32 = 0x336e_c578;
const PVH_START_INFO_LENGTH: usize = 56;
const PVH_MODULE_ENTRY_LENGTH: usize = 32;
const PVH_MEMORY_ENTRY_LENGTH: usize = 24;

/// Parses a PVH `hvm_start_info` at physical `address`.
pub fn parse_pvh(memory: &dyn PhysicalReader, address: u64) -> Result<BootInformation, BootInfoError> {
    let start_info = read(memory, address, PVH_START_INFO_LENGTH)?;
    let field32 = |offset| u32_at(start_info, offset).ok_or(BootInfoError::Truncated);
    let field64 = |offset| u64_at(start_info, offset).ok_or(BootInfoError::Truncated);
    let magic = field32(0)?;
    if magic != PVH_MAGIC {
        return Err(BootInfoError::BadMagic { found: magic });
    }
    let mut info = BootInformation::empty(BootProtocol::Pvh);
    let version = field32(4)?;
    let module_count = field32(12)? as usize;
    let module_list = field64(16)?;
    let command_line = field64(24)?;
    let rsdp = field64(32)?;
    if command_line != 0 {
        info.set_command_line(read_c_string(memory, command_line));
    }
    if rsdp != 0 {
        info.rsdp = RsdpLocation::Physical(rsdp);
    }
    for index in 0..module_count.min(MAX_MODULES) {
        let entry = read(memory, entry_address(module_list, index, PVH_MODULE_ENTRY_LENGTH)?, PVH_MODULE_ENTRY_LENGTH)?;
        let start = u64_at(entry, 0).ok_or(BootInfoError::Truncated)?;
        let size = u64_at(entry, 8).ok_or(BootInfoError::Truncated)?;
        info.push_module(start, start.saturating_add(size));
    }
    if version < 1 {
        return Err(BootInfoError::NoMemoryMap);
    }
    let memory_map = field64(40)?;
    let entry_count = field32(48)? as usize;
    if memory_map == 0 || entry_count == 0 {
        return Err(BootInfoError::NoMemoryMap);
    }
    // Empty entries take no region slot, so bound the walk itself: a count
    // of 2^32 over readable memory would otherwise stall the boot.
    if entry_count > MAX_MEMORY_MAP_ENTRIES {
        return Err(BootInfoError::TooManyRegions);
    }
    for index in 0..entry_count {
        let entry = read(memory, entry_address(memory_map, index, PVH_MEMORY_ENTRY_LENGTH)?, PVH_MEMORY_ENTRY_LENGTH)?;
        let start = u64_at(entry, 0).ok_or(BootInfoError::Truncated)?;
        let length = u64_at(entry, 8).ok_or(BootInfoError::Truncated)?;
        let kind = u32_at(entry, 16).ok_or(BootInfoError::Truncated)?;
        info.push_region(start, length, MemoryKind::from_e820(kind))?;
    }
    Ok(info)
}

const MULTIBOOT2_TAG_END: u32 = 0;
const MULTIBOOT2_TAG_COMMAND_LINE: u32 = 1;
const MULTIBOOT2_TAG_MODULE: u32 = 3;
const MULTIBOOT2_TAG_MEMORY_MAP: u32 = 6;
const MULTIBOOT2_TAG_ACPI_OLD: u32 = 14;
const MULTIBOOT2_TAG_ACPI_NEW: u32 = 15;
const MULTIBOOT2_MAX_INFO_LENGTH: usize = 1 << 20;

/// Parses multiboot2 boot information at physical `address`.
pub fn parse_multiboot2(memory: &dyn PhysicalReader, address: u64) -> Result<BootInformation, BootInfoError> {
    let header = read(memory, address, 8)?;
    let total = u32_at(header, 0).ok_or(BootInfoError::Truncated)? as usize;
    if !(8..=MULTIBOOT2_MAX_INFO_LENGTH).contains(&total) {
        return Err(BootInfoError::Truncated);
    }
    let all = read(memory, address, total)?;
    let mut info = BootInformation::empty(BootProtocol::Multiboot2);
    let mut saw_memory_map = false;
    let mut offset = 8;
    while offset + 8 <= total {
        let tag_type = u32_at(all, offset).ok_or(BootInfoError::Truncated)?;
        let tag_size = u32_at(all, offset + 4).ok_or(BootInfoError::Truncated)? as usize;
        if tag_type == MULTIBOOT2_TAG_END {
            break;
        }
        let tag = slice_at(all, offset, tag_size).filter(|_| tag_size >= 8).ok_or(BootInfoError::Truncated)?;
        saw_memory_map |= tag_type == MULTIBOOT2_TAG_MEMORY_MAP;
        apply_multiboot2_tag(&mut info, tag_type, tag)?;
        offset += (tag_size + 7) & !7;
    }
    if !saw_memory_map {
        return Err(BootInfoError::NoMemoryMap);
    }
    Ok(info)
}

fn apply_multiboot2_tag(info: &mut BootInformation, tag_type: u32, tag: &[u8]) -> Result<(), BootInfoError> {
    match tag_type {
        MULTIBOOT2_TAG_COMMAND_LINE => info.set_command_line(&tag[8..]),
        MULTIBOOT2_TAG_MODULE => {
            let start = u32_at(tag, 8).ok_or(BootInfoError::Truncated)?;
            let end = u32_at(tag, 12).ok_or(BootInfoError::Truncated)?;
            info.push_module(u64::from(start), u64::from(end));
        }
        MULTIBOOT2_TAG_MEMORY_MAP => {
            let entry_size = u32_at(tag, 8).ok_or(BootInfoError::Truncated)? as usize;
            if entry_size < 24 {
                return Err(BootInfoError::Truncated);
            }
            let entries = tag.get(16..).ok_or(BootInfoError::Truncated)?;
            for entry in entries.chunks_exact(entry_size) {
                let start = u64_at(entry, 0).ok_or(BootInfoError::Truncated)?;
                let length = u64_at(entry, 8).ok_or(BootInfoError::Truncated)?;
                let kind = u32_at(entry, 16).ok_or(BootInfoError::Truncated)?;
                info.push_region(start, length, MemoryKind::from_e820(kind))?;
            }
        }
        MULTIBOOT2_TAG_ACPI_OLD | MULTIBOOT2_TAG_ACPI_NEW => {
            let copy = &tag[8..];
            let mut bytes = [0u8; 36];
            let length = copy.len().min(36);
            bytes[..length].copy_from_slice(&copy[..length]);
            // Prefer the ACPI 2.0 pointer when both are given.
            if tag_type == MULTIBOOT2_TAG_ACPI_NEW || matches!(info.rsdp, RsdpLocation::Unknown) {
                info.rsdp = RsdpLocation::Copied { bytes, length };
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
#[path = "bootinfo_tests.rs"]
mod tests;
