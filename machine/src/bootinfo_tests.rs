//! Tests of boot-information parsing on hand-built structures.

use super::*;
use std::vec::Vec;

/// Physical memory for tests: a buffer at a base address.
struct FakeMemory {
    base: u64,
    bytes: Vec<u8>,
}

impl PhysicalReader for FakeMemory {
    fn read(&self, address: u64, length: usize) -> Option<&[u8]> {
        let offset = usize::try_from(address.checked_sub(self.base)?).ok()?;
        self.bytes.get(offset..offset.checked_add(length)?)
    }
}

fn put32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// A PVH start_info at 0x1000 with a two-entry memory map at 0x1100, a
/// command line at 0x1200 and one module entry at 0x1300.
fn pvh_memory() -> FakeMemory {
    let mut bytes = vec![0u8; 0x1000];
    put32(&mut bytes, 0, PVH_MAGIC);
    put32(&mut bytes, 4, 1);
    put32(&mut bytes, 12, 1);
    put64(&mut bytes, 16, 0x1300);
    put64(&mut bytes, 24, 0x1200);
    put64(&mut bytes, 32, 0xF5000);
    put64(&mut bytes, 40, 0x1100);
    put32(&mut bytes, 48, 2);
    put64(&mut bytes, 0x100, 0);
    put64(&mut bytes, 0x108, 0x9F000);
    put32(&mut bytes, 0x110, 1);
    put64(&mut bytes, 0x118, 0x100000);
    put64(&mut bytes, 0x120, 0x7F00000);
    put32(&mut bytes, 0x128, 1);
    bytes[0x200..0x20B].copy_from_slice(b"smp=4 quiet");
    put64(&mut bytes, 0x300, 0x800000);
    put64(&mut bytes, 0x308, 0x1000);
    FakeMemory { base: 0x1000, bytes }
}

#[test]
fn pvh_start_info_is_parsed() {
    let info = parse_pvh(&pvh_memory(), 0x1000).expect("valid start_info");
    assert_eq!(info.protocol, BootProtocol::Pvh);
    assert_eq!(info.memory_regions().len(), 2);
    assert_eq!(info.memory_regions()[1], MemoryRegion { start: 0x100000, end: 0x8000000, kind: MemoryKind::Usable });
    assert_eq!(info.usable_bytes(), 0x9F000 + 0x7F00000);
    assert_eq!(info.command_line(), "smp=4 quiet");
    assert_eq!(info.rsdp, RsdpLocation::Physical(0xF5000));
    assert_eq!(info.modules(), &[BootModule { start: 0x800000, end: 0x801000 }]);
}

#[test]
fn pvh_errors_are_values() {
    let mut memory = pvh_memory();
    put32(&mut memory.bytes, 0, 0xdead);
    assert_eq!(parse_pvh(&memory, 0x1000).unwrap_err(), BootInfoError::BadMagic { found: 0xdead });
    let mut memory = pvh_memory();
    put32(&mut memory.bytes, 4, 0);
    assert_eq!(parse_pvh(&memory, 0x1000).unwrap_err(), BootInfoError::NoMemoryMap);
    let mut memory = pvh_memory();
    put32(&mut memory.bytes, 48, 200); // map runs off the readable memory
    assert!(matches!(parse_pvh(&memory, 0x1000), Err(BootInfoError::Unreadable { .. })));
    assert!(matches!(parse_pvh(&memory, 0x9000), Err(BootInfoError::Unreadable { .. })));
}

fn multiboot2_memory(memory_map_entry_size: u32) -> FakeMemory {
    let mut tags: Vec<u8> = Vec::new();
    let mut tag = |kind: u32, body: &[u8]| {
        let size = 8 + body.len() as u32;
        tags.extend_from_slice(&kind.to_le_bytes());
        tags.extend_from_slice(&size.to_le_bytes());
        tags.extend_from_slice(body);
        while tags.len() % 8 != 0 {
            tags.push(0);
        }
    };
    tag(1, b"console=ttyS0\0");
    let mut map = Vec::new();
    map.extend_from_slice(&memory_map_entry_size.to_le_bytes());
    map.extend_from_slice(&0u32.to_le_bytes());
    for (start, length, kind) in [(0u64, 0x9FC00u64, 1u32), (0x100000, 0x3FF0000, 1), (0xFFFC0000, 0x40000, 2)] {
        map.extend_from_slice(&start.to_le_bytes());
        map.extend_from_slice(&length.to_le_bytes());
        map.extend_from_slice(&kind.to_le_bytes());
        map.extend_from_slice(&0u32.to_le_bytes());
    }
    tag(6, &map);
    let mut rsdp = [0u8; 20];
    rsdp[..8].copy_from_slice(b"RSD PTR ");
    tag(14, &rsdp);
    tag(0, &[]);
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(8 + tags.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&tags);
    FakeMemory { base: 0x2000, bytes }
}

