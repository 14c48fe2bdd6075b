//! From an ELF executable to a load plan: the segments to map (address,
//! size, rights, and which bytes of the file fill them), the entry point
//! and where the program headers are for `AT_PHDR`. Static executables
//! load at their own addresses; position-independent ones (`ET_DYN`) at
//! [`PIE_BASE`]. A dynamically linked program names its interpreter
//! (`PT_INTERP`, e.g. glibc's `/lib64/ld-linux-x86-64.so.2`), which
//! [`interpreter_plan`] loads at [`INTERPRETER_BASE`]; the kernel starts the
//! interpreter, which maps the libraries and jumps to the program.
//!
//! Must never trust the file: every offset, size and address is checked,
//! with overflow, before it is used.

use alloc::vec::Vec;

use elf::abi::{EM_X86_64, ET_DYN, ET_EXEC, PF_R, PF_W, PF_X, PT_INTERP, PT_LOAD, PT_PHDR};
use elf::endian::LittleEndian;
use elf::ElfBytes;

pub use crate::address_layout::PIE_BASE;
/// Where a program's interpreter is loaded without randomisation: at the
/// top of the area `mmap` hands out downwards (so its own mappings land
/// below it); [`crate::address_layout`] moves both together.
pub const INTERPRETER_BASE: u64 = crate::address_layout::MMAP_TOP;
/// Longest interpreter path accepted (Linux: a page).
const MAX_INTERPRETER_PATH: u64 = 4096;
use vmem::USER_END;
const PAGE: u64 = 4096;

/// Why an executable was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ElfError {
    /// Not an ELF file, or one the parser could not read.
    Malformed,
    /// Not a 64-bit little-endian x86-64 executable.
    WrongMachine,
    /// Neither `ET_EXEC` nor `ET_DYN`.
    NotExecutable,
    /// An interpreter that asks for an interpreter itself, or is not
    /// position-independent.
    Dynamic,
    /// No loadable segment.
    NothingToLoad,
    /// A segment lies outside the file or outside user space, overlaps
    /// another, or has a bad size or alignment.
    BadSegment,
    /// The entry point lies in no executable segment.
    BadEntry,
}

/// One region to map.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Segment {
    /// First byte's address (not necessarily page-aligned).
    pub address: u64,
    /// Bytes in memory (the part past `file_length` is zero).
    pub memory_length: u64,
    /// Where its initialised bytes are in the file.
    pub file_offset: u64,
    /// How many bytes come from the file.
    pub file_length: u64,
    /// Readable, writable, executable.
    pub read: bool,
    /// See `read`.
    pub write: bool,
    /// See `read`.
    pub execute: bool,
}

/// What to map and where to start.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LoadPlan {
    /// The segments, sorted by address, not overlapping page-wise.
    pub segments: Vec<Segment>,
    /// The entry point (relocated for PIE).
    pub entry: u64,
    /// Where the program headers are in memory (`AT_PHDR`), if mapped.
    pub program_headers: u64,
    /// `AT_PHNUM`.
    pub program_header_count: u64,
    /// `AT_PHENT`.
    pub program_header_size: u64,
    /// What was added to every address (0 for `ET_EXEC`).
    pub base: u64,
    /// The first page-aligned address past the last segment: where `brk`
    /// starts.
    pub end: u64,
    /// The interpreter's path (`PT_INTERP`, without its NUL), if any.
    pub interpreter: Option<Vec<u8>>,
}

/// The load plan for the executable `file` (a position-independent one
/// at [`PIE_BASE`]).
pub fn load_plan(file: &[u8]) -> Result<LoadPlan, ElfError> {
    load_plan_at(file, PIE_BASE)
}

/// The load plan for the executable `file`, a position-independent one at
/// `pie_base` (page-aligned).
pub fn load_plan_at(file: &[u8], pie_base: u64) -> Result<LoadPlan, ElfError> {
    plan(file, pie_base)
}

/// The load plan for the interpreter `file` a program named: a
/// position-independent object with no interpreter of its own, at
/// [`INTERPRETER_BASE`].
pub fn interpreter_plan(file: &[u8]) -> Result<LoadPlan, ElfError> {
    interpreter_plan_at(file, INTERPRETER_BASE)
}

/// [`interpreter_plan`] at `base` (page-aligned, not 0).
pub fn interpreter_plan_at(file: &[u8], base: u64) -> Result<LoadPlan, ElfError> {
    let plan = plan(file, base)?;
    if plan.interpreter.is_some() || plan.base != base {
        return Err(ElfError::Dynamic);
    }
    Ok(plan)
}

