//! The firmware's ACPI tables (`machine::acpi`): the RSDP, the XSDT or RSDT,
//! the MADT (processors, I/O APICs, interrupt overrides), the FADT and the
//! DSDT's `\_S5` package, read from a memory image at physical 0 as the
//! kernel reads them at boot. `repair` recomputes every table checksum so
//! that mutations get past them; hot ranges are the table headers and the
//! MADT entries.

use std::ops::Range;

use machine::acpi::{find_s5_sleep_type, parse, AcpiInformation};
use machine::bootinfo::{PhysicalReader, RsdpLocation};

use crate::{boundary_value, kind_of, Rng, Target};

/// The ACPI target.
pub struct Acpi;

const RSDP_AT: usize = 0x100;
const ROOT_AT: usize = 0x200;
const MADT_AT: usize = 0x400;
const FADT_AT: usize = 0x600;
const DSDT_AT: usize = 0x800;
const HEADER: usize = 36;

/// Physical memory for the parser: the input at address 0.
struct Image<'a>(&'a [u8]);

impl PhysicalReader for Image<'_> {
    fn read(&self, address: u64, length: usize) -> Option<&[u8]> {
        let offset = usize::try_from(address).ok()?;
        self.0.get(offset..offset.checked_add(length)?)
    }
}

fn byte_sum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |sum, byte| sum.wrapping_add(*byte))
}

fn le32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn le64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// A table: header with `signature`, `body`, length and checksum set.
fn table(signature: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0u8; HEADER];
    bytes[..4].copy_from_slice(signature);
    bytes[8] = 2;
    bytes.extend_from_slice(body);
    let length = bytes.len() as u32;
    bytes[4..8].copy_from_slice(&length.to_le_bytes());
    bytes[9] = 0u8.wrapping_sub(byte_sum(&bytes));
    bytes
}

