//! The file system's blocks as every reader sees them: the home location
//! on the device, except for metadata blocks the journal holds newer
//! images of (logged, not yet checkpointed home), which are read from
//! memory.
//!
//! With a journal, a metadata block reaches its home location only at a
//! checkpoint, after the transaction that changed it committed; until
//! then its current image lives here, so reads never see a stale home
//! copy. **Must never** keep an image of a block that was freed (it may
//! become file data written in place) nor read or write outside
//! `0..blocks_count`.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::error::{Error, Structure};
use crate::home_blocks::HomeBlocks;

/// A block device with the file system's block size and block count, and
/// the journaled images newer than their home copies.
#[derive(Debug)]
pub struct Disk<D> {
    home: HomeBlocks<D>,
    journaled: BTreeMap<u64, Vec<u8>>,
}

impl<D: BlockDevice> Disk<D> {
    /// The shared `device` in blocks of `block_size` (a multiple of the
    /// sector size), of which the file system uses the first `blocks_count`.
    pub(crate) fn new(device: Arc<D>, block_size: u32, blocks_count: u64) -> Self {
        Self { home: HomeBlocks::new(device, block_size, blocks_count), journaled: BTreeMap::new() }
    }

    /// The underlying device.
    pub fn device(&self) -> &D {
        self.home.device()
    }

    /// The home locations, bypassing journaled images (for the journal's
    /// replay and checkpoint, and for data written in place).
    pub(crate) fn home(&self) -> &HomeBlocks<D> {
        &self.home
    }

    /// The shared handle on the device, giving up the wrapper.
    pub(crate) fn into_shared_device(self) -> Arc<D> {
        self.home.shared_device().clone()
    }

    /// Fills `buffer` (a whole number of blocks) from consecutive blocks
    /// starting at `first_block`, for `structure`, which names where the
    /// block number came from if it lies outside the file system.
    pub fn read_blocks(&self, first_block: u64, buffer: &mut [u8], structure: Structure) -> Result<(), Error> {
        let block_size = self.home.block_size() as usize;
        let count = (buffer.len() / block_size.max(1)) as u64;
        let end = first_block.saturating_add(count);
        // The home copy is read only where no journaled image covers it
        // (a block changed in the running transaction is read from memory
        // alone, as most metadata reads are).
        let covered = self.journaled.range(first_block..end).count() as u64;
        if covered < count || !buffer.len().is_multiple_of(block_size.max(1)) {
            self.home.read_blocks(first_block, buffer, structure)?;
        }
        for (&block, image) in self.journaled.range(first_block..end) {
            let offset = (block - first_block) as usize * block_size;
            if let Some(target) = buffer.get_mut(offset..offset + block_size) {
                target.copy_from_slice(image);
            }
        }
        Ok(())
    }

    /// Writes `data` (a whole number of blocks) to consecutive blocks
    /// starting at `first_block` in place (the caller [`Disk::forget`]s
    /// journaled images of them); refused (as a corruption of
    /// `structure`) if any lies outside the file system.
    pub fn write_blocks(&self, first_block: u64, data: &[u8], structure: Structure) -> Result<(), Error> {
        self.home.write_blocks(first_block, data, structure)
    }

    /// Makes completed writes durable.
    pub fn flush(&self) -> Result<(), Error> {
        self.home.flush()
    }

    /// Keeps `image` as `block`'s current contents: it was logged and is
    /// not yet home.
    pub(crate) fn remember(&mut self, block: u64, image: &[u8]) {
        self.journaled.insert(block, image.to_vec());
    }

    /// Whether `block`'s current image is a journaled one: written by this
    /// file system since the last checkpoint, so already checked and
    /// sealed with its checksum.
    pub(crate) fn is_journaled(&self, block: u64) -> bool {
        self.journaled.contains_key(&block)
    }

    /// Drops any journaled image of `count` blocks from `first` (freed, or
    /// about to be written in place).
    pub(crate) fn forget(&mut self, first: u64, count: u64) {
        let end = first.saturating_add(count);
        let doomed: Vec<u64> = self.journaled.range(first..end).map(|(&block, _)| block).collect();
        for block in doomed {
            self.journaled.remove(&block);
        }
    }

    /// Drops every journaled image: a checkpoint put them all home.
    pub(crate) fn forget_all(&mut self) {
        self.journaled.clear();
    }

    /// How many journaled images are held.
    pub(crate) fn journaled_count(&self) -> usize {
        self.journaled.len()
    }
}

/// Reads `buffer.len()` bytes at byte `offset` of a raw device (for the
/// superblock, before the block size is known).
pub fn read_bytes<D: BlockDevice>(device: &D, offset: u64, buffer: &mut [u8]) -> Result<(), Error> {
    let sector = offset / crate::SECTOR_SIZE as u64;
    let skip = (offset % crate::SECTOR_SIZE as u64) as usize;
    let span = skip.checked_add(buffer.len()).ok_or(crate::IoError::OutOfRange)?;
    let mut sectors = alloc::vec![0u8; span.div_ceil(crate::SECTOR_SIZE) * crate::SECTOR_SIZE];
    device.read_sectors(sector, &mut sectors)?;
    let source = sectors.get(skip..span).ok_or(crate::IoError::OutOfRange)?;
    buffer.copy_from_slice(source);
    Ok(())
}
