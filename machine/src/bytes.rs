//! Bounds-checked little-endian field reads from untrusted byte slices.
//!
//! Every parser of firmware or boot-loader data goes through these, so a
//! short or malformed table is a `None`, never an out-of-bounds read.

/// `length` bytes at `offset`, if they are all inside `bytes`.
pub fn slice_at(bytes: &[u8], offset: usize, length: usize) -> Option<&[u8]> {
    bytes.get(offset..offset.checked_add(length)?)
}

pub fn u8_at(bytes: &[u8], offset: usize) -> Option<u8> {
    bytes.get(offset).copied()
}

pub fn u16_at(bytes: &[u8], offset: usize) -> Option<u16> {
    Some(u16::from_le_bytes(slice_at(bytes, offset, 2)?.try_into().ok()?))
}

pub fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    Some(u32::from_le_bytes(slice_at(bytes, offset, 4)?.try_into().ok()?))
}

pub fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    Some(u64::from_le_bytes(slice_at(bytes, offset, 8)?.try_into().ok()?))
}

/// Sum of all bytes modulo 256 (ACPI checksums make it zero).
pub fn byte_sum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |sum, byte| sum.wrapping_add(*byte))
}
