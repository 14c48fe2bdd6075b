//! The two checksums of ext4 metadata: crc32c (`metadata_csum`, the same
//! raw update jbd2 uses, so it is `jbd2`'s one table) and the older crc16
//! (`gdt_csum`), table-driven, least significant bit first.
//!
//! Both functions are the *raw* update step, with no inversion before or
//! after, exactly like Linux's `crc32c(seed, data, length)` (which ext4
//! calls through `ext4_chksum`) and `crc16(seed, data, length)`. ext4 starts
//! chains from `!0` (superblock, checksum seed from the UUID) or from a seed
//! derived from earlier chains, and stores the raw result. So the standard
//! CRC-32C of some bytes is `!crc32c(!0, bytes)`.
//!
//! Each structure's formula lives next to its parser; this module only
//! computes. **Must never** allocate or fail: every input is valid.

/// The CRC-16 polynomial `x^16 + x^15 + x^2 + 1`, bit-reversed (`0x8005`
/// reflected), as in Linux's `lib/crc16.c`.
const CRC16_REVERSED: u16 = 0xA001;

const CRC16_TABLE: [u16; 256] = crc16_table();

const fn crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut index = 0;
    while index < 256 {
        let mut value = index as u16;
        let mut bit = 0;
        while bit < 8 {
            value = if value & 1 == 1 { (value >> 1) ^ CRC16_REVERSED } else { value >> 1 };
            bit += 1;
        }
        table[index] = value;
        index += 1;
    }
    table
}

/// Continues a crc32c chain from `seed` over `data`, with no inversions
/// (Linux `crc32c(seed, data, length)`).
pub fn crc32c(seed: u32, data: &[u8]) -> u32 {
    jbd2::crc32c_update(seed, data)
}

/// Continues a crc16 chain from `seed` over `data`, with no inversions
/// (Linux `crc16(seed, data, length)`).
pub fn crc16(seed: u16, data: &[u8]) -> u16 {
    data.iter().fold(seed, |crc, &byte| {
        let index = usize::from((crc as u8) ^ byte);
        (crc >> 8) ^ CRC16_TABLE.get(index).copied().unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECK_INPUT: &[u8] = b"123456789";

    #[test]
    fn standard_crc32c_of_the_check_string_is_e3069283() {
        assert_eq!(!crc32c(!0, CHECK_INPUT), 0xE306_9283);
    }

    #[test]
    fn crc32c_of_32_zero_bytes_matches_rfc3720() {
        // RFC 3720 (iSCSI) B.4: 32 bytes of zeros give 0x8A9136AA.
        assert_eq!(!crc32c(!0, &[0u8; 32]), 0x8A91_36AA);
        assert_eq!(!crc32c(!0, &[0xFFu8; 32]), 0x62A8_AB43);
    }

    #[test]
    fn crc32c_chains_like_one_pass() {
        let (head, tail) = CHECK_INPUT.split_at(4);
        assert_eq!(crc32c(crc32c(!0, head), tail), crc32c(!0, CHECK_INPUT));
    }

    #[test]
    fn crc16_arc_of_the_check_string_is_bb3d() {
        // CRC-16/ARC: seed 0, no final inversion.
        assert_eq!(crc16(0, CHECK_INPUT), 0xBB3D);
        // CRC-16/MODBUS: the same polynomial from seed 0xFFFF, as gdt_csum starts.
        assert_eq!(crc16(0xFFFF, CHECK_INPUT), 0x4B37);
    }
}
