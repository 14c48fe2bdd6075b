//! The device seen in file-system blocks: block numbers are checked
//! against the file system's size before they become sector numbers.
//!
//! **Must never** read or write outside `0..blocks_count`: a block number
//! found on disk is only an allegation until it passes [`Disk::read_blocks`]
//! or [`Disk::write_blocks`].

use crate::block_device::{BlockDevice, SECTOR_SIZE};
use crate::error::{Error, Problem, Structure};

/// A block device with the file system's block size and block count.
#[derive(Debug)]
pub struct Disk<D> {
    device: D,
    block_size: u32,
    blocks_count: u64,
}

impl<D: BlockDevice> Disk<D> {
    /// The device in blocks of `block_size` (a multiple of the sector
    /// size), of which the file system uses the first `blocks_count`.
    pub fn new(device: D, block_size: u32, blocks_count: u64) -> Self {
        Self { device, block_size, blocks_count }
    }

    /// The underlying device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The underlying device, giving up the wrapper.
    pub fn into_device(self) -> D {
        self.device
    }

    /// Fills `buffer` (a whole number of blocks) from consecutive blocks
    /// starting at `first_block`, for `structure`, which names where the
    /// block number came from if it lies outside the file system.
    pub fn read_blocks(&self, first_block: u64, buffer: &mut [u8], structure: Structure) -> Result<(), Error> {
        let outside = Error::corrupted(structure, Problem::Invalid("block outside the file system"));
        let block_size = self.block_size as usize;
        if block_size == 0 || !buffer.len().is_multiple_of(block_size) {
            return Err(Error::Io(crate::IoError::PartialSector));
        }
        let first_sector = self.first_sector(first_block, buffer.len(), outside)?;
        self.device.read_sectors(first_sector, buffer)?;
        Ok(())
    }

    /// Writes `data` (a whole number of blocks) to consecutive blocks
    /// starting at `first_block`, refused (as a corruption of `structure`)
    /// if any lies outside the file system.
    pub fn write_blocks(&self, first_block: u64, data: &[u8], structure: Structure) -> Result<(), Error> {
        let outside = Error::corrupted(structure, Problem::Invalid("write outside the file system"));
        let block_size = self.block_size as usize;
        if block_size == 0 || data.is_empty() || !data.len().is_multiple_of(block_size) {
            return Err(Error::Io(crate::IoError::PartialSector));
        }
        let first_sector = self.first_sector(first_block, data.len(), outside)?;
        self.device.write_sectors(first_sector, data)?;
        Ok(())
    }

    /// The first sector of `length` bytes of blocks from `first_block`, if
    /// they all lie inside the file system.
    fn first_sector(&self, first_block: u64, length: usize, outside: Error) -> Result<u64, Error> {
        let count = (length / self.block_size.max(1) as usize) as u64;
        let end = first_block.checked_add(count).ok_or(outside)?;
        if end > self.blocks_count {
            return Err(outside);
        }
        let sectors_per_block = u64::from(self.block_size) / SECTOR_SIZE as u64;
        first_block.checked_mul(sectors_per_block).ok_or(outside)
    }

    /// Makes completed writes durable.
    pub fn flush(&self) -> Result<(), Error> {
        Ok(self.device.flush()?)
    }
}

/// Reads `buffer.len()` bytes at byte `offset` of a raw device (for the
/// superblock, before the block size is known).
pub fn read_bytes<D: BlockDevice>(device: &D, offset: u64, buffer: &mut [u8]) -> Result<(), Error> {
    let sector = offset / SECTOR_SIZE as u64;
    let skip = (offset % SECTOR_SIZE as u64) as usize;
    let span = skip.checked_add(buffer.len()).ok_or(crate::IoError::OutOfRange)?;
    let mut sectors = alloc::vec![0u8; span.div_ceil(SECTOR_SIZE) * SECTOR_SIZE];
    device.read_sectors(sector, &mut sectors)?;
    let source = sectors.get(skip..span).ok_or(crate::IoError::OutOfRange)?;
    buffer.copy_from_slice(source);
    Ok(())
}
