//! Revoke blocks: file-system blocks whose earlier logged copies must not
//! be replayed.
//!
//! Kernel `jbd2_journal_revoke_header_t`: the 12-byte header, then
//! `r_count` (u32) @12 — the bytes used in the block, counting this
//! 16-byte header — then big-endian block numbers of 4 bytes, or 8 with the
//! 64BIT feature; v2/v3 add a checksum tail. Reading follows the kernel's
//! `scan_revoke_records`: a count beyond the block (less the tail) is an
//! error; records are read while a whole one fits below the count.
//! **Must never** read past the count or the block.

use alloc::vec;
use alloc::vec::Vec;

use crate::big_endian::{be32, be64, put_be32, put_be64};
use crate::format::checksums::Checksummer;
use crate::format::header::{BlockHeader, BlockType};

/// Bytes of the revoke header (block header and `r_count`).
pub const REVOKE_HEADER_BYTES: usize = 16;

/// The revoke block's count does not fit in the block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RevokeCountTooLarge {
    /// The `r_count` read.
    pub count: u32,
}

/// The block numbers of one revoke block, in order.
pub struct RevokeRecords<'a> {
    block: &'a [u8],
    record_bytes: usize,
    count: usize,
    offset: usize,
}

impl<'a> RevokeRecords<'a> {
    /// The records of `block`, with records of `record_bytes` (4 or 8) and
    /// a tail of `tail_bytes`.
    pub fn new(
        block: &'a [u8],
        record_bytes: usize,
        tail_bytes: usize,
    ) -> Result<RevokeRecords<'a>, RevokeCountTooLarge> {
        let count = be32(block, 12);
        if count as usize > block.len().saturating_sub(tail_bytes) {
            return Err(RevokeCountTooLarge { count });
        }
        Ok(RevokeRecords {
            block,
            record_bytes,
            count: count as usize,
            offset: REVOKE_HEADER_BYTES,
        })
    }
}

impl Iterator for RevokeRecords<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let end = self.offset.checked_add(self.record_bytes)?;
        if end > self.count {
            return None;
        }
        let block_number = match self.record_bytes {
            8 => be64(self.block, self.offset),
            _ => u64::from(be32(self.block, self.offset)),
        };
        self.offset = end;
        Some(block_number)
    }
}

/// How many records one revoke block holds.
pub fn records_per_revoke_block(
    block_size: usize,
    record_bytes: usize,
    tail_bytes: usize,
) -> usize {
    block_size.saturating_sub(REVOKE_HEADER_BYTES + tail_bytes) / record_bytes
}

/// The revoke block of transaction `sequence` listing `blocks` (at most
/// [`records_per_revoke_block`]), sealed with its tail.
pub fn encode_revoke(
    block_size: usize,
    sequence: u32,
    blocks: &[u64],
    record_bytes: usize,
    checksummer: &Checksummer,
) -> Vec<u8> {
    let mut block = vec![0u8; block_size];
    BlockHeader {
        block_type: BlockType::Revoke,
        sequence,
    }
    .encode(&mut block);
    let mut offset = REVOKE_HEADER_BYTES;
    for &block_number in blocks {
        match record_bytes {
            8 => put_be64(&mut block, offset, block_number),
            _ => put_be32(&mut block, offset, block_number as u32),
        }
        offset += record_bytes;
    }
    put_be32(&mut block, 12, offset as u32);
    checksummer.seal_tail(&mut block);
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::features::BlockChecksums;

    #[test]
    fn revoke_block_round_trips_both_widths() {
        let checksummer = Checksummer::new(BlockChecksums::Version3, &[3; 16]);
        for record_bytes in [4, 8] {
            let capacity = records_per_revoke_block(1024, record_bytes, 4);
            let blocks: Vec<u64> = (0..capacity as u64).map(|index| index * 3 + 1).collect();
            let block = encode_revoke(1024, 2, &blocks, record_bytes, &checksummer);
            assert!(checksummer.tail_is_valid(&block));
            let read: Vec<u64> = RevokeRecords::new(&block, record_bytes, 4)
                .unwrap()
                .collect();
            assert_eq!(read, blocks);
        }
    }

    #[test]
    fn count_past_the_tail_is_refused_and_partial_records_ignored() {
        let mut block = vec![0u8; 1024];
        put_be32(&mut block, 12, 1021);
        assert_eq!(
            RevokeRecords::new(&block, 4, 4).err(),
            Some(RevokeCountTooLarge { count: 1021 })
        );
        put_be32(&mut block, 12, 16 + 4 + 3);
        put_be32(&mut block, 16, 77);
        let read: Vec<u64> = RevokeRecords::new(&block, 4, 4).unwrap().collect();
        assert_eq!(read, [77]);
    }
}
