//! Why opening, recovering or writing a journal failed.
//!
//! One enum per job: [`SuperblockError`] (the journal superblock is not
//! one this crate may use), [`RecoveryError`] (replay stopped, with the
//! kernel's reason) and [`JournalError`] (the writer). Each names the
//! check that failed and the values it saw. **Must never** be a panic:
//! everything an image can hold ends up here.

use crate::format::features::Features;
use crate::storage::IoError;

/// The journal superblock cannot be used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SuperblockError {
    /// The area's block size is not a power of two from 1024 to 65536.
    UnsupportedBlockSize(u32),
    /// Block 0 does not start with the jbd2 magic.
    BadMagic,
    /// Block 0 is a jbd2 block of this type, not a superblock.
    NotASuperblock(u32),
    /// `s_blocksize` differs from the area's block size.
    BlockSizeMismatch {
        /// `s_blocksize`.
        journal: u32,
        /// The area's block size.
        area: u32,
    },
    /// `s_maxlen` is larger than the area.
    LongerThanArea {
        /// `s_maxlen`.
        max_length: u32,
        /// Blocks in the area.
        area_blocks: u64,
    },
    /// `s_first` is 0 or not below `s_maxlen`.
    FirstOutOfRange {
        /// `s_first`.
        first: u32,
        /// `s_maxlen`.
        max_length: u32,
    },
    /// `s_maxlen` is below the kernel's minimum of 1024 blocks.
    TooShort(u32),
    /// Features this crate does not implement (fast commit, unknown bits,
    /// any ro_compat bit).
    UnsupportedFeatures(Features),
    /// Checksums v2 and v3, or v1 and v2/v3, at once.
    ChecksumVersionsConflict,
    /// `s_checksum_type` is not crc32c (4).
    UnknownChecksumType(u8),
    /// `s_checksum` does not match the superblock.
    ChecksumMismatch {
        /// The stored checksum.
        stored: u32,
        /// The checksum of the block.
        computed: u32,
    },
}

/// Which recovery pass stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pass {
    /// Pass 1: find the end of the log.
    Scan,
    /// Pass 2: collect revoke records.
    Revoke,
    /// Pass 3: write logged blocks home.
    Replay,
}

/// Recovery failed; the journal superblock was left as it was, so the
/// log is still there for e2fsck (see [`crate::discard_log`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RecoveryError {
    /// The superblock is unusable.
    Superblock(SuperblockError),
    /// Reading a journal block or writing a file-system block failed.
    Io(IoError),
    /// A log position lies outside the journal (kernel: "corrupted journal
    /// superblock", EFSCORRUPTED).
    PositionOutsideJournal(u64),
    /// A descriptor block of a transaction to replay has a bad checksum
    /// (EFSBADCRC in the revoke or replay pass).
    DescriptorChecksum {
        /// Its log position.
        position: u64,
    },
    /// A descriptor or revoke block with a bad checksum belongs to a
    /// transaction whose commit block is not older than the one before:
    /// real corruption, not stale blocks (EFSBADCRC).
    TransactionChecksum {
        /// The transaction.
        sequence: u32,
    },
    /// A revoke block's `r_count` is larger than the block (EINVAL).
    RevokeCountTooLarge {
        /// The transaction.
        sequence: u32,
        /// The count read.
        count: u32,
    },
    /// A pass ended at another transaction than the scan found (EIO).
    PassesDisagree {
        /// The pass.
        pass: Pass,
        /// Where it ended.
        ended_at: u32,
        /// Where the scan ended.
        expected: u32,
    },
    /// The scan walked more blocks than the log holds (this crate's bound;
    /// the kernel would go on).
    LogLongerThanJournal,
    /// Replay wrote every other block but skipped these logged blocks:
    /// their tag checksums failed (EFSBADCRC) or they could not be read.
    DataBlocksSkipped {
        /// Blocks whose tag checksum failed.
        bad_checksums: u32,
        /// Blocks that could not be read.
        unreadable: u32,
    },
}

impl From<SuperblockError> for RecoveryError {
    fn from(error: SuperblockError) -> Self {
        RecoveryError::Superblock(error)
    }
}

impl From<IoError> for RecoveryError {
    fn from(error: IoError) -> Self {
        RecoveryError::Io(error)
    }
}

/// The journal writer failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum JournalError {
    /// The superblock is unusable.
    Superblock(SuperblockError),
    /// A journal or file-system block request failed.
    Io(IoError),
    /// The log holds transactions not yet replayed: run
    /// [`crate::recover`] first.
    NeedsRecovery,
    /// The handle belongs to a transaction already committed.
    StaleHandle,
    /// Handles of the running transaction are still open.
    HandlesStillOpen(u32),
    /// The running transaction holds as many blocks as one may; end the
    /// handles and commit.
    TransactionFull,
    /// The block number does not fit the journal's tags (no 64BIT).
    BlockNumberTooLarge(u64),
    /// The data is not exactly one block long.
    WrongLength {
        /// The block size.
        expected: u32,
        /// The length given.
        actual: usize,
    },
}

impl From<SuperblockError> for JournalError {
    fn from(error: SuperblockError) -> Self {
        JournalError::Superblock(error)
    }
}

impl From<IoError> for JournalError {
    fn from(error: IoError) -> Self {
        JournalError::Io(error)
    }
}
