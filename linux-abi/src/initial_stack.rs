//! The stack a new Linux program starts with (System V x86-64 ABI §3.4.1
//! and Linux's `create_elf_tables`): from the initial `rsp` up, `argc`,
//! the `argv` pointers and a NULL, the `envp` pointers and a NULL, the
//! auxiliary vector of (type, value) pairs ending with `AT_NULL`; above
//! them the 16 random bytes of `AT_RANDOM`, the platform string and the
//! argument and environment strings. `rsp` is 16-byte aligned.
//!
//! Built as bytes for a stack whose top is at a given address; the kernel
//! copies them into the top pages of the new stack. Must never produce
//! pointers outside the bytes it returns.

use alloc::vec::Vec;

pub use crate::address_layout::STACK_TOP;
/// The most bytes the strings and vectors may take (Linux allows a
/// quarter of the stack rlimit; 128 KiB is `MAX_ARG_STRLEN`-sized and
/// plenty for shells).
const MAX_BYTES: usize = 256 * 1024;

/// Auxiliary vector types (`linux/auxvec.h`).
pub mod auxv {
    /// End of the vector.
    pub const AT_NULL: u64 = 0;
    /// Program headers' address.
    pub const AT_PHDR: u64 = 3;
    /// Size of one program header.
    pub const AT_PHENT: u64 = 4;
    /// Number of program headers.
    pub const AT_PHNUM: u64 = 5;
    /// Page size.
    pub const AT_PAGESZ: u64 = 6;
    /// Interpreter base (0: none).
    pub const AT_BASE: u64 = 7;
    /// Flags (0).
    pub const AT_FLAGS: u64 = 8;
    /// The program's entry point.
    pub const AT_ENTRY: u64 = 9;
    /// Real user id.
    pub const AT_UID: u64 = 11;
    /// Effective user id.
    pub const AT_EUID: u64 = 12;
    /// Real group id.
    pub const AT_GID: u64 = 13;
    /// Effective group id.
    pub const AT_EGID: u64 = 14;
    /// Platform string's address.
    pub const AT_PLATFORM: u64 = 15;
    /// CPU feature bits (CPUID.1:EDX).
    pub const AT_HWCAP: u64 = 16;
    /// Clock ticks per second for `times`.
    pub const AT_CLKTCK: u64 = 17;
    /// Secure mode (0).
    pub const AT_SECURE: u64 = 23;
    /// Address of 16 random bytes.
    pub const AT_RANDOM: u64 = 25;
    /// The executable's path string's address.
    pub const AT_EXECFN: u64 = 31;
    /// The vDSO's ELF header (not given while there is no vDSO).
    pub const AT_SYSINFO_EHDR: u64 = 33;
}

/// Why a stack could not be built.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StackError {
    /// The arguments and environment need more than the limit (`E2BIG`).
    TooBig,
    /// Kernel memory ran out.
    OutOfMemory,
}

/// The built stack: `bytes` go at `[top - bytes.len(), top)`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InitialStack {
    /// The stack's contents from the initial `rsp` to the top.
    pub bytes: Vec<u8>,
    /// The initial `rsp` (the address of `argc`).
    pub pointer: u64,
}

impl InitialStack {
    /// Builds the stack for a program with `arguments`, `environment` and
    /// auxiliary entries `auxiliary` (without `AT_RANDOM`, `AT_EXECFN`,
    /// `AT_PLATFORM` and `AT_NULL`, which are added here), for a stack
    /// ending at `top`.
    pub fn build(
        top: u64,
        arguments: &[&[u8]],
        environment: &[&[u8]],
        auxiliary: &[(u64, u64)],
        random: [u8; 16],
    ) -> Result<Self, StackError> {
        let strings: usize = arguments.iter().chain(environment).map(|text| text.len() + 1).sum();
        let words = 1 + arguments.len() + 1 + environment.len() + 1 + 2 * (auxiliary.len() + 4);
        let platform = b"x86_64\0";
        let execfn = arguments.first().copied().unwrap_or(b"");
        let estimate = strings + words * 8 + 16 + platform.len() + execfn.len() + 1 + 64;
        if estimate > MAX_BYTES {
            return Err(StackError::TooBig);
        }
        // Strings area, growing down from the top: filled low to high in a
        // buffer that will sit right below `top`.
        let mut strings_area = Vec::new();
        strings_area.try_reserve(strings + 64 + execfn.len()).map_err(|_| StackError::OutOfMemory)?;
        let mut offsets = Vec::new();
        offsets.try_reserve(arguments.len() + environment.len()).map_err(|_| StackError::OutOfMemory)?;
        for text in arguments.iter().chain(environment) {
            offsets.push(strings_area.len());
            strings_area.extend_from_slice(text);
            strings_area.push(0);
        }
        let execfn_offset = strings_area.len();
        strings_area.extend_from_slice(execfn);
        strings_area.push(0);
        let platform_offset = strings_area.len();
        strings_area.extend_from_slice(platform);
        let random_offset = strings_area.len();
        strings_area.extend_from_slice(&random);
        let strings_base = top - strings_area.len() as u64;

        let mut vector = Vec::new();
        vector.try_reserve(words).map_err(|_| StackError::OutOfMemory)?;
        vector.push(arguments.len() as u64);
        let address_of = |offset: usize| strings_base + offset as u64;
        vector.extend(offsets[..arguments.len()].iter().map(|&offset| address_of(offset)));
        vector.push(0);
        vector.extend(offsets[arguments.len()..].iter().map(|&offset| address_of(offset)));
        vector.push(0);
        for &(kind, value) in auxiliary {
            vector.extend([kind, value]);
        }
        vector.extend([auxv::AT_RANDOM, address_of(random_offset)]);
        vector.extend([auxv::AT_EXECFN, address_of(execfn_offset)]);
        vector.extend([auxv::AT_PLATFORM, address_of(platform_offset)]);
        vector.extend([auxv::AT_NULL, 0]);

        // The vector sits below the strings, with `rsp` 16-byte aligned.
        let vector_bytes = vector.len() as u64 * 8;
        let pointer = (strings_base - vector_bytes) & !15;
        let total = (top - pointer) as usize;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(total).map_err(|_| StackError::OutOfMemory)?;
        for word in &vector {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.resize(total - strings_area.len(), 0);
        bytes.extend_from_slice(&strings_area);
        Ok(Self { bytes, pointer })
    }
}
