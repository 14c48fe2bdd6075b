//! What the boot loader hands the kernel: a PVH `hvm_start_info` and a
//! multiboot2 information block (`machine::bootinfo`), each parsed from a
//! memory image placed at physical 0x1000 and walked as the kernel does
//! (memory map, usable bytes, modules, command line, RSDP location).
//! Hot ranges: the start-info structure, the multiboot2 tag headers, the
//! memory map and module entries.

use std::ops::Range;

use machine::bootinfo::{parse_multiboot2, parse_pvh, BootInformation, PhysicalReader, RsdpLocation};

use crate::{boundary_value, kind_of, Rng, Target};

/// The boot-information target.
pub struct BootInfo;

const BASE: u64 = 0x1000;
const PVH_MAGIC: u32 = 0x336e_c578;

/// Physical memory for the parsers: the input at [`BASE`], then zeros up
/// to [`READABLE_END`] (real memory is readable past the structure, so a
/// walk that a count drives too far shows up as a slow input).
struct Image<'a>(&'a [u8]);

const READABLE_END: u64 = BASE + ZEROS.len() as u64;
static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

impl PhysicalReader for Image<'_> {
    fn read(&self, address: u64, length: usize) -> Option<&[u8]> {
        let offset = usize::try_from(address.checked_sub(BASE)?).ok()?;
        let end = offset.checked_add(length)?;
        if let Some(bytes) = self.0.get(offset..end) {
            return Some(bytes);
        }
        if offset >= self.0.len() && address.checked_add(length as u64)? <= READABLE_END {
            return ZEROS.get(..length);
        }
        None
    }
}

fn put32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// A PVH start_info (as QEMU writes it): a memory map of `regions`, a
/// command line, `modules` module entries and an RSDP address.
fn pvh(regions: &[(u64, u64, u32)], modules: &[(u64, u64)], command_line: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0u8; 0x800];
    put32(&mut bytes, 0, PVH_MAGIC);
    put32(&mut bytes, 4, 1);
    put32(&mut bytes, 12, modules.len() as u32);
    put64(&mut bytes, 16, BASE + 0x300);
    put64(&mut bytes, 24, BASE + 0x200);
    put64(&mut bytes, 32, 0xf_5000);
    put64(&mut bytes, 40, BASE + 0x100);
    put32(&mut bytes, 48, regions.len() as u32);
    for (index, (start, length, kind)) in regions.iter().enumerate() {
        let at = 0x100 + 24 * index;
        put64(&mut bytes, at, *start);
        put64(&mut bytes, at + 8, *length);
        put32(&mut bytes, at + 16, *kind);
    }
    bytes[0x200..0x200 + command_line.len()].copy_from_slice(command_line);
    for (index, (start, size)) in modules.iter().enumerate() {
        put64(&mut bytes, 0x300 + 32 * index, *start);
        put64(&mut bytes, 0x308 + 32 * index, *size);
    }
    bytes
}

/// A multiboot2 information block (as GRUB writes it) with the tags given
/// as (type, body), each padded to 8 bytes, and the end tag.
fn multiboot2(tags: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut bytes = vec![0u8; 8];
    for (kind, body) in tags {
        let start = bytes.len();
        bytes.extend_from_slice(&kind.to_le_bytes());
        bytes.extend_from_slice(&((8 + body.len()) as u32).to_le_bytes());
        bytes.extend_from_slice(body);
        bytes.resize(start + (8 + body.len()).next_multiple_of(8), 0);
    }
    bytes.extend_from_slice(&[0, 0, 0, 0, 8, 0, 0, 0]);
    let total = bytes.len() as u32;
    put32(&mut bytes, 0, total);
    bytes
}

