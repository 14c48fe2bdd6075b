//! Loading a Linux `vmlinux` for its PVH entry: the ELF's loadable
//! segments at their physical addresses, the entry point from the Xen ELF
//! note `XEN_ELFNOTE_PHYS32_ENTRY`, and an `hvm_start_info` (version 1:
//! command line, memory map, the initrd as module 0) for EBX. Every offset
//! read from the file is checked: a malformed ELF is an error message.

use crate::kvm::{GuestMemory, Regs, Segment, Sregs, Vcpu};

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const XEN_ELFNOTE_PHYS32_ENTRY: u32 = 18;
const START_INFO_MAGIC: u32 = 0x336E_C578;

/// Where the boot data goes in guest memory.
const GDT: u64 = 0x500;
const START_INFO: u64 = 0x6000;
const MEMORY_MAP: u64 = 0x6100;
const MODULES: u64 = 0x6200;
const COMMAND_LINE: u64 = 0x7000;
const LOW_MEMORY_END: u64 = 0x9_FC00;
const HIGH_MEMORY: u64 = 0x10_0000;

/// What the vCPU starts with.
pub struct Start {
    entry: u64,
    start_info: u64,
}

fn field<const N: usize>(bytes: &[u8], at: u64) -> Result<[u8; N], String> {
    let start = usize::try_from(at).map_err(|_| "offset too large")?;
    bytes.get(start..start + N).and_then(|slice| slice.try_into().ok()).ok_or_else(|| format!("the ELF file ends before offset {at:#x}"))
}

fn u16_at(bytes: &[u8], at: u64) -> Result<u16, String> {
    field::<2>(bytes, at).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], at: u64) -> Result<u32, String> {
    field::<4>(bytes, at).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], at: u64) -> Result<u64, String> {
    field::<8>(bytes, at).map(u64::from_le_bytes)
}

fn put(memory: &mut GuestMemory, at: u64, bytes: &[u8]) -> Result<(), String> {
    memory.slice_mut(at, bytes.len()).ok_or_else(|| format!("{} bytes at {at:#x} do not fit the guest's memory", bytes.len()))?.copy_from_slice(bytes);
    Ok(())
}

/// Loads `kernel` (and `initrd`, `cmdline`) into `memory`.
pub fn load(memory: &mut GuestMemory, kernel: &[u8], initrd: Option<&[u8]>, cmdline: &str) -> Result<Start, String> {
    if kernel.get(0..4) != Some(b"\x7fELF") || kernel.get(4) != Some(&2) {
        return Err("the kernel is not a 64-bit ELF file (a vmlinux)".into());
    }
    let (header_offset, header_size, headers) = (u64_at(kernel, 0x20)?, u64::from(u16_at(kernel, 0x36)?), u64::from(u16_at(kernel, 0x38)?));
    let mut entry = None;
    for index in 0..headers {
        let header = header_offset + index * header_size;
        let (kind, offset, physical, file_size, memory_size) = (u32_at(kernel, header)?, u64_at(kernel, header + 8)?, u64_at(kernel, header + 24)?, u64_at(kernel, header + 32)?, u64_at(kernel, header + 40)?);
        let contents = usize::try_from(offset).ok().zip(usize::try_from(file_size).ok()).and_then(|(start, length)| kernel.get(start..start.checked_add(length)?));
        let contents = contents.ok_or_else(|| format!("segment {index} lies outside the file"))?;
        match kind {
            PT_LOAD => {
                let zeroed = usize::try_from(memory_size).map_err(|_| "segment too large")?;
                memory.slice_mut(physical, zeroed).ok_or_else(|| format!("segment {index} ({memory_size:#x} bytes at {physical:#x}) does not fit the guest's memory"))?.fill(0);
                put(memory, physical, contents)?;
            }
            PT_NOTE => entry = entry.or(pvh_entry(contents)?),
            _ => {}
        }
    }
    let entry = entry.ok_or("the kernel has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)")?;
    let memory_end = memory.size() as u64;
    let mut command_line = cmdline.as_bytes().to_vec();
    command_line.push(0);
    put(memory, COMMAND_LINE, &command_line)?;
    // The memory map: low memory, the hole below 1 MiB, the rest.
    let map = [(0, LOW_MEMORY_END, 1u32), (LOW_MEMORY_END, HIGH_MEMORY - LOW_MEMORY_END, 2), (HIGH_MEMORY, memory_end - HIGH_MEMORY, 1)];
    for (index, (address, size, kind)) in map.iter().enumerate() {
        let mut entry_bytes = [0u8; 24];
        entry_bytes[0..8].copy_from_slice(&address.to_le_bytes());
        entry_bytes[8..16].copy_from_slice(&size.to_le_bytes());
        entry_bytes[16..20].copy_from_slice(&kind.to_le_bytes());
        put(memory, MEMORY_MAP + 24 * index as u64, &entry_bytes)?;
    }
    let mut modules = 0u32;
    if let Some(initrd) = initrd {
        // At the top of memory, page-aligned.
        let at = (memory_end - initrd.len() as u64) & !0xFFF;
        put(memory, at, initrd)?;
        let mut module = [0u8; 32];
        module[0..8].copy_from_slice(&at.to_le_bytes());
        module[8..16].copy_from_slice(&(initrd.len() as u64).to_le_bytes());
        put(memory, MODULES, &module)?;
        modules = 1;
    }
    let mut info = [0u8; 56];
    info[0..4].copy_from_slice(&START_INFO_MAGIC.to_le_bytes());
    info[4..8].copy_from_slice(&1u32.to_le_bytes());
    info[12..16].copy_from_slice(&modules.to_le_bytes());
    info[16..24].copy_from_slice(&MODULES.to_le_bytes());
    info[24..32].copy_from_slice(&COMMAND_LINE.to_le_bytes());
    info[40..48].copy_from_slice(&MEMORY_MAP.to_le_bytes());
    info[48..52].copy_from_slice(&(map.len() as u32).to_le_bytes());
    put(memory, START_INFO, &info)?;
    // A flat GDT (null, null, code 0x10, data 0x18), as the segments below.
    let gdt: [u64; 4] = [0, 0, 0x00CF_9B00_0000_FFFF, 0x00CF_9300_0000_FFFF];
    let gdt_bytes: Vec<u8> = gdt.iter().flat_map(|descriptor| descriptor.to_le_bytes()).collect();
    put(memory, GDT, &gdt_bytes)?;
    Ok(Start { entry, start_info: START_INFO })
}