fn plan(file: &[u8], position_independent_base: u64) -> Result<LoadPlan, ElfError> {
    let parsed = ElfBytes::<LittleEndian>::minimal_parse(file).map_err(|_| ElfError::Malformed)?;
    let header = parsed.ehdr;
    if header.class != elf::file::Class::ELF64 || header.e_machine != EM_X86_64 {
        return Err(ElfError::WrongMachine);
    }
    let base = match header.e_type {
        ET_EXEC => 0,
        ET_DYN => position_independent_base,
        _ => return Err(ElfError::NotExecutable),
    };
    let table = parsed.segments().ok_or(ElfError::NothingToLoad)?;
    let mut segments = Vec::new();
    let mut program_headers = None;
    let mut interpreter = None;
    for header in table.iter() {
        match header.p_type {
            PT_INTERP => interpreter = Some(interpreter_path(file, header.p_offset, header.p_filesz)?),
            PT_PHDR => program_headers = Some(header.p_vaddr),
            PT_LOAD if header.p_memsz > 0 => {
                let address = header.p_vaddr.checked_add(base).ok_or(ElfError::BadSegment)?;
                let segment = Segment {
                    address,
                    memory_length: header.p_memsz,
                    file_offset: header.p_offset,
                    file_length: header.p_filesz,
                    read: header.p_flags & PF_R != 0,
                    write: header.p_flags & PF_W != 0,
                    execute: header.p_flags & PF_X != 0,
                };
                check_segment(&segment, header.p_align, file.len() as u64)?;
                segments.try_reserve(1).map_err(|_| ElfError::Malformed)?;
                segments.push(segment);
            }
            _ => {}
        }
    }
    if segments.is_empty() {
        return Err(ElfError::NothingToLoad);
    }
    segments.sort_unstable_by_key(|segment| segment.address);
    for pair in segments.windows(2) {
        if page_end(&pair[0]) > page_start(&pair[1]) {
            return Err(ElfError::BadSegment);
        }
    }
    let entry = header.e_entry.checked_add(base).ok_or(ElfError::BadEntry)?;
    let entry_is_code = segments.iter().any(|segment| {
        segment.execute && entry >= segment.address && entry < segment.address + segment.memory_length
    });
    if !entry_is_code {
        return Err(ElfError::BadEntry);
    }
    let program_headers = match program_headers {
        Some(address) => address.checked_add(base).ok_or(ElfError::BadSegment)?,
        // No PT_PHDR (common for static executables): the headers are
        // where the first segment maps the file's `e_phoff`, if it does.
        None => segments
            .iter()
            .find(|segment| segment.file_offset <= header.e_phoff && header.e_phoff < segment.file_offset + segment.file_length)
            .map_or(0, |segment| segment.address + (header.e_phoff - segment.file_offset)),
    };
    let end = segments.iter().map(page_end).max().unwrap_or(0);
    Ok(LoadPlan {
        segments,
        entry,
        program_headers,
        program_header_count: u64::from(header.e_phnum),
        program_header_size: u64::from(header.e_phentsize),
        base,
        end,
        interpreter,
    })
}

/// The NUL-terminated path at `offset` of `file`, `length` bytes with the
/// NUL: non-empty, no other NUL, at most a page.
fn interpreter_path(file: &[u8], offset: u64, length: u64) -> Result<Vec<u8>, ElfError> {
    if length < 2 || length > MAX_INTERPRETER_PATH {
        return Err(ElfError::Malformed);
    }
    let end = offset.checked_add(length).ok_or(ElfError::Malformed)?;
    let bytes = file.get(offset as usize..end as usize).ok_or(ElfError::Malformed)?;
    let (last, path) = bytes.split_last().ok_or(ElfError::Malformed)?;
    if *last != 0 || path.contains(&0) {
        return Err(ElfError::Malformed);
    }
    let mut owned = Vec::new();
    owned.try_reserve_exact(path.len()).map_err(|_| ElfError::Malformed)?;
    owned.extend_from_slice(path);
    Ok(owned)
}

fn check_segment(segment: &Segment, align: u64, file_length: u64) -> Result<(), ElfError> {
    let file_end = segment.file_offset.checked_add(segment.file_length).ok_or(ElfError::BadSegment)?;
    let memory_end = segment.address.checked_add(segment.memory_length).ok_or(ElfError::BadSegment)?;
    let aligned = align <= 1 || (align.is_power_of_two() && segment.address % PAGE == segment.file_offset % PAGE);
    let inside = file_end <= file_length && segment.file_length <= segment.memory_length && memory_end <= USER_END;
    if !aligned || !inside || segment.address < PAGE {
        return Err(ElfError::BadSegment);
    }
    Ok(())
}

fn page_start(segment: &Segment) -> u64 {
    segment.address & !(PAGE - 1)
}

fn page_end(segment: &Segment) -> u64 {
    (segment.address + segment.memory_length).next_multiple_of(PAGE)
}
