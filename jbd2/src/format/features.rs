//! The journal's feature bits and what they decide about the format.
//!
//! Three words as in ext4: `compat` (v1 transaction checksum), `incompat`
//! (revoke, 64-bit block numbers, async commit, checksums v2/v3, fast
//! commit) and `ro_compat` (none defined). Values from the kernel's
//! `include/linux/jbd2.h`. **Must never** claim a feature the rest of the
//! crate does not implement: [`Features::unknown_incompat`] lists what a
//! journal may not be opened with.

/// The feature words of a journal superblock.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Features {
    /// Features an old implementation may ignore.
    pub compat: u32,
    /// Features an implementation must understand to touch the journal.
    pub incompat: u32,
    /// Features an implementation must understand to write the journal.
    pub ro_compat: u32,
}

/// Which per-block checksums the journal carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockChecksums {
    /// None (the v1 transaction CRC, if any, is separate).
    Absent,
    /// CSUM_V2: crc32c tails and commit checksum, 16-bit tag checksums.
    Version2,
    /// CSUM_V3: crc32c tails and commit checksum, 32-bit tag checksums.
    Version3,
}

impl Features {
    /// compat: the commit block carries a big-endian CRC-32 of the
    /// transaction (checksum v1).
    pub const COMPAT_CHECKSUM: u32 = 0x1;
    /// incompat: the log may hold revoke blocks.
    pub const INCOMPAT_REVOKE: u32 = 0x1;
    /// incompat: tags and revoke records hold 64-bit block numbers.
    pub const INCOMPAT_64BIT: u32 = 0x2;
    /// incompat: commit blocks may be written before their data.
    pub const INCOMPAT_ASYNC_COMMIT: u32 = 0x4;
    /// incompat: checksums v2.
    pub const INCOMPAT_CSUM_V2: u32 = 0x8;
    /// incompat: checksums v3.
    pub const INCOMPAT_CSUM_V3: u32 = 0x10;
    /// incompat: a fast-commit area follows the log (not implemented).
    pub const INCOMPAT_FAST_COMMIT: u32 = 0x20;

    /// The incompat bits this crate implements.
    const KNOWN_INCOMPAT: u32 = Self::INCOMPAT_REVOKE
        | Self::INCOMPAT_64BIT
        | Self::INCOMPAT_ASYNC_COMMIT
        | Self::INCOMPAT_CSUM_V2
        | Self::INCOMPAT_CSUM_V3;

    /// Incompat bits this crate does not implement (0 if none).
    pub fn unknown_incompat(&self) -> u32 {
        self.incompat & !Self::KNOWN_INCOMPAT
    }

    /// Whether block numbers are 64-bit wide.
    pub fn has_64bit(&self) -> bool {
        self.incompat & Self::INCOMPAT_64BIT != 0
    }

    /// Whether commit blocks carry the v1 big-endian CRC-32.
    pub fn has_transaction_crc32(&self) -> bool {
        self.compat & Self::COMPAT_CHECKSUM != 0
    }

    /// Whether a commit block may precede its transaction's data.
    pub fn has_async_commit(&self) -> bool {
        self.incompat & Self::INCOMPAT_ASYNC_COMMIT != 0
    }

    /// Whether the log may hold revoke blocks.
    pub fn has_revoke(&self) -> bool {
        self.incompat & Self::INCOMPAT_REVOKE != 0
    }

    /// Which per-block checksums are in use (v3 wins if both are set, as
    /// in the kernel's `jbd2_has_feature_csum3` tests; opening refuses
    /// that combination anyway).
    pub fn block_checksums(&self) -> BlockChecksums {
        if self.incompat & Self::INCOMPAT_CSUM_V3 != 0 {
            BlockChecksums::Version3
        } else if self.incompat & Self::INCOMPAT_CSUM_V2 != 0 {
            BlockChecksums::Version2
        } else {
            BlockChecksums::Absent
        }
    }

    /// Bytes of one descriptor tag, as the kernel's `journal_tag_bytes`:
    /// 16 with v3; otherwise 12, plus 2 with v2, minus 4 without 64-bit.
    pub fn tag_bytes(&self) -> usize {
        let base = match self.block_checksums() {
            BlockChecksums::Version3 => return 16,
            BlockChecksums::Version2 => 14,
            BlockChecksums::Absent => 12,
        };
        if self.has_64bit() {
            base
        } else {
            base - 4
        }
    }

    /// Bytes of one revoke record: 8 with 64-bit block numbers, else 4.
    pub fn revoke_record_bytes(&self) -> usize {
        if self.has_64bit() {
            8
        } else {
            4
        }
    }

    /// Bytes at the end of descriptor and revoke blocks taken by the
    /// checksum tail (4 with v2/v3, else 0).
    pub fn tail_bytes(&self) -> usize {
        match self.block_checksums() {
            BlockChecksums::Absent => 0,
            BlockChecksums::Version2 | BlockChecksums::Version3 => 4,
        }
    }

    /// These features with `other`'s bits added.
    pub fn union(&self, other: Features) -> Features {
        Features {
            compat: self.compat | other.compat,
            incompat: self.incompat | other.incompat,
            ro_compat: self.ro_compat | other.ro_compat,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incompat(bits: u32) -> Features {
        Features {
            incompat: bits,
            ..Features::default()
        }
    }

    #[test]
    fn tag_sizes_follow_journal_tag_bytes() {
        assert_eq!(incompat(0).tag_bytes(), 8);
        assert_eq!(incompat(Features::INCOMPAT_64BIT).tag_bytes(), 12);
        assert_eq!(incompat(Features::INCOMPAT_CSUM_V2).tag_bytes(), 10);
        let v2_64 = Features::INCOMPAT_CSUM_V2 | Features::INCOMPAT_64BIT;
        assert_eq!(incompat(v2_64).tag_bytes(), 14);
        assert_eq!(incompat(Features::INCOMPAT_CSUM_V3).tag_bytes(), 16);
        let v3_64 = Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT;
        assert_eq!(incompat(v3_64).tag_bytes(), 16);
    }

    #[test]
    fn fast_commit_is_not_known() {
        let features = incompat(Features::INCOMPAT_FAST_COMMIT | Features::INCOMPAT_REVOKE);
        assert_eq!(features.unknown_incompat(), Features::INCOMPAT_FAST_COMMIT);
    }
}
