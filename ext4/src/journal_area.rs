//! The journal's own blocks: inode 8's data, as a [`jbd2::JournalArea`].
//!
//! The inode's extents (or block map) are read once, when the file system
//! is opened, into runs of physical blocks; journal block `n` is then the
//! `n`-th block of those runs. The area is `i_size` long and must be fully
//! mapped: a hole or an unwritten extent makes the journal unusable, as
//! for the kernel's `jbd2_journal_bmap`. **Must never** address a block
//! outside the runs read at open, nor outside the file system.

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::disk::Disk;
use crate::error::{Error, Structure};
use crate::home_blocks::{journal_io_error, HomeBlocks};
use crate::inode::{FileType, Inode};
use crate::journal_failure::JournalFailure;
use crate::mapping::{map_block, Run};
use crate::superblock::Superblock;

/// One run of journal blocks: `length` blocks from journal block
/// `logical`, stored from file-system block `physical` on.
#[derive(Clone, Copy, Debug)]
struct AreaRun {
    logical: u64,
    physical: u64,
    length: u64,
}

/// The journal inode's blocks on the shared device.
#[derive(Debug)]
pub(crate) struct JournalBlocks<D> {
    home: HomeBlocks<D>,
    runs: Vec<AreaRun>,
    block_count: u64,
}

impl<D: BlockDevice> JournalBlocks<D> {
    /// Maps the blocks of the journal inode `journal` once.
    pub(crate) fn map(disk: &Disk<D>, superblock: &Superblock, journal: &Inode) -> Result<Self, JournalFailure> {
        if journal.file_type != FileType::Regular {
            return Err(JournalFailure::Inode("the journal inode is not a regular file"));
        }
        let block_size = u64::from(superblock.block_size);
        let block_count = journal.size / block_size;
        let mut runs = Vec::new();
        let mut logical = 0;
        while logical < block_count {
            let run = map_block(disk, superblock, journal, logical).map_err(JournalFailure::from_error)?;
            let Run::Data { physical, length } = run else {
                return Err(JournalFailure::Inode("the journal inode has a hole or an unwritten extent"));
            };
            let length = length.min(block_count - logical);
            runs.push(AreaRun { logical, physical, length });
            logical += length;
        }
        Ok(Self { home: disk.home().clone(), runs, block_count })
    }

    /// The file-system block holding journal block `index`.
    fn physical(&self, index: u64) -> Result<u64, jbd2::IoError> {
        if index >= self.block_count {
            return Err(jbd2::IoError::OutOfRange);
        }
        let position = self.runs.partition_point(|run| run.logical <= index);
        let run = position.checked_sub(1).and_then(|at| self.runs.get(at)).ok_or(jbd2::IoError::OutOfRange)?;
        let offset = index - run.logical;
        if offset >= run.length {
            return Err(jbd2::IoError::OutOfRange);
        }
        Ok(run.physical + offset)
    }

    fn check_length(&self, length: usize) -> Result<(), jbd2::IoError> {
        if length != self.home.block_size() as usize {
            return Err(jbd2::IoError::WrongLength);
        }
        Ok(())
    }
}

impl<D: BlockDevice> jbd2::JournalArea for JournalBlocks<D> {
    fn block_size(&self) -> u32 {
        self.home.block_size()
    }

    fn block_count(&self) -> u64 {
        self.block_count
    }

    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), jbd2::IoError> {
        self.check_length(buffer.len())?;
        let block = self.physical(index)?;
        self.home.read_blocks(block, buffer, Structure::Journal).map_err(journal_io_error)
    }

    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), jbd2::IoError> {
        self.check_length(data.len())?;
        let block = self.physical(index)?;
        self.home.write_blocks(block, data, Structure::Journal).map_err(journal_io_error)
    }

    fn flush(&self) -> Result<(), jbd2::IoError> {
        self.home.flush().map_err(journal_io_error)
    }
}

/// Reads journal block 0 of `area` and decodes the jbd2 superblock there.
pub(crate) fn read_journal_superblock<D: BlockDevice>(
    area: &JournalBlocks<D>,
) -> Result<jbd2::format::superblock::JournalSuperblock, JournalFailure> {
    use jbd2::JournalArea;
    let mut block = alloc::vec![0u8; area.block_size() as usize];
    area.read_block(0, &mut block).map_err(JournalFailure::Device)?;
    let superblock = jbd2::format::superblock::JournalSuperblock::decode(&block).map_err(JournalFailure::Superblock)?;
    superblock.geometry(area.block_size(), area.block_count()).map_err(JournalFailure::Superblock)?;
    Ok(superblock)
}

impl From<Error> for JournalFailure {
    fn from(error: Error) -> Self {
        JournalFailure::from_error(error)
    }
}