#[test]
fn multiboot2_information_is_parsed() {
    let info = parse_multiboot2(&multiboot2_memory(24), 0x2000).expect("valid information");
    assert_eq!(info.protocol, BootProtocol::Multiboot2);
    assert_eq!(info.command_line(), "console=ttyS0");
    assert_eq!(info.memory_regions().len(), 3);
    assert_eq!(info.memory_regions()[2].kind, MemoryKind::Reserved);
    assert_eq!(info.usable_bytes(), 0x9FC00 + 0x3FF0000);
    assert!(matches!(info.rsdp, RsdpLocation::Copied { length: 20, .. }));
}

#[test]
fn multiboot2_errors_are_values() {
    assert_eq!(parse_multiboot2(&multiboot2_memory(8), 0x2000).unwrap_err(), BootInfoError::Truncated);
    let mut memory = multiboot2_memory(24);
    put32(&mut memory.bytes, 0, 4); // total size smaller than the header
    assert_eq!(parse_multiboot2(&memory, 0x2000).unwrap_err(), BootInfoError::Truncated);
    let mut memory = multiboot2_memory(24);
    put32(&mut memory.bytes, 0, 1 << 30);
    assert_eq!(parse_multiboot2(&memory, 0x2000).unwrap_err(), BootInfoError::Truncated);
    let mut memory = multiboot2_memory(24);
    put32(&mut memory.bytes, 12, 3); // first tag's size below 8
    assert_eq!(parse_multiboot2(&memory, 0x2000).unwrap_err(), BootInfoError::Truncated);
}

/// Found by parser-fuzz: usable regions that add up past 2^64 bytes made
/// `usable_bytes` overflow (a panic where overflow is checked).
#[test]
fn usable_bytes_saturate_when_the_map_claims_more_than_two_to_the_64() {
    let mut memory = pvh_memory();
    put64(&mut memory.bytes, 0x108, u64::MAX);
    put64(&mut memory.bytes, 0x120, u64::MAX);
    let info = parse_pvh(&memory, 0x1000).expect("valid start_info");
    assert_eq!(info.memory_regions()[0].end, u64::MAX);
    assert_eq!(info.usable_bytes(), u64::MAX);
}

/// Found by parser-fuzz: a memory-map tag of 12 to 15 bytes (room for the
/// entry size but not for the entries' start) panicked on a slice.
#[test]
fn a_memory_map_tag_too_short_for_its_entries_is_truncated() {
    let mut memory = multiboot2_memory(24);
    let tag = (8..memory.bytes.len()).step_by(8).find(|at| u32::from_le_bytes(memory.bytes[*at..*at + 4].try_into().unwrap()) == 6).expect("a memory map tag");
    put32(&mut memory.bytes, tag + 4, 13);
    assert_eq!(parse_multiboot2(&memory, 0x2000).unwrap_err(), BootInfoError::Truncated);
}

/// Found by reading what parser-fuzz's readable-memory model showed: a PVH
/// map count of 2^32 - 1 over readable memory walked four billion empty
/// entries. The walk is bounded now.
#[test]
fn a_pvh_memory_map_count_past_the_bound_is_refused() {
    let mut memory = pvh_memory();
    memory.bytes.resize(0x10000, 0);
    put32(&mut memory.bytes, 48, u32::MAX);
    assert_eq!(parse_pvh(&memory, 0x1000).unwrap_err(), BootInfoError::TooManyRegions);
    let mut memory = pvh_memory();
    put64(&mut memory.bytes, 16, u64::MAX - 40); // module list at the top of memory
    assert!(matches!(parse_pvh(&memory, 0x1000), Err(BootInfoError::Unreadable { .. })));
}
