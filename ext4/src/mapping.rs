//! From a file's logical block to where its data is: a run of consecutive
//! blocks that share one answer (on disk, unwritten, or a hole), found in
//! the inode's extent tree or, for files without `EXTENTS_FL`, its block map.
//!
//! Returning runs lets a reader fetch many blocks per request and skip a
//! hole in one step, so the work of reading is bounded by what is mapped,
//! not by the file's size. **Must never** return an empty run.

use crate::block_device::BlockDevice;
use crate::disk::Disk;
use crate::error::{Error, Structure};
use crate::inode::Inode;
use crate::superblock::Superblock;

/// One past the last logical block number (logical blocks are 32-bit).
pub const LOGICAL_BLOCK_LIMIT: u64 = 1 << 32;

/// What a run of logical blocks maps to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Run {
    /// `length` blocks stored from `physical` on.
    Data {
        /// The first block on disk.
        physical: u64,
        /// How many blocks (at least 1).
        length: u64,
    },
    /// `length` blocks allocated but not yet written: they read as zeros.
    Unwritten {
        /// How many blocks (at least 1).
        length: u64,
    },
    /// `length` blocks with nothing allocated: they read as zeros.
    Hole {
        /// How many blocks (at least 1).
        length: u64,
    },
}

impl Run {
    /// How many blocks the run covers.
    pub fn length(&self) -> u64 {
        match *self {
            Run::Data { length, .. } | Run::Unwritten { length } | Run::Hole { length } => length,
        }
    }
}

/// Where the block map or extent tree says `logical` is.
pub fn map_block<D: BlockDevice>(
    disk: &Disk<D>,
    superblock: &Superblock,
    inode: &Inode,
    logical: u64,
) -> Result<Run, Error> {
    if logical >= LOGICAL_BLOCK_LIMIT {
        return Ok(Run::Hole { length: u64::MAX - logical + 1 });
    }
    let logical = logical as u32;
    let run = if inode.uses_extents() {
        crate::extents::map(disk, superblock, inode, logical)?
    } else {
        crate::block_map::map(disk, superblock, inode, logical)?
    };
    // Callers advance by the run's length: an empty run would never end.
    if run.length() == 0 {
        return Err(Error::invalid(Structure::Inode(inode.number.0), "empty block run"));
    }
    Ok(run)
}
