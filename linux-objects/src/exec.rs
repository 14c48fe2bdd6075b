//! Building a program's address space: the ELF load plan's segments in
//! fresh frames (file bytes copied, the rest zero), a demand-zero stack
//! with the initial stack Linux gives (argc, argv, envp, auxv) at its top,
//! and the vDSO (`vdso.rs`), where the layout (`linux_abi::address_layout`,
//! randomised or fixed) puts them.
//!
//! Must never leave a half-built space behind: every refusal destroys
//! what was built.

use alloc::vec::Vec;

use containers::ContainerId;
use kernel_objects::capabilities::memory_objects;

use crate::exec_cache::{self, FileKey, SegmentShape};
use linux_abi::address_layout::AddressLayout;
use linux_abi::{auxv, interpreter_plan_at, load_plan_at, ElfError, InitialStack, LoadPlan};
use kernel_objects::OwnedFrame;
use vmem::{Rights, PAGE_SIZE};

use kernel_objects::user_memory::{write_user, PendingFlush};
use kernel_objects::address_spaces::{destroy_space, new_space, KernelSpace};
use linux_abi::Errno;

/// The main thread's stack is as big as the soft `RLIMIT_STACK` (8 MiB by
/// default, as on Linux), within these bounds (an unlimited stack gets the
/// most; the region costs nothing until touched).
pub const STACK_BYTES_LEAST: u64 = 128 << 10;
/// See [`STACK_BYTES_LEAST`]; far above the mmap area at any layout.
pub const STACK_BYTES_MOST: u64 = 1 << 30;

/// The stack a program gets under a soft `RLIMIT_STACK` of `limit` bytes.
pub fn stack_bytes(limit: u64) -> u64 {
    limit.clamp(STACK_BYTES_LEAST, STACK_BYTES_MOST) & !(PAGE_SIZE - 1)
}

/// A program ready to run.
pub struct Image {
    pub memory: KernelSpace,
    pub entry: u64,
    pub stack_pointer: u64,
    /// Where `brk` starts.
    pub break_start: u64,
    /// Where new mappings go (downwards): below the vDSO.
    pub mmap_next: u64,
}

/// Why a file could not be run.
#[derive(Debug)]
pub enum ExecError {
    /// Not a program we can load (`ENOEXEC`), with why.
    Format(ElfError),
    /// Anything else.
    Errno(Errno),
}

impl From<Errno> for ExecError {
    fn from(errno: Errno) -> Self {
        ExecError::Errno(errno)
    }
}

impl core::fmt::Display for ExecError {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ExecError::Format(reason) => write!(formatter, "not a program Lamina can load ({reason:?})"),
            ExecError::Errno(errno) => write!(formatter, "{errno:?}"),
        }
    }
}

impl ExecError {
    /// The errno `execve` returns.
    pub fn errno(&self) -> Errno {
        match self {
            ExecError::Format(_) => Errno::ENOEXEC,
            ExecError::Errno(errno) => *errno,
        }
    }
}

/// Where a program's interpreter file comes from: its contents by path
/// (borrowed from a tmpfs, read from a disk) and its key in the
/// [`exec_cache`](crate::exec_cache) (`None`: not cached).
pub type InterpreterFiles<'f> = dyn Fn(&[u8]) -> Result<(alloc::borrow::Cow<'f, [u8]>, Option<FileKey>), Errno> + 'f;

