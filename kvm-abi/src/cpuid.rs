//! The guest's CPUID table: `KVM_GET_SUPPORTED_CPUID` hands the VMM what
//! this hypervisor can offer, the VMM gives a vCPU its table with
//! `KVM_SET_CPUID2`, and every guest `cpuid` is answered from it.
//! `struct kvm_cpuid2` is a count (u32), padding, then `kvm_cpuid_entry2`s
//! of 40 bytes: function, index, flags, eax, ebx, ecx, edx, padding.

use alloc::vec::Vec;

/// Bytes of `kvm_cpuid_entry2`.
pub const ENTRY_BYTES: usize = 40;
/// The most entries a table may have (Linux's `KVM_MAX_CPUID_ENTRIES`).
pub const MAX_ENTRIES: usize = 256;
/// `KVM_CPUID_FLAG_SIGNIFCANT_INDEX`: the entry is for one subleaf.
pub const SIGNIFICANT_INDEX: u32 = 1;

/// One `kvm_cpuid_entry2`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuidEntry {
    /// The leaf (EAX).
    pub function: u32,
    /// The subleaf (ECX), when `flags` says it matters.
    pub index: u32,
    /// `KVM_CPUID_FLAG_*`.
    pub flags: u32,
    /// EAX, EBX, ECX, EDX.
    pub registers: [u32; 4],
}

impl CpuidEntry {
    /// Decodes one entry.
    pub fn decode(bytes: &[u8; ENTRY_BYTES]) -> CpuidEntry {
        let word = |index: usize| u32::from_le_bytes([bytes[index * 4], bytes[index * 4 + 1], bytes[index * 4 + 2], bytes[index * 4 + 3]]);
        CpuidEntry { function: word(0), index: word(1), flags: word(2), registers: [word(3), word(4), word(5), word(6)] }
    }

    /// The entry's bytes.
    pub fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut bytes = [0u8; ENTRY_BYTES];
        let words = [self.function, self.index, self.flags, self.registers[0], self.registers[1], self.registers[2], self.registers[3]];
        for (index, word) in words.iter().enumerate() {
            bytes[index * 4..index * 4 + 4].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// The answer to `cpuid` with `function` and `index` from `table`: the
/// entry for that leaf (and subleaf, where it matters), else zeros, as an
/// AMD CPU answers leaves it does not have.
pub fn answer(table: &[CpuidEntry], function: u32, index: u32) -> [u32; 4] {
    table
        .iter()
        .find(|entry| entry.function == function && (entry.flags & SIGNIFICANT_INDEX == 0 || entry.index == index))
        .map_or([0; 4], |entry| entry.registers)
}

/// Leaves whose subleaves differ, and how many subleaves to list of each.
pub fn subleaves(function: u32) -> u32 {
    match function {
        4 | 0x8000_001D => 4,
        7 | 0xB => 2,
        0xD => 3,
        _ => 1,
    }
}

/// Keeps the entries a table may hold: at most [`MAX_ENTRIES`].
pub fn limited(entries: Vec<CpuidEntry>) -> Option<Vec<CpuidEntry>> {
    (entries.len() <= MAX_ENTRIES).then_some(entries)
}
