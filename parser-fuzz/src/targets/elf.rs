//! ELF executables and interpreters: `linux_abi::elf_plan`'s `load_plan` and
//! `interpreter_plan`, whose every accepted plan is checked against what the
//! kernel relies on when it maps it (segments inside the file and inside
//! user space, sorted, not sharing a page, the entry in code, the
//! interpreter path without NUL). A plan that breaks one is a bug: a panic.
//! Hot ranges: the ELF header and the program header table.

use std::ops::Range;

use linux_abi::{interpreter_plan, load_plan, LoadPlan};

use crate::{boundary_value, kind_of, Rng, Target};

/// The ELF target.
pub struct Elf;

const HEADER: usize = 64;
const PROGRAM_HEADER: usize = 56;
const USER_END: u64 = 0x8000_0000_0000;

/// A well-formed static executable: the header, `phnum` program headers
/// and a page of code, built by hand.
fn executable(segments: &[(u32, u32, u64, u64, u64, u64)], entry: u64, kind: u16, interpreter: Option<&[u8]>) -> Vec<u8> {
    let mut file = vec![0u8; 0x2000];
    file[..4].copy_from_slice(b"\x7fELF");
    file[4] = 2; // 64-bit
    file[5] = 1; // little-endian
    file[6] = 1;
    file[16..18].copy_from_slice(&kind.to_le_bytes());
    file[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
    file[20..24].copy_from_slice(&1u32.to_le_bytes());
    file[24..32].copy_from_slice(&entry.to_le_bytes());
    file[32..40].copy_from_slice(&(HEADER as u64).to_le_bytes());
    file[52..54].copy_from_slice(&(HEADER as u16).to_le_bytes());
    file[54..56].copy_from_slice(&(PROGRAM_HEADER as u16).to_le_bytes());
    let count = segments.len() + usize::from(interpreter.is_some());
    file[56..58].copy_from_slice(&(count as u16).to_le_bytes());
    let mut at = HEADER;
    let mut put = |file: &mut Vec<u8>, fields: (u32, u32, u64, u64, u64, u64)| {
        let (kind, flags, offset, address, file_size, memory_size) = fields;
        file[at..at + 4].copy_from_slice(&kind.to_le_bytes());
        file[at + 4..at + 8].copy_from_slice(&flags.to_le_bytes());
        file[at + 8..at + 16].copy_from_slice(&offset.to_le_bytes());
        file[at + 16..at + 24].copy_from_slice(&address.to_le_bytes());
        file[at + 24..at + 32].copy_from_slice(&address.to_le_bytes());
        file[at + 32..at + 40].copy_from_slice(&file_size.to_le_bytes());
        file[at + 40..at + 48].copy_from_slice(&memory_size.to_le_bytes());
        file[at + 48..at + 56].copy_from_slice(&0x1000u64.to_le_bytes());
        at += PROGRAM_HEADER;
    };
    if let Some(path) = interpreter {
        let offset = 0x400u64;
        file[offset as usize..offset as usize + path.len()].copy_from_slice(path);
        put(&mut file, (3, 4, offset, 0, path.len() as u64, path.len() as u64));
    }
    for segment in segments {
        put(&mut file, *segment);
    }
    file
}

fn samples() -> Vec<Vec<u8>> {
    let code = (1u32, 5u32, 0u64, 0x40_0000u64, 0x1000u64, 0x1000u64);
    let data = (1u32, 6u32, 0x1000u64, 0x40_1000u64, 0x1000u64, 0x3000u64);
    let mut samples = vec![
        executable(&[code, data], 0x40_0100, 2, None),
        executable(&[(1, 5, 0, 0, 0x1000, 0x1000), (1, 6, 0x1000, 0x1000, 0x800, 0x2000)], 0x100, 3, None),
        executable(&[(1, 5, 0, 0, 0x1000, 0x1000)], 0x80, 3, Some(b"/lib/ld-musl-x86_64.so.1\0")),
    ];
    // A real program of this machine, if it is small enough.
    for path in ["/usr/bin/true", "/bin/true"] {
        if let Ok(bytes) = std::fs::read(path) {
            if bytes.len() <= Elf.max_len() {
                samples.push(bytes);
                break;
            }
        }
    }
    samples
}

/// Panics if an accepted plan breaks what the loader relies on.
fn check_plan(plan: &LoadPlan, file: &[u8]) {
    let mut previous_end = 0u64;
    let mut entry_in_code = false;
    for segment in &plan.segments {
        let file_end = segment.file_offset.checked_add(segment.file_length).expect("file range overflows");
        assert!(file_end <= file.len() as u64, "a segment reaches past the file: {segment:?}");
        assert!(segment.file_length <= segment.memory_length, "more file than memory: {segment:?}");
        let end = segment.address.checked_add(segment.memory_length).expect("address range overflows");
        assert!(segment.address >= 4096 && end <= USER_END, "a segment outside user space: {segment:?}");
        assert!(segment.address & !4095 >= previous_end, "segments share a page or are unsorted: {plan:?}");
        previous_end = end.next_multiple_of(4096);
        entry_in_code |= segment.execute && (segment.address..end).contains(&plan.entry);
    }
    assert!(entry_in_code, "the entry is in no code segment: {plan:?}");
    assert!(plan.end >= previous_end, "brk starts inside a segment: {plan:?}");
    if let Some(path) = &plan.interpreter {
        assert!(!path.is_empty() && !path.contains(&0) && path.len() < 4096, "a bad interpreter path was accepted");
    }
}

impl Target for Elf {
    fn name(&self) -> &'static str {
        "elf"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        samples()
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let count = random.below(5);
        let near = |random: &mut Rng| [0u64, 0x1000, 0x40_0000, 0x7fff_ffff_f000, USER_END - 0x1000, boundary_value(random)][random.below(6)];
        let segments: Vec<_> = (0..count)
            .map(|_| {
                let kind = [1u32, 1, 1, 3, 6, 2, 0x6474_e551, boundary_value(random) as u32][random.below(8)];
                let size = [0u64, 1, 0x800, 0x1000, 0x3000, boundary_value(random)][random.below(6)];
                let memory = if random.coin() { size } else { size.wrapping_add(boundary_value(random) & 0xffff) };
                (kind, random.below(8) as u32, [0u64, 0x400, 0x1000, boundary_value(random)][random.below(4)], near(random), size, memory)
            })
            .collect();
        let kind = [2u16, 3, 1, 4, boundary_value(random) as u16][random.below(5)];
        let interpreter: Option<&[u8]> = [None, Some(&b"/lib/ld.so\0"[..]), Some(&b"\0"[..]), Some(&b"a\0b\0"[..])][random.below(4)];
        executable(&segments, near(random).wrapping_add(random.below(0x2000) as u64), kind, interpreter)
    }

    fn max_len(&self) -> usize {
        64 * 1024
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        let table = input.get(32..40).map_or(HEADER, |bytes| u64::from_le_bytes(bytes.try_into().unwrap()) as usize);
        let count = input.get(56..58).map_or(0, |bytes| u16::from_le_bytes([bytes[0], bytes[1]]) as usize);
        let mut ranges = vec![0..HEADER.min(input.len())];
        if table < input.len() {
            ranges.push(table..(table + count.min(16) * PROGRAM_HEADER).min(input.len()).max(table + 1));
        }
        ranges
    }

    fn run(&self, input: &[u8]) -> String {
        let program = match load_plan(input) {
            Ok(plan) => {
                check_plan(&plan, input);
                format!("ok {} segments{}", plan.segments.len().min(4), if plan.interpreter.is_some() { " +interpreter" } else { "" })
            }
            Err(error) => kind_of(&error),
        };
        let interpreter = match interpreter_plan(input) {
            Ok(plan) => {
                check_plan(&plan, input);
                assert!(plan.interpreter.is_none(), "an interpreter with an interpreter was accepted");
                "ok".to_string()
            }
            Err(error) => kind_of(&error),
        };
        format!("{program} / {interpreter}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_built_samples_are_accepted() {
        for sample in samples().iter().take(3) {
            assert!(Elf.run(sample).starts_with("ok"), "{}", Elf.run(sample));
        }
    }
}
