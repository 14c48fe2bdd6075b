//! Descriptor-block tags: which file-system block a logged block belongs
//! to, with its flags and checksum.
//!
//! Two layouts, both big-endian (kernel `journal_block_tag3_t` and
//! `journal_block_tag_t`):
//! - v3 (16 bytes): `t_blocknr` @0, `t_flags` (32 bits) @4,
//!   `t_blocknr_high` @8, `t_checksum` (32 bits) @12;
//! - otherwise: `t_blocknr` @0, `t_checksum` (16 bits, v2 only) @4,
//!   `t_flags` (16 bits) @6, `t_blocknr_high` @8 (64-bit journals only).
//!
//! The flags sit in the same two bytes (6..8) in both, which is how the
//! kernel reads them. The high half of the block number counts only with
//! the 64BIT feature. **Must never** read or write outside the tag's
//! `tag_bytes`.

use crate::big_endian::{be16, be32, put_be16, put_be32};
use crate::format::checksums::tag_checksum16;
use crate::format::features::{BlockChecksums, Features};

/// Tag flag: the logged copy had its first four bytes (the magic) zeroed.
pub const TAG_ESCAPED: u16 = 0x1;
/// Tag flag: no 16-byte UUID follows this tag (same as the previous).
pub const TAG_SAME_UUID: u16 = 0x2;
/// Tag flag: the block was deleted (unused by jbd2 today).
pub const TAG_DELETED: u16 = 0x4;
/// Tag flag: the last tag of its descriptor block.
pub const TAG_LAST: u16 = 0x8;

/// One decoded tag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BlockTag {
    /// The file-system block the logged copy belongs to.
    pub fs_block: u64,
    /// `TAG_*` bits.
    pub flags: u16,
    /// The stored checksum: 32 bits with v3, 16 with v2, 0 without.
    pub checksum: u32,
}

impl BlockTag {
    /// Whether `flag` (a `TAG_*` bit) is set.
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

/// How tags are laid out in one journal.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TagLayout {
    bytes: usize,
    checksums: BlockChecksums,
    wide_block_numbers: bool,
}

impl TagLayout {
    /// The layout a journal with `features` uses.
    pub fn new(features: &Features) -> TagLayout {
        TagLayout {
            bytes: features.tag_bytes(),
            checksums: features.block_checksums(),
            wide_block_numbers: features.has_64bit(),
        }
    }

    /// Bytes of one tag (without the optional UUID).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The largest block number a tag can name.
    pub fn max_block(&self) -> u64 {
        if self.wide_block_numbers {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        }
    }

    /// Decodes the tag at the start of `tag` (at least `bytes()` long).
    pub fn decode(&self, tag: &[u8]) -> BlockTag {
        let tag = &tag[..self.bytes.min(tag.len())];
        let low = u64::from(be32(tag, 0));
        let high = if self.wide_block_numbers {
            u64::from(be32(tag, 8))
        } else {
            0
        };
        let checksum = match self.checksums {
            BlockChecksums::Version3 => be32(tag, 12),
            BlockChecksums::Version2 => tag_checksum16(tag, 4),
            BlockChecksums::Absent => 0,
        };
        BlockTag {
            fs_block: low | (high << 32),
            flags: be16(tag, 6),
            checksum,
        }
    }

    /// Encodes `tag` into the start of `out` (at least `bytes()` long).
    /// The caller has checked `tag.fs_block <= self.max_block()`.
    pub fn encode(&self, tag: &BlockTag, out: &mut [u8]) {
        let out_len = self.bytes.min(out.len());
        let out = &mut out[..out_len];
        out.fill(0);
        put_be32(out, 0, tag.fs_block as u32);
        if self.wide_block_numbers {
            put_be32(out, 8, (tag.fs_block >> 32) as u32);
        }
        match self.checksums {
            BlockChecksums::Version3 => {
                put_be32(out, 4, u32::from(tag.flags));
                put_be32(out, 12, tag.checksum);
            }
            BlockChecksums::Version2 => {
                put_be16(out, 4, tag.checksum as u16);
                put_be16(out, 6, tag.flags);
            }
            BlockChecksums::Absent => put_be16(out, 6, tag.flags),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(incompat: u32) -> TagLayout {
        TagLayout::new(&Features {
            incompat,
            ..Features::default()
        })
    }

    #[test]
    fn v3_tag_matches_debugfs_bytes() {
        // The second tag of a real descriptor: block 301, SAME_UUID|LAST.
        let bytes = [
            0, 0, 1, 0x2d, 0, 0, 0, 0x0a, 0, 0, 0, 0, 0xba, 0x4c, 0xca, 0xf3,
        ];
        let v3_64 = layout(Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT);
        let tag = v3_64.decode(&bytes);
        assert_eq!(
            tag,
            BlockTag {
                fs_block: 301,
                flags: 0xa,
                checksum: 0xba4ccaf3
            }
        );
        let mut out = [0xFFu8; 16];
        v3_64.encode(&tag, &mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn every_layout_round_trips() {
        let all = [
            0,
            Features::INCOMPAT_64BIT,
            Features::INCOMPAT_CSUM_V2,
            Features::INCOMPAT_CSUM_V2 | Features::INCOMPAT_64BIT,
            Features::INCOMPAT_CSUM_V3,
            Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT,
        ];
        for incompat in all {
            let layout = layout(incompat);
            let wide = incompat & Features::INCOMPAT_64BIT != 0;
            let checksum =
                match incompat & (Features::INCOMPAT_CSUM_V2 | Features::INCOMPAT_CSUM_V3) {
                    Features::INCOMPAT_CSUM_V3 => 0xDEAD_BEEF,
                    Features::INCOMPAT_CSUM_V2 => 0xBEEF,
                    _ => 0,
                };
            let fs_block = if wide { 0x1_2345_6789 } else { 0x2345_6789 };
            let tag = BlockTag {
                fs_block,
                flags: TAG_ESCAPED | TAG_LAST,
                checksum,
            };
            let mut out = [0u8; 16];
            layout.encode(&tag, &mut out);
            assert_eq!(layout.decode(&out), tag, "incompat {incompat:#x}");
            assert!(out[layout.bytes()..].iter().all(|&byte| byte == 0));
        }
    }
}
