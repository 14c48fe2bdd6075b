//! `kvm_fpu` (KVM_GET/SET_FPU) and `kvm_msrs` (KVM_GET/SET_MSRS): the
//! conversion between `kvm_fpu` and the FXSAVE layout the CPU keeps, and
//! the bounds of an MSR batch. Only byte arrays in and out; no state.

/// Bytes of `struct kvm_fpu`.
pub const FPU_BYTES: usize = 416;
/// Bytes of FXSAVE's layout (x87 and SSE).
pub const FXSAVE_BYTES: usize = 512;
/// Bytes of the `struct kvm_msrs` header (`nmsrs`, padding).
pub const MSRS_HEADER_BYTES: usize = 8;
/// Bytes of one `struct kvm_msr_entry` (index, reserved, data).
pub const MSR_ENTRY_BYTES: usize = 16;
/// Linux's `MAX_IO_MSRS`: a batch of this many entries or more is E2BIG.
pub const MAX_IO_MSRS: usize = 256;

/// (kvm_fpu offset, FXSAVE offset, bytes) of each field the two share:
/// ST0-7, FCW, FSW, the abridged tag word, FOP, FIP, FDP, XMM0-15, MXCSR.
const FIELDS: [(usize, usize, usize); 9] = [
    (0, 32, 128),
    (128, 0, 2),
    (130, 2, 2),
    (132, 4, 1),
    (134, 6, 2),
    (136, 8, 8),
    (144, 16, 8),
    (152, 160, 256),
    (408, 24, 4),
];

/// `kvm_fpu` from the CPU's FXSAVE image.
pub fn fpu_from_fxsave(fxsave: &[u8; FXSAVE_BYTES]) -> [u8; FPU_BYTES] {
    let mut fpu = [0u8; FPU_BYTES];
    for (at, from, length) in FIELDS {
        fpu[at..at + length].copy_from_slice(&fxsave[from..from + length]);
    }
    fpu
}

/// The FXSAVE image `fpu` describes, keeping what `kvm_fpu` lacks (the
/// MXCSR mask, reserved bytes) from `current`.
pub fn fxsave_from_fpu(fpu: &[u8; FPU_BYTES], current: &[u8; FXSAVE_BYTES]) -> [u8; FXSAVE_BYTES] {
    let mut fxsave = *current;
    for (at, to, length) in FIELDS {
        fxsave[to..to + length].copy_from_slice(&fpu[at..at + length]);
    }
    fxsave
}

/// One `kvm_msr_entry`: (index, data).
pub fn decode_msr_entry(bytes: &[u8; MSR_ENTRY_BYTES]) -> (u32, u64) {
    let index = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let mut data = [0u8; 8];
    data.copy_from_slice(&bytes[8..16]);
    (index, u64::from_le_bytes(data))
}

/// One `kvm_msr_entry`, reserved word zero.
pub fn encode_msr_entry(index: u32, data: u64) -> [u8; MSR_ENTRY_BYTES] {
    let mut bytes = [0u8; MSR_ENTRY_BYTES];
    bytes[0..4].copy_from_slice(&index.to_le_bytes());
    bytes[8..16].copy_from_slice(&data.to_le_bytes());
    bytes
}