/// A MADT body: local APIC address and flags, then its entries.
fn madt_body(processors: usize, x2apic: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0xfee0_0000u32.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    for id in 0..processors as u8 {
        if x2apic {
            body.extend_from_slice(&[9, 16, 0, 0]);
            body.extend_from_slice(&u32::from(id).to_le_bytes());
            body.extend_from_slice(&1u32.to_le_bytes());
            body.extend_from_slice(&u32::from(id).to_le_bytes());
        } else {
            body.extend_from_slice(&[0, 8, id, id, 1, 0, 0, 0]);
        }
    }
    body.extend_from_slice(&[1, 12, 0, 0]);
    body.extend_from_slice(&0xfec0_0000u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    for (isa, global) in [(0u8, 2u32), (5, 5), (9, 9)] {
        body.extend_from_slice(&[2, 10, 0, isa]);
        body.extend_from_slice(&global.to_le_bytes());
        body.extend_from_slice(&0x000du16.to_le_bytes());
    }
    body.extend_from_slice(&[5, 12, 0, 0]);
    body.extend_from_slice(&0xfee0_0000u64.to_le_bytes());
    body
}

/// Memory as QEMU lays it out, in small: an RSDP (revision 2 with an
/// XSDT, or 0 with an RSDT), the MADT, a FADT and a DSDT with `\_S5`.
fn machine(madt: Vec<u8>, extended: bool) -> Vec<u8> {
    let mut bytes = vec![0u8; 0x900];
    let mut rsdp = [0u8; 36];
    rsdp[..8].copy_from_slice(b"RSD PTR ");
    rsdp[9..15].copy_from_slice(b"LAMINA");
    rsdp[15] = if extended { 2 } else { 0 };
    rsdp[16..20].copy_from_slice(&(ROOT_AT as u32).to_le_bytes());
    rsdp[20..24].copy_from_slice(&36u32.to_le_bytes());
    rsdp[24..32].copy_from_slice(&(ROOT_AT as u64).to_le_bytes());
    rsdp[8] = 0u8.wrapping_sub(byte_sum(&rsdp[..20]));
    rsdp[32] = 0u8.wrapping_sub(byte_sum(&rsdp));
    bytes[RSDP_AT..RSDP_AT + 36].copy_from_slice(&rsdp);
    let root = if extended {
        let mut entries = (MADT_AT as u64).to_le_bytes().to_vec();
        entries.extend_from_slice(&(FADT_AT as u64).to_le_bytes());
        table(b"XSDT", &entries)
    } else {
        let mut entries = (MADT_AT as u32).to_le_bytes().to_vec();
        entries.extend_from_slice(&(FADT_AT as u32).to_le_bytes());
        table(b"RSDT", &entries)
    };
    bytes[ROOT_AT..ROOT_AT + root.len()].copy_from_slice(&root);
    bytes[MADT_AT..MADT_AT + madt.len()].copy_from_slice(&madt);
    let mut fadt_body = vec![0u8; 244 - HEADER];
    fadt_body[40 - HEADER..44 - HEADER].copy_from_slice(&(DSDT_AT as u32).to_le_bytes());
    fadt_body[64 - HEADER..68 - HEADER].copy_from_slice(&0x604u32.to_le_bytes());
    if extended {
        fadt_body[140 - HEADER..148 - HEADER].copy_from_slice(&(DSDT_AT as u64).to_le_bytes());
    }
    let fadt = table(b"FACP", &fadt_body);
    bytes[FADT_AT..FADT_AT + fadt.len()].copy_from_slice(&fadt);
    let dsdt = table(b"DSDT", &[0x10, 0x08, b'_', b'S', b'5', b'_', 0x12, 0x06, 0x04, 0x0a, 0x05, 0x0a, 0x05, 0, 0]);
    bytes.resize(DSDT_AT + dsdt.len(), 0);
    bytes[DSDT_AT..].copy_from_slice(&dsdt);
    bytes
}

/// Where each table of `input` starts, as the parser would find it.
fn table_addresses(input: &[u8]) -> Vec<usize> {
    let mut addresses = Vec::new();
    let revision = input.get(RSDP_AT + 15).copied().unwrap_or(0);
    let root = if revision >= 2 { le64(input, RSDP_AT + 24) } else { le32(input, RSDP_AT + 16).map(u64::from) };
    let Some(root) = root.and_then(|root| usize::try_from(root).ok()).filter(|root| *root < input.len()) else { return addresses };
    addresses.push(root);
    let entry_size = if input.get(root..root + 4) == Some(b"XSDT") { 8 } else { 4 };
    let length = le32(input, root + 4).unwrap_or(0) as usize;
    let end = root.saturating_add(length).min(input.len());
    let mut at = root + HEADER;
    while at + entry_size <= end && addresses.len() < 16 {
        let address = if entry_size == 8 { le64(input, at).unwrap_or(0) } else { u64::from(le32(input, at).unwrap_or(0)) };
        if let Ok(address) = usize::try_from(address) {
            if address < input.len() {
                addresses.push(address);
                if input.get(address..address + 4) == Some(b"FACP") {
                    let dsdt = le64(input, address + 140).filter(|dsdt| *dsdt != 0).or_else(|| le32(input, address + 40).map(u64::from));
                    if let Some(dsdt) = dsdt.and_then(|dsdt| usize::try_from(dsdt).ok()).filter(|dsdt| *dsdt < input.len()) {
                        addresses.push(dsdt);
                    }
                }
            }
        }
        at += entry_size;
    }
    addresses
}

/// Uses everything the parser returned, as the kernel does at boot.
fn walk(information: &AcpiInformation) -> String {
    let usable = information.processors.iter().filter(|processor| processor.usable).count();
    for isa in 0..16 {
        let _ = information.global_interrupt_for_isa(isa);
    }
    format!(
        "ok cpus {} io-apics {} overrides {} pm1a {} s5 {}",
        usable.min(3),
        information.io_apics.len().min(2),
        information.overrides.len().min(2),
        information.pm1a_control_port.is_some(),
        information.s5_sleep_type.is_some()
    )
}

impl Target for Acpi {
    fn name(&self) -> &'static str {
        "acpi"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        vec![machine(table(b"APIC", &madt_body(4, false)), true), machine(table(b"APIC", &madt_body(2, true)), false)]
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let mut body = madt_body(random.below(6), random.coin());
        for _ in 0..random.below(4) {
            let kind = [0u8, 1, 2, 5, 9, random.next_u64() as u8][random.below(6)];
            let length = [0u8, 1, 2, 8, 10, 12, 16, random.next_u64() as u8][random.below(8)];
            body.push(kind);
            body.push(length);
            body.extend((0..random.below(16)).map(|_| boundary_value(random) as u8));
        }
        let mut bytes = machine(table(b"APIC", &body[..body.len().min(FADT_AT - MADT_AT - HEADER)]), random.coin());
        if random.coin() {
            // A pointer or length somewhere in the tables set to an edge.
            let fields = [RSDP_AT + 16, RSDP_AT + 24, ROOT_AT + 4, ROOT_AT + HEADER, MADT_AT + 4, FADT_AT + 4, FADT_AT + 40, FADT_AT + 140, DSDT_AT + 4];
            let at = fields[random.below(fields.len())];
            let value = boundary_value(random).to_le_bytes();
            let width = if at == RSDP_AT + 24 || at == ROOT_AT + HEADER || at == FADT_AT + 140 { 8 } else { 4 };
            bytes[at..at + width].copy_from_slice(&value[..width]);
            self.repair(&mut bytes);
        }
        bytes
    }

    fn max_len(&self) -> usize {
        8192
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        let mut ranges = vec![RSDP_AT..RSDP_AT + 36];
        for address in table_addresses(input) {
            let length = (le32(input, address + 4).unwrap_or(0) as usize).clamp(HEADER, 256);
            ranges.push(address..(address + length).min(input.len()).max(address + 1));
        }
        ranges
    }

    fn repair(&self, input: &mut Vec<u8>) {
        if input.len() >= RSDP_AT + 36 {
            input[RSDP_AT + 8] = 0;
            input[RSDP_AT + 8] = 0u8.wrapping_sub(byte_sum(&input[RSDP_AT..RSDP_AT + 20]));
            input[RSDP_AT + 32] = 0;
            input[RSDP_AT + 32] = 0u8.wrapping_sub(byte_sum(&input[RSDP_AT..RSDP_AT + 36]));
        }
        for address in table_addresses(input) {
            let length = le32(input, address + 4).unwrap_or(0) as usize;
            if length >= HEADER && address + length <= input.len() {
                input[address + 9] = 0;
                input[address + 9] = 0u8.wrapping_sub(byte_sum(&input[address..address + length]));
            }
        }
    }

    fn run(&self, input: &[u8]) -> String {
        let image = Image(input);
        let physical = parse(&image, RsdpLocation::Physical(RSDP_AT as u64)).map_or_else(|error| kind_of(&error), |information| walk(&information));
        // As multiboot2 hands it over: the RSDP copied into the tag.
        let mut bytes = [0u8; 36];
        let copied = input.get(RSDP_AT..).unwrap_or(&[]);
        let length = copied.len().min(if input.len() % 2 == 0 { 36 } else { 20 });
        bytes[..length].copy_from_slice(&copied[..length]);
        let copied = parse(&image, RsdpLocation::Copied { bytes, length }).map_or_else(|error| kind_of(&error), |information| walk(&information));
        let s5 = find_s5_sleep_type(input.get(DSDT_AT..).unwrap_or(&[])).is_some();
        format!("{physical} / copied {copied} / s5 {s5}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_parse_and_repair_keeps_them_whole() {
        for mut sample in Acpi.samples() {
            assert!(Acpi.run(&sample).starts_with("ok"), "{}", Acpi.run(&sample));
            sample[MADT_AT + HEADER + 8 + 2] ^= 1; // an APIC id: the checksum breaks
            assert!(!Acpi.run(&sample).starts_with("ok cpus"), "{}", Acpi.run(&sample));
            Acpi.repair(&mut sample);
            assert!(Acpi.run(&sample).starts_with("ok"), "{}", Acpi.run(&sample));
        }
    }
}
