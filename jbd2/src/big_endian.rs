//! Big-endian fields at fixed offsets of journal blocks.
//!
//! Every on-disk integer in jbd2 is big-endian (unlike ext4's). **Must
//! never** panic: a field that does not fit inside the slice reads as zero
//! and is not written. Callers size their blocks once, up front, so the
//! fallback never decides a result.

/// The big-endian `u16` at `offset`, or 0 if it does not fit.
pub(crate) fn be16(bytes: &[u8], offset: usize) -> u16 {
    array(bytes, offset).map_or(0, u16::from_be_bytes)
}

/// The big-endian `u32` at `offset`, or 0 if it does not fit.
pub(crate) fn be32(bytes: &[u8], offset: usize) -> u32 {
    array(bytes, offset).map_or(0, u32::from_be_bytes)
}

/// The big-endian `u64` at `offset`, or 0 if it does not fit.
pub(crate) fn be64(bytes: &[u8], offset: usize) -> u64 {
    array(bytes, offset).map_or(0, u64::from_be_bytes)
}

/// The byte at `offset`, or 0 past the end.
pub(crate) fn byte(bytes: &[u8], offset: usize) -> u8 {
    bytes.get(offset).copied().unwrap_or(0)
}

/// `N` bytes starting at `offset`, if they fit.
pub(crate) fn array<const N: usize>(bytes: &[u8], offset: usize) -> Option<[u8; N]> {
    let end = offset.checked_add(N)?;
    bytes.get(offset..end)?.try_into().ok()
}

/// Writes `value` big-endian at `offset` (nothing if it does not fit).
pub(crate) fn put_be16(bytes: &mut [u8], offset: usize, value: u16) {
    put(bytes, offset, &value.to_be_bytes());
}

/// Writes `value` big-endian at `offset` (nothing if it does not fit).
pub(crate) fn put_be32(bytes: &mut [u8], offset: usize, value: u32) {
    put(bytes, offset, &value.to_be_bytes());
}

/// Writes `value` big-endian at `offset` (nothing if it does not fit).
pub(crate) fn put_be64(bytes: &mut [u8], offset: usize, value: u64) {
    put(bytes, offset, &value.to_be_bytes());
}

/// Copies `value` to `offset` if it fits entirely.
pub(crate) fn put(bytes: &mut [u8], offset: usize, value: &[u8]) {
    let Some(end) = offset.checked_add(value.len()) else {
        return;
    };
    if let Some(target) = bytes.get_mut(offset..end) {
        target.copy_from_slice(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_big_endian() {
        let mut block = [0u8; 16];
        put_be32(&mut block, 0, 0xC03B_3998);
        put_be16(&mut block, 4, 0x0102);
        put_be64(&mut block, 8, 0x0102_0304_0506_0708);
        assert_eq!(block[..4], [0xC0, 0x3B, 0x39, 0x98]);
        assert_eq!(be32(&block, 0), 0xC03B_3998);
        assert_eq!(be16(&block, 4), 0x0102);
        assert_eq!(be64(&block, 8), 0x0102_0304_0506_0708);
    }

    #[test]
    fn fields_past_the_end_read_zero_and_are_not_written() {
        let mut block = [0xFFu8; 6];
        assert_eq!(be32(&block, 4), 0);
        assert_eq!(be64(&block, usize::MAX - 2), 0);
        put_be32(&mut block, 4, 0);
        assert_eq!(block, [0xFF; 6]);
    }
}