/// Builds the address space for `file`, charged to `container`, at
/// `layout`, with a stack for a soft `RLIMIT_STACK` of `stack_limit`. A
/// dynamically linked program gets its interpreter (read through
/// `interpreter_files`) mapped too, at the mmap area's top, and starts
/// there.
#[allow(clippy::too_many_arguments)] // each is a separate input of execve
pub fn build<'f>(
    container: ContainerId,
    file: &'f [u8],
    file_key: Option<FileKey>,
    interpreter_files: &InterpreterFiles<'f>,
    arguments: &[&[u8]],
    environment: &[&[u8]],
    random: [u8; 16],
    stack_limit: u64,
    layout: AddressLayout,
) -> Result<Image, ExecError> {
    let plan = load_plan_at(file, layout.pie_base).map_err(ExecError::Format)?;
    let interpreter = match &plan.interpreter {
        Some(path) => {
            let (contents, key) = interpreter_files(path)?;
            Some((interpreter_plan_at(&contents, layout.mmap_top).map_err(ExecError::Format)?, contents, key))
        }
        None => None,
    };
    let mut memory = new_space(container).map_err(|_| Errno::ENOMEM)?;
    let interpreter = interpreter.as_ref().map(|(plan, contents, key)| (plan, &**contents, *key));
    let entry = interpreter.map_or(plan.entry, |(interpreter, _, _)| interpreter.entry);
    match fill(&mut memory, container, (&plan, file, file_key), interpreter, arguments, environment, random, stack_bytes(stack_limit), &layout) {
        Ok(stack_pointer) => Ok(Image {
            memory,
            entry,
            stack_pointer,
            break_start: plan.end + layout.break_offset,
            mmap_next: linux_abi::vdso::data_page_address(layout.mmap_top),
        }),
        Err(error) => {
            destroy_space(memory);
            Err(error)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn fill(
    memory: &mut KernelSpace,
    container: ContainerId,
    (plan, file, file_key): (&LoadPlan, &[u8], Option<FileKey>),
    interpreter: Option<(&LoadPlan, &[u8], Option<FileKey>)>,
    arguments: &[&[u8]],
    environment: &[&[u8]],
    random: [u8; 16],
    stack: u64,
    layout: &AddressLayout,
) -> Result<u64, ExecError> {
    map_segments(memory, container, plan, file, file_key)?;
    if let Some((interpreter_plan, interpreter_file, interpreter_key)) = interpreter {
        map_segments(memory, container, interpreter_plan, interpreter_file, interpreter_key)?;
    }
    memory.add_demand_zero(layout.stack_top - stack, stack, Rights::READ_WRITE).map_err(|_| Errno::ENOMEM)?;
    let vdso = crate::vdso::map_into(memory, layout.mmap_top)?;
    let hardware_capabilities = u64::from(machine::cpu::cpuid(1, 0).edx);
    let auxiliary: Vec<(u64, u64)> = [
        (auxv::AT_PHDR, plan.program_headers),
        (auxv::AT_PHENT, plan.program_header_size),
        (auxv::AT_PHNUM, plan.program_header_count),
        (auxv::AT_PAGESZ, PAGE_SIZE),
        (auxv::AT_BASE, interpreter.map_or(0, |(interpreter, _, _)| interpreter.base)),
        (auxv::AT_FLAGS, 0),
        (auxv::AT_ENTRY, plan.entry),
        (auxv::AT_UID, 0),
        (auxv::AT_EUID, 0),
        (auxv::AT_GID, 0),
        (auxv::AT_EGID, 0),
        (auxv::AT_HWCAP, hardware_capabilities),
        (auxv::AT_CLKTCK, 100),
        (auxv::AT_SECURE, 0),
    ]
    .into_iter()
    .chain(vdso.map(|address| (auxv::AT_SYSINFO_EHDR, address)))
    .collect();
    let stack = InitialStack::build(layout.stack_start, arguments, environment, &auxiliary, random).map_err(|error| match error {
        linux_abi::StackError::TooBig => Errno::E2BIG,
        linux_abi::StackError::OutOfMemory => Errno::ENOMEM,
    })?;
    let mut flush = PendingFlush::default();
    write_user(memory, stack.pointer, &stack.bytes, &mut flush)?;
    flush.carry_out(); // the space never ran: nothing to flush in practice
    Ok(stack.pointer)
}

/// Maps `plan`'s segments with their bytes from `file`: a read-only
/// segment of a file with a `key` from the [`exec_cache`](crate::exec_cache)
/// (shared, made on first use), the others copied now.
fn map_segments(memory: &mut KernelSpace, container: ContainerId, plan: &LoadPlan, file: &[u8], key: Option<FileKey>) -> Result<(), ExecError> {
    for segment in &plan.segments {
        let rights = Rights::new(segment.read || segment.execute, segment.write, segment.execute).map_err(|_| ExecError::Format(ElfError::BadSegment))?;
        let first_page = segment.address & !(PAGE_SIZE - 1);
        let end = (segment.address + segment.memory_length).next_multiple_of(PAGE_SIZE);
        let file_bytes = file
            .get(segment.file_offset as usize..(segment.file_offset + segment.file_length) as usize)
            .ok_or(ExecError::Format(ElfError::BadSegment))?;
        if let Some(key) = key.filter(|_| !segment.write) {
            // Named by its address before relocation, so that every
            // randomised base finds the one entry (the bytes do not move
            // within their pages).
            let shape = SegmentShape { address: segment.address - plan.base, file_offset: segment.file_offset, file_length: segment.file_length, memory_length: segment.memory_length };
            let fill = |handle| memory_objects::write(handle, segment.address - first_page, file_bytes);
            let cached = exec_cache::segment(key, shape, (end - first_page) / PAGE_SIZE, fill);
            let mut rollback = None;
            let mapped = cached.is_some_and(|handle| memory_objects::map_private_into_space(memory, first_page, handle, rights, &mut rollback).is_ok());
            if let Some(flush) = rollback {
                kernel_objects::address_spaces::carry_out(flush); // the space never ran: nothing to flush in practice
            }
            if mapped {
                continue;
            }
        }
        for page in (first_page..end).step_by(PAGE_SIZE as usize) {
            let mut frame = OwnedFrame::allocate(container).map_err(|_| Errno::ENOMEM)?;
            // The part of the file's bytes that lands in this page.
            let start = page.max(segment.address);
            let stop = (page + PAGE_SIZE).min(segment.address + segment.file_length);
            let mut filled = frame.zero();
            if start < stop {
                let from = (start - segment.address) as usize;
                let to = (stop - segment.address) as usize;
                filled &= frame.write_bytes((start - page) as usize, &file_bytes[from..to]);
            }
            if !filled {
                return Err(ExecError::Errno(Errno::ENOMEM));
            }
            // The space takes the frame over; on an error `map` drops it,
            // freed with its charge.
            match memory.map(page, frame, rights) {
                Ok(()) => {}
                Err(error) => {
                    return Err(ExecError::Errno(match error {
                        vmem::VmError::OutOfMemory => Errno::ENOMEM,
                        _ => Errno::ENOEXEC,
                    }))
                }
            }
        }
    }
    Ok(())
}
