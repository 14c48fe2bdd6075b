//! Little-endian fields at fixed offsets of on-disk structures.
//!
//! Every on-disk integer in ext4 is little-endian. These helpers read and
//! write one field of a byte slice. **Must never** panic: a field that does
//! not fit inside the slice reads as zero and is not written. Callers check
//! a structure's length once, before reading its fields, so the fallback is
//! never what decides a result.

/// The `u8` at `offset`, or 0 past the end.
pub(crate) fn byte(bytes: &[u8], offset: usize) -> u8 {
    bytes.get(offset).copied().unwrap_or(0)
}

/// The little-endian `u16` at `offset`, or 0 if it does not fit.
pub(crate) fn le16(bytes: &[u8], offset: usize) -> u16 {
    array(bytes, offset).map_or(0, u16::from_le_bytes)
}

/// The little-endian `u32` at `offset`, or 0 if it does not fit.
pub(crate) fn le32(bytes: &[u8], offset: usize) -> u32 {
    array(bytes, offset).map_or(0, u32::from_le_bytes)
}

/// A 32-bit field split into a low half at `low_offset` and, when
/// `high_offset` is `Some`, a high half there (ext4's `_lo`/`_hi` pairs).
pub(crate) fn split64(bytes: &[u8], low_offset: usize, high_offset: Option<usize>) -> u64 {
    let high = high_offset.map_or(0, |offset| le32(bytes, offset));
    u64::from(le32(bytes, low_offset)) | (u64::from(high) << 32)
}

/// `N` bytes starting at `offset`, if they fit.
pub(crate) fn array<const N: usize>(bytes: &[u8], offset: usize) -> Option<[u8; N]> {
    let end = offset.checked_add(N)?;
    bytes.get(offset..end)?.try_into().ok()
}

/// Writes `value` little-endian at `offset` (nothing if it does not fit).
pub(crate) fn put_le16(bytes: &mut [u8], offset: usize, value: u16) {
    put(bytes, offset, &value.to_le_bytes());
}

/// Writes `value` little-endian at `offset` (nothing if it does not fit).
pub(crate) fn put_le32(bytes: &mut [u8], offset: usize, value: u32) {
    put(bytes, offset, &value.to_le_bytes());
}

/// Copies `value` to `offset` (nothing if it does not fit).
pub(crate) fn put(bytes: &mut [u8], offset: usize, value: &[u8]) {
    let Some(end) = offset.checked_add(value.len()) else { return };
    if let Some(target) = bytes.get_mut(offset..end) {
        target.copy_from_slice(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_little_endian_and_zero_past_the_end() {
        let bytes = [0x01, 0x02, 0x03, 0x04, 0x05];
        assert_eq!(le16(&bytes, 0), 0x0201);
        assert_eq!(le32(&bytes, 1), 0x0504_0302);
        assert_eq!(le32(&bytes, 2), 0);
        assert_eq!(byte(&bytes, 5), 0);
        assert_eq!(le32(&bytes, usize::MAX), 0);
    }

    #[test]
    fn writes_past_the_end_change_nothing() {
        let mut bytes = [0u8; 4];
        put_le32(&mut bytes, 1, 0xFFFF_FFFF);
        put_le16(&mut bytes, usize::MAX, 0xFFFF);
        assert_eq!(bytes, [0; 4]);
        put_le16(&mut bytes, 2, 0xBEEF);
        assert_eq!(bytes, [0, 0, 0xEF, 0xBE]);
    }
}
