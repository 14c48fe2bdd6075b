//! CRC-32C (Castagnoli), the checksum of every jbd2 v2/v3 structure.
//!
//! jbd2 calls the *raw* update: the caller picks the starting value
//! (`!0` for the superblock and the UUID seed, the seed for everything
//! else) and the result is stored as is, with no final inversion — the
//! kernel's `jbd2_chksum` and e2fsprogs' `ext2fs_crc32c_le`. Checked against
//! journals written by debugfs 1.47 (see `format::checksums` tests).
//! **Must never** allocate: the table is built at compile time.

/// The reflected Castagnoli polynomial.
const POLYNOMIAL: u32 = 0x82F6_3B78;

/// One table entry per byte value, built at compile time.
const TABLE: [u32; 256] = build_table();

const fn build_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut index = 0;
    while index < 256 {
        let mut value = index as u32;
        let mut bit = 0;
        while bit < 8 {
            value = if value & 1 == 1 {
                (value >> 1) ^ POLYNOMIAL
            } else {
                value >> 1
            };
            bit += 1;
        }
        table[index] = value;
        index += 1;
    }
    table
}

/// Continues a CRC-32C from `crc` over `data`, without pre- or
/// post-inversion (the caller's `crc` is the register itself).
pub fn crc32c_update(crc: u32, data: &[u8]) -> u32 {
    data.iter().fold(crc, |crc, &byte| {
        TABLE[usize::from((crc as u8) ^ byte)] ^ (crc >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_check_value_after_the_usual_inversions() {
        // The catalogue check value of CRC-32C is over "123456789" with
        // both inversions: the raw update sits inside them.
        assert_eq!(!crc32c_update(!0, b"123456789"), 0xE306_9283);
    }

    #[test]
    fn updates_chain() {
        let whole = crc32c_update(!0, b"hello world");
        let split = crc32c_update(crc32c_update(!0, b"hello "), b"world");
        assert_eq!(whole, split);
    }
}
