//! The big-endian CRC-32 of jbd2's oldest checksum feature.
//!
//! With the compat `CHECKSUM` feature (v1), the commit block carries one
//! CRC-32 (polynomial 0x04C11DB7, most significant bit first, no
//! inversions: the kernel's `crc32_be`) over every descriptor and data
//! block of the transaction. Only recovery of old journals and writers
//! that keep v1 need it. **Must never** allocate.

/// The CRC-32 polynomial, most significant bit first.
const POLYNOMIAL: u32 = 0x04C1_1DB7;

/// One table entry per byte value, built at compile time.
const TABLE: [u32; 256] = build_table();

const fn build_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut index = 0;
    while index < 256 {
        let mut value = (index as u32) << 24;
        let mut bit = 0;
        while bit < 8 {
            value = if value & 0x8000_0000 != 0 {
                (value << 1) ^ POLYNOMIAL
            } else {
                value << 1
            };
            bit += 1;
        }
        table[index] = value;
        index += 1;
    }
    table
}

/// Continues a big-endian CRC-32 from `crc` over `data`, without
/// inversions.
pub fn crc32_be_update(crc: u32, data: &[u8]) -> u32 {
    data.iter().fold(crc, |crc, &byte| {
        TABLE[usize::from(((crc >> 24) as u8) ^ byte)] ^ (crc << 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_check_value_of_crc32_bzip2() {
        // CRC-32/BZIP2 is this CRC with both inversions.
        assert_eq!(!crc32_be_update(!0, b"123456789"), 0xFC89_1918);
    }
}