fn memory_map_tag(regions: &[(u64, u64, u32)]) -> (u32, Vec<u8>) {
    let mut body = Vec::new();
    body.extend_from_slice(&24u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    for (start, length, kind) in regions {
        body.extend_from_slice(&start.to_le_bytes());
        body.extend_from_slice(&length.to_le_bytes());
        body.extend_from_slice(&kind.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
    }
    (6, body)
}

fn module_tag(start: u32, end: u32, name: &[u8]) -> (u32, Vec<u8>) {
    let mut body = Vec::new();
    body.extend_from_slice(&start.to_le_bytes());
    body.extend_from_slice(&end.to_le_bytes());
    body.extend_from_slice(name);
    (3, body)
}

const QEMU_MAP: [(u64, u64, u32); 4] = [(0, 0x9_fc00, 1), (0x9_fc00, 0x400, 2), (0xf_0000, 0x1_0000, 2), (0x10_0000, 0x7ee_0000, 1)];

/// Uses everything the parser returned, as the kernel does at boot.
fn walk(info: &BootInformation) -> String {
    let regions = info.memory_regions();
    for region in regions {
        assert!(region.start <= region.end, "a region ends before it starts: {region:?}");
    }
    let usable = info.usable_bytes();
    let command_line = info.command_line();
    assert!(command_line.len() <= machine::bootinfo::MAX_COMMAND_LINE);
    let modules = info.modules().len();
    let rsdp = match info.rsdp {
        RsdpLocation::Unknown => "no rsdp",
        RsdpLocation::Physical(_) => "rsdp at",
        RsdpLocation::Copied { length, .. } => {
            assert!(length <= 36);
            "rsdp copied"
        }
    };
    format!("ok {} regions {} modules {} usable {}", regions.len().min(4), modules.min(2), rsdp, usable > 0)
}

impl Target for BootInfo {
    fn name(&self) -> &'static str {
        "boot-info"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        let mut rsdp = vec![0u8; 36];
        rsdp[..8].copy_from_slice(b"RSD PTR ");
        vec![
            pvh(&QEMU_MAP, &[(0x80_0000, 0x1000)], b"smp=4 quiet\0"),
            pvh(&QEMU_MAP[..1], &[], b"\0"),
            multiboot2(&[
                (1, b"console=ttyS0 smp=2\0".to_vec()),
                module_tag(0x80_0000, 0x90_0000, b"initramfs\0"),
                memory_map_tag(&QEMU_MAP),
                (14, rsdp[..20].to_vec()),
                (15, rsdp.clone()),
            ]),
        ]
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let regions: Vec<(u64, u64, u32)> = (0..random.below(6))
            .map(|_| (boundary_value(random), boundary_value(random), random.below(6) as u32))
            .collect();
        if random.coin() {
            let modules: Vec<(u64, u64)> = (0..random.below(10)).map(|_| (boundary_value(random), boundary_value(random))).collect();
            let mut bytes = pvh(&regions, &modules[..modules.len().min(8)], b"x\0");
            // Counts and addresses that lie.
            for (at, width) in [(4usize, 4usize), (12, 4), (16, 8), (24, 8), (40, 8), (48, 4)] {
                if random.below(4) == 0 {
                    let value = boundary_value(random).to_le_bytes();
                    bytes[at..at + width].copy_from_slice(&value[..width]);
                }
            }
            bytes
        } else {
            let mut tags = vec![memory_map_tag(&regions)];
            for _ in 0..random.below(4) {
                let kind = [1u32, 3, 6, 14, 15, boundary_value(random) as u32][random.below(6)];
                let body: Vec<u8> = (0..random.below(48)).map(|_| random.next_u64() as u8).collect();
                tags.push((kind, body));
            }
            let mut bytes = multiboot2(&tags);
            if random.below(3) == 0 {
                let at = 8 * random.below(bytes.len() / 8);
                let value = boundary_value(random) as u32;
                put32(&mut bytes, at + 4 * random.below(2), value);
            }
            bytes
        }
    }

    fn max_len(&self) -> usize {
        8192
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        let is_pvh = input.get(..4) == Some(&PVH_MAGIC.to_le_bytes()[..]);
        if is_pvh {
            return vec![0..56, 0x100..0x160, 0x300..0x340];
        }
        // The tag headers of a multiboot2 block.
        let mut ranges = vec![0..8];
        let mut at = 8usize;
        while at + 8 <= input.len() && ranges.len() < 16 {
            let size = u32::from_le_bytes(input[at + 4..at + 8].try_into().unwrap()) as usize;
            ranges.push(at..(at + 24).min(input.len()));
            if size < 8 {
                break;
            }
            at += size.next_multiple_of(8);
        }
        ranges
    }

    fn run(&self, input: &[u8]) -> String {
        let image = Image(input);
        let pvh = parse_pvh(&image, BASE).map_or_else(|error| kind_of(&error), |info| walk(&info));
        let multiboot2 = parse_multiboot2(&image, BASE).map_or_else(|error| kind_of(&error), |info| walk(&info));
        format!("pvh {pvh} / multiboot2 {multiboot2}")
    }
}
