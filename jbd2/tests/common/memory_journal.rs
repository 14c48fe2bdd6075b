//! A journal alone in memory, for tests that recover thousands of times.

use std::cell::{Cell, RefCell};

use jbd2::{FileSystemBlocks, IoError, JournalArea};

use super::Image;

/// A journal held alone in memory (no file system around it): replayed
/// blocks are counted and dropped. For tests that run recovery thousands
/// of times.
pub struct MemoryJournal {
    pub bytes: RefCell<Vec<u8>>,
    pub block_size: u32,
    pub fs_writes: Cell<u64>,
}

impl MemoryJournal {
    /// The journal blocks of `image`.
    pub fn from_image(image: &Image) -> MemoryJournal {
        let count = JournalArea::block_count(image);
        let bytes = (0..count)
            .flat_map(|index| image.journal_block(index))
            .collect();
        MemoryJournal {
            bytes: RefCell::new(bytes),
            block_size: image.block_size,
            fs_writes: Cell::new(0),
        }
    }

    /// Copies the first `blocks` journal blocks from `original`.
    pub fn restore_from(&self, original: &[u8], blocks: usize) {
        let length = blocks * self.block_size as usize;
        self.bytes.borrow_mut()[..length].copy_from_slice(&original[..length]);
    }
}

impl JournalArea for MemoryJournal {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn block_count(&self) -> u64 {
        (self.bytes.borrow().len() / self.block_size as usize) as u64
    }

    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let size = self.block_size as usize;
        let start = usize::try_from(index)
            .map_err(|_| IoError::OutOfRange)?
            .checked_mul(size)
            .ok_or(IoError::OutOfRange)?;
        let bytes = self.bytes.borrow();
        let block = bytes.get(start..start + size).ok_or(IoError::OutOfRange)?;
        buffer.copy_from_slice(block);
        Ok(())
    }

    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), IoError> {
        let size = self.block_size as usize;
        let start = usize::try_from(index)
            .map_err(|_| IoError::OutOfRange)?
            .checked_mul(size)
            .ok_or(IoError::OutOfRange)?;
        let mut bytes = self.bytes.borrow_mut();
        let block = bytes
            .get_mut(start..start + size)
            .ok_or(IoError::OutOfRange)?;
        block.copy_from_slice(data);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

impl FileSystemBlocks for MemoryJournal {
    fn write_fs_block(&self, _block_number: u64, _data: &[u8]) -> Result<(), IoError> {
        self.fs_writes.set(self.fs_writes.get() + 1);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}
