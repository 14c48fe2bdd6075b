//! Why the journal cannot be used, or stopped: its inode, its superblock,
//! recovery, the writer, or an earlier failure that aborted it.
//!
//! Carried by [`crate::Error::Journal`] (an operation or a mount failed)
//! and by [`crate::ReadOnlyReason::Journal`] (the file system may only be
//! read). **Must never** lose the jbd2 crate's own account of what went
//! wrong: its error values are kept as they are.

use core::fmt;

use crate::block_device::IoError;
use crate::error::{errno, Corruption, Error, Problem};

/// The journal's trouble.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum JournalFailure {
    /// `has_journal` without a journal inode (an external journal device,
    /// which this crate does not drive), or `needs_recovery` without
    /// `has_journal`.
    NotInternal,
    /// The journal inode cannot hold a journal (the text says why).
    Inode(&'static str),
    /// The journal inode or its extent tree is damaged.
    InodeDamaged(Corruption),
    /// A journal block could not be read or written.
    Device(jbd2::IoError),
    /// The journal superblock is unusable (unsupported features such as
    /// fast commit are named here).
    Superblock(jbd2::SuperblockError),
    /// Replaying the journal failed; nothing was reset, so e2fsck can
    /// still look at the log.
    Recovery(jbd2::RecoveryError),
    /// The journal writer failed.
    Writer(jbd2::JournalError),
    /// One operation needs more log blocks than a transaction may take.
    TransactionTooLarge {
        /// Log blocks the operation needs (an upper bound).
        log_blocks: u64,
        /// The largest transaction, in log blocks.
        limit: u64,
    },
    /// An earlier journal failure stopped all writing until the file
    /// system is opened again (the kernel's journal abort).
    Aborted,
}

impl JournalFailure {
    /// The journal's view of a failure of this crate's reading code.
    pub(crate) fn from_error(error: Error) -> Self {
        match error {
            Error::Journal(failure) => failure,
            Error::Corrupted(corruption) => JournalFailure::InodeDamaged(corruption),
            Error::Io(error) => JournalFailure::Device(device_error(error)),
            _ => JournalFailure::Inode("the journal inode cannot be read"),
        }
    }

    /// The Linux errno for this failure.
    pub fn errno(&self) -> i32 {
        use jbd2::{JournalError, RecoveryError, SuperblockError};
        match self {
            JournalFailure::Device(_)
            | JournalFailure::Writer(JournalError::Io(_))
            | JournalFailure::Recovery(RecoveryError::Io(_)) => errno::EIO,
            JournalFailure::Superblock(SuperblockError::UnsupportedFeatures(_))
            | JournalFailure::Superblock(SuperblockError::UnsupportedBlockSize(_))
            | JournalFailure::NotInternal => errno::EOPNOTSUPP,
            JournalFailure::Superblock(SuperblockError::ChecksumMismatch { .. })
            | JournalFailure::Recovery(RecoveryError::DescriptorChecksum { .. })
            | JournalFailure::Recovery(RecoveryError::TransactionChecksum { .. })
            | JournalFailure::Recovery(RecoveryError::DataBlocksSkipped { .. }) => errno::EBADMSG,
            JournalFailure::InodeDamaged(corruption) if corruption.problem == Problem::ChecksumMismatch => {
                errno::EBADMSG
            }
            JournalFailure::TransactionTooLarge { .. } => errno::ENOSPC,
            JournalFailure::Aborted => errno::EROFS,
            _ => errno::EUCLEAN,
        }
    }
}

fn device_error(error: IoError) -> jbd2::IoError {
    match error {
        IoError::OutOfRange => jbd2::IoError::OutOfRange,
        IoError::PartialSector => jbd2::IoError::WrongLength,
        IoError::ReadOnly => jbd2::IoError::ReadOnly,
        IoError::Busy | IoError::Device => jbd2::IoError::Device,
    }
}

/// The jbd2 incompat bits by name (`include/linux/jbd2.h`).
const JOURNAL_INCOMPAT_NAMES: [(u32, &str); 6] = [
    (jbd2::Features::INCOMPAT_REVOKE, "revoke"),
    (jbd2::Features::INCOMPAT_64BIT, "64bit"),
    (jbd2::Features::INCOMPAT_ASYNC_COMMIT, "async_commit"),
    (jbd2::Features::INCOMPAT_CSUM_V2, "csum_v2"),
    (jbd2::Features::INCOMPAT_CSUM_V3, "csum_v3"),
    (jbd2::Features::INCOMPAT_FAST_COMMIT, "fast_commit"),
];

/// Writes the names of the journal features this crate refuses.
fn write_refused(formatter: &mut fmt::Formatter<'_>, features: jbd2::Features) -> fmt::Result {
    let mut first = true;
    let mut name = |formatter: &mut fmt::Formatter<'_>, text: fmt::Arguments<'_>| {
        let separator = if first { "" } else { "," };
        first = false;
        write!(formatter, "{separator}{text}")
    };
    let refused = features.unknown_incompat();
    for bit in (0..32).map(|shift| 1u32 << shift).filter(|bit| refused & bit != 0) {
        match JOURNAL_INCOMPAT_NAMES.iter().find(|(known, _)| *known == bit) {
            Some((_, known)) => name(formatter, format_args!("{known}"))?,
            None => name(formatter, format_args!("unknown({bit:#x})"))?,
        }
    }
    if features.ro_compat != 0 {
        name(formatter, format_args!("ro_compat({:#x})", features.ro_compat))?;
    }
    Ok(())
}

fn write_superblock_error(formatter: &mut fmt::Formatter<'_>, error: &jbd2::SuperblockError) -> fmt::Result {
    match error {
        jbd2::SuperblockError::UnsupportedFeatures(features) => {
            formatter.write_str("unsupported journal features: ")?;
            write_refused(formatter, *features)
        }
        other => write!(formatter, "journal superblock: {other:?}"),
    }
}

impl fmt::Display for JournalFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalFailure::NotInternal => formatter.write_str("no internal journal inode"),
            JournalFailure::Inode(what) => write!(formatter, "journal inode: {what}"),
            JournalFailure::InodeDamaged(corruption) => write!(formatter, "journal inode: corrupted {corruption}"),
            JournalFailure::Device(error) => write!(formatter, "journal I/O error: {error:?}"),
            JournalFailure::Superblock(error) => write_superblock_error(formatter, error),
            JournalFailure::Recovery(jbd2::RecoveryError::Superblock(error)) => {
                formatter.write_str("journal recovery failed: ")?;
                write_superblock_error(formatter, error)
            }
            JournalFailure::Recovery(error) => write!(formatter, "journal recovery failed: {error:?}"),
            JournalFailure::Writer(error) => write!(formatter, "journal write failed: {error:?}"),
            JournalFailure::TransactionTooLarge { log_blocks, limit } => {
                write!(formatter, "operation needs {log_blocks} journal blocks, a transaction may take {limit}")
            }
            JournalFailure::Aborted => formatter.write_str("journal aborted after an earlier error"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn refused_journal_features_are_named() {
        let features = jbd2::Features {
            incompat: jbd2::Features::INCOMPAT_FAST_COMMIT | jbd2::Features::INCOMPAT_REVOKE | 0x100,
            ..jbd2::Features::default()
        };
        let failure = JournalFailure::Superblock(jbd2::SuperblockError::UnsupportedFeatures(features));
        assert_eq!(failure.to_string(), "unsupported journal features: fast_commit,unknown(0x100)");
        assert_eq!(failure.errno(), errno::EOPNOTSUPP);
        assert_eq!(JournalFailure::Aborted.errno(), errno::EROFS);
    }
}