/// The PVH entry point in a note segment, if it holds one.
fn pvh_entry(notes: &[u8]) -> Result<Option<u64>, String> {
    let align = |value: u64| (value + 3) & !3;
    let mut at = 0u64;
    while at + 12 <= notes.len() as u64 {
        let (name_size, description_size, kind) = (u64::from(u32_at(notes, at)?), u64::from(u32_at(notes, at + 4)?), u32_at(notes, at + 8)?);
        let name_at = at + 12;
        let description_at = name_at + align(name_size);
        let name = notes.get(name_at as usize..(name_at + name_size) as usize).ok_or("a note's name runs past its segment")?;
        if name == b"Xen\0" && kind == XEN_ELFNOTE_PHYS32_ENTRY {
            return Ok(Some(match description_size {
                4 => u64::from(u32_at(notes, description_at)?),
                8 => u64_at(notes, description_at)?,
                other => return Err(format!("a PVH entry note of {other} bytes")),
            }));
        }
        at = description_at + align(description_size);
    }
    Ok(None)
}

fn flat(selector: u16, kind: u8) -> Segment {
    Segment { base: 0, limit: 0xFFFF_FFFF, selector, kind, present: 1, dpl: 0, db: 1, s: 1, l: 0, g: 1, avl: 0, unusable: 0, padding: 0 }
}

/// The PVH boot state: 32-bit protected mode with flat segments, paging
/// off, EBX pointing at the start info.
pub fn enter_protected_mode(vcpu: &Vcpu, start: &Start) -> std::io::Result<()> {
    let mut sregs: Sregs = vcpu.sregs()?;
    sregs.cs = flat(0x10, 0xB);
    let data = flat(0x18, 0x3);
    (sregs.ds, sregs.es, sregs.fs, sregs.gs, sregs.ss) = (data, data, data, data, data);
    sregs.tr = Segment { limit: 0x67, kind: 0xB, present: 1, ..Segment::default() };
    sregs.gdt.base = GDT;
    sregs.gdt.limit = 31;
    sregs.cr0 = 0x11;
    sregs.cr4 = 0;
    sregs.efer = 0;
    vcpu.set_sregs(&sregs)?;
    vcpu.set_regs(&Regs { rip: start.entry, rbx: start.start_info, rflags: 2, ..Regs::default() })
}
