//! The device seen in file-system blocks, at their home locations: block
//! numbers are checked against the file system's size before they become
//! sector numbers. The device is shared (`Arc`) between the file system
//! and its journal area, which both address the same disk.
//!
//! This is also the journal's [`jbd2::FileSystemBlocks`]: where replay and
//! checkpoint put logged blocks back. **Must never** read or write outside
//! `0..blocks_count`: a block number found on disk is only an allegation
//! until it passes [`HomeBlocks::read_blocks`] or [`HomeBlocks::write_blocks`].

use alloc::sync::Arc;

use crate::block_device::{BlockDevice, IoError, SECTOR_SIZE};
use crate::error::{Error, Problem, Structure};

/// A shared block device with the file system's block size and count.
#[derive(Debug)]
pub(crate) struct HomeBlocks<D> {
    device: Arc<D>,
    block_size: u32,
    blocks_count: u64,
}

impl<D> Clone for HomeBlocks<D> {
    fn clone(&self) -> Self {
        Self { device: self.device.clone(), block_size: self.block_size, blocks_count: self.blocks_count }
    }
}

impl<D: BlockDevice> HomeBlocks<D> {
    /// `device` in blocks of `block_size` (a multiple of the sector size),
    /// of which the file system uses the first `blocks_count`.
    pub(crate) fn new(device: Arc<D>, block_size: u32, blocks_count: u64) -> Self {
        Self { device, block_size, blocks_count }
    }

    /// The underlying device.
    pub(crate) fn device(&self) -> &D {
        &self.device
    }

    /// The shared handle on the device.
    pub(crate) fn shared_device(&self) -> &Arc<D> {
        &self.device
    }

    /// Bytes per block.
    pub(crate) fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Fills `buffer` (a whole number of blocks) from consecutive blocks
    /// starting at `first_block`, for `structure`, which names where the
    /// block number came from if it lies outside the file system.
    pub(crate) fn read_blocks(&self, first_block: u64, buffer: &mut [u8], structure: Structure) -> Result<(), Error> {
        let outside = Error::corrupted(structure, Problem::Invalid("block outside the file system"));
        let first_sector = self.first_sector(first_block, buffer.len(), outside)?;
        self.device.read_sectors(first_sector, buffer)?;
        Ok(())
    }

    /// Writes `data` (a whole number of blocks) to consecutive blocks
    /// starting at `first_block`, refused (as a corruption of `structure`)
    /// if any lies outside the file system.
    pub(crate) fn write_blocks(&self, first_block: u64, data: &[u8], structure: Structure) -> Result<(), Error> {
        let outside = Error::corrupted(structure, Problem::Invalid("write outside the file system"));
        if data.is_empty() {
            return Err(Error::Io(IoError::PartialSector));
        }
        let first_sector = self.first_sector(first_block, data.len(), outside)?;
        self.device.write_sectors(first_sector, data)?;
        Ok(())
    }

    /// Makes completed writes durable.
    pub(crate) fn flush(&self) -> Result<(), Error> {
        Ok(self.device.flush()?)
    }

    /// The first sector of `length` bytes of blocks from `first_block`, if
    /// `length` is a whole number of blocks that all lie inside the file
    /// system.
    fn first_sector(&self, first_block: u64, length: usize, outside: Error) -> Result<u64, Error> {
        let block_size = self.block_size as usize;
        if block_size == 0 || !length.is_multiple_of(block_size) {
            return Err(Error::Io(IoError::PartialSector));
        }
        let count = (length / block_size) as u64;
        let end = first_block.checked_add(count).ok_or(outside)?;
        if end > self.blocks_count {
            return Err(outside);
        }
        let sectors_per_block = u64::from(self.block_size) / SECTOR_SIZE as u64;
        first_block.checked_mul(sectors_per_block).ok_or(outside)
    }
}

/// The journal's view of an error of this crate's device layer.
pub(crate) fn journal_io_error(error: Error) -> jbd2::IoError {
    match error {
        Error::Io(IoError::OutOfRange) | Error::Corrupted(_) => jbd2::IoError::OutOfRange,
        Error::Io(IoError::PartialSector) => jbd2::IoError::WrongLength,
        Error::Io(IoError::ReadOnly) => jbd2::IoError::ReadOnly,
        _ => jbd2::IoError::Device,
    }
}

impl<D: BlockDevice> jbd2::FileSystemBlocks for HomeBlocks<D> {
    fn write_fs_block(&self, block_number: u64, data: &[u8]) -> Result<(), jbd2::IoError> {
        if data.len() != self.block_size as usize {
            return Err(jbd2::IoError::WrongLength);
        }
        self.write_blocks(block_number, data, Structure::Journal).map_err(journal_io_error)
    }

    fn flush(&self) -> Result<(), jbd2::IoError> {
        HomeBlocks::flush(self).map_err(journal_io_error)
    }
}
