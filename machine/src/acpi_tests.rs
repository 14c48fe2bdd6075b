//! Tests of ACPI parsing on hand-built tables.

use super::*;
use std::vec::Vec;

struct FakeMemory {
    bytes: Vec<u8>,
}

impl PhysicalReader for FakeMemory {
    fn read(&self, address: u64, length: usize) -> Option<&[u8]> {
        let offset = usize::try_from(address).ok()?;
        self.bytes.get(offset..offset.checked_add(length)?)
    }
}

/// A table with a valid header and checksum.
fn table(signature: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0u8; HEADER_LENGTH];
    bytes[..4].copy_from_slice(signature);
    bytes.extend_from_slice(body);
    let length = bytes.len() as u32;
    bytes[4..8].copy_from_slice(&length.to_le_bytes());
    bytes[9] = 0u8.wrapping_sub(byte_sum(&bytes));
    bytes
}

const RSDP_AT: usize = 0x100;
const XSDT_AT: usize = 0x200;
const MADT_AT: usize = 0x400;
const FADT_AT: usize = 0x600;
const DSDT_AT: usize = 0x800;

fn madt_body() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0xFEE0_0000u32.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    for (apic_id, flags) in [(0u8, 1u32), (1, 1), (2, 0), (3, 2)] {
        body.extend_from_slice(&[0, 8, apic_id, apic_id]);
        body.extend_from_slice(&flags.to_le_bytes());
    }
    body.extend_from_slice(&[1, 12, 7, 0]);
    body.extend_from_slice(&0xFEC0_0000u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&[2, 10, 0, 0]);
    body.extend_from_slice(&2u32.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body
}

fn machine_with(madt: Vec<u8>) -> FakeMemory {
    let mut bytes = vec![0u8; 0x1000];
    let mut rsdp = [0u8; 36];
    rsdp[..8].copy_from_slice(RSDP_SIGNATURE);
    rsdp[15] = 2;
    rsdp[20..24].copy_from_slice(&36u32.to_le_bytes());
    rsdp[24..32].copy_from_slice(&(XSDT_AT as u64).to_le_bytes());
    rsdp[8] = 0u8.wrapping_sub(byte_sum(&rsdp[..20]));
    rsdp[32] = 0u8.wrapping_sub(byte_sum(&rsdp));
    bytes[RSDP_AT..RSDP_AT + 36].copy_from_slice(&rsdp);
    let mut entries = Vec::new();
    entries.extend_from_slice(&(MADT_AT as u64).to_le_bytes());
    entries.extend_from_slice(&(FADT_AT as u64).to_le_bytes());
    let xsdt = table(b"XSDT", &entries);
    bytes[XSDT_AT..XSDT_AT + xsdt.len()].copy_from_slice(&xsdt);
    bytes[MADT_AT..MADT_AT + madt.len()].copy_from_slice(&madt);
    let mut fadt_body = vec![0u8; 244 - HEADER_LENGTH];
    fadt_body[FADT_DSDT - HEADER_LENGTH..FADT_DSDT - HEADER_LENGTH + 4].copy_from_slice(&(DSDT_AT as u32).to_le_bytes());
    fadt_body[FADT_PM1A_CONTROL - HEADER_LENGTH..FADT_PM1A_CONTROL - HEADER_LENGTH + 4].copy_from_slice(&0x604u32.to_le_bytes());
    let fadt = table(b"FACP", &fadt_body);
    bytes[FADT_AT..FADT_AT + fadt.len()].copy_from_slice(&fadt);
    let dsdt = table(b"DSDT", &[0x10, 0x08, b'_', b'S', b'5', b'_', 0x12, 0x06, 0x04, 0x0A, 0x05, 0x0A, 0x05, 0, 0]);
    bytes[DSDT_AT..DSDT_AT + dsdt.len()].copy_from_slice(&dsdt);
    FakeMemory { bytes }
}

#[test]
fn madt_fadt_and_s5_are_read() {
    let memory = machine_with(table(b"APIC", &madt_body()));
    let information = parse(&memory, RsdpLocation::Physical(RSDP_AT as u64)).expect("valid tables");
    assert_eq!(information.local_apic_address, 0xFEE0_0000);
    let usable: Vec<u32> = information.processors.iter().filter(|p| p.usable).map(|p| p.apic_id).collect();
    assert_eq!(usable, vec![0, 1, 3], "disabled CPU 2 left out, online-capable CPU 3 kept");
    assert_eq!(information.io_apics, vec![IoApic { id: 7, address: 0xFEC0_0000, first_interrupt: 0 }]);
    assert_eq!(information.global_interrupt_for_isa(0), 2);
    assert_eq!(information.global_interrupt_for_isa(4), 4);
    assert_eq!(information.pm1a_control_port, Some(0x604));
    assert_eq!(information.s5_sleep_type, Some(5));
}

#[test]
fn bad_tables_are_errors() {
    let mut madt = table(b"APIC", &madt_body());
    madt[40] ^= 0xFF; // break the checksum
    let memory = machine_with(madt);
    assert_eq!(parse(&memory, RsdpLocation::Physical(RSDP_AT as u64)).unwrap_err(), AcpiError::NoMadt);
    let mut body = madt_body();
    body[9] = 200; // first entry claims to run far past the table
    let memory = machine_with(table(b"APIC", &body));
    assert_eq!(
        parse(&memory, RsdpLocation::Physical(RSDP_AT as u64)).unwrap_err(),
        AcpiError::Truncated { signature: *b"APIC" }
    );
    let mut body = madt_body();
    body[9] = 0; // zero-length entry must not loop forever
    let memory = machine_with(table(b"APIC", &body));
    assert!(parse(&memory, RsdpLocation::Physical(RSDP_AT as u64)).is_err());
    assert_eq!(parse(&memory, RsdpLocation::Physical(0x10)).unwrap_err(), AcpiError::NoRootPointer);
}

#[test]
fn s5_forms() {
    assert_eq!(find_s5_sleep_type(b"xx_S5_\x12\x06\x04\x00\x00"), Some(0));
    assert_eq!(find_s5_sleep_type(b"_S5_\x12\x06\x04\x0A\x07"), Some(7));
    assert_eq!(find_s5_sleep_type(b"_S5_\x13"), None);
    assert_eq!(find_s5_sleep_type(b"_S5_\x12"), None);
    assert_eq!(find_s5_sleep_type(b"nothing"), None);
}
