//! The superblock's `needs_recovery` flag (incompat `RECOVER`), set and
//! cleared at its home location around the time the journal is in use.
//!
//! The rule, shared with e2fsck and the kernel: while the log may hold
//! committed transactions (`s_start != 0` in the journal superblock),
//! `RECOVER` is set; a mount that finds it replays the log. So the flag is
//! written and flushed **before** the journal's first commit writes a
//! non-empty log, and cleared only **after** the log is durably empty
//! again (checkpointed, `s_start = 0`). Only the flag changes: the rest of
//! the home superblock is kept as it is on disk (the newest superblock
//! image may still be in the journal, and reaches home at checkpoint).
//! **Must never** touch any other field, nor return before the flag is
//! durable.

use crate::block_device::{BlockDevice, SECTOR_SIZE};
use crate::disk::read_bytes;
use crate::error::Error;
use crate::features::incompatible;
use crate::home_blocks::HomeBlocks;
use crate::superblock::{Superblock, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE};

/// What the flag should say.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RecoveryMark {
    /// The log may hold transactions: replay it after a crash.
    Needed,
    /// The log is empty and everything is home.
    NotNeeded,
}

/// Sets or clears `RECOVER` in the home superblock (checksum updated) and
/// flushes.
pub(crate) fn mark_recovery<D: BlockDevice>(home: &HomeBlocks<D>, mark: RecoveryMark) -> Result<(), Error> {
    let mut bytes = [0u8; SUPERBLOCK_SIZE];
    read_bytes(home.device(), SUPERBLOCK_OFFSET, &mut bytes)?;
    let mut superblock = Superblock::parse(&bytes)?;
    match mark {
        RecoveryMark::Needed => superblock.incompatible_features |= incompatible::RECOVER,
        RecoveryMark::NotNeeded => superblock.incompatible_features &= !incompatible::RECOVER,
    }
    let first_sector = SUPERBLOCK_OFFSET / SECTOR_SIZE as u64;
    home.device().write_sectors(first_sector, &superblock.encode())?;
    home.flush()
}
