//! What the journal needs from below: its own blocks, and the file
//! system's blocks for replay and checkpoint.
//!
//! ext4 implements [`JournalArea`] over inode 8 (a logical journal block is
//! mapped through that inode's extents) and [`FileSystemBlocks`] over the
//! same disk; host tests implement both over an image file or memory.
//! Methods take `&self` because the kernel shares one device between
//! threads: an implementation serialises its requests itself. **Must
//! never** be handed a buffer that is not exactly one block long: every
//! caller in this crate sizes its buffers from [`JournalArea::block_size`].

/// Why a block request failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IoError {
    /// The block lies past the end of the area or device.
    OutOfRange,
    /// The buffer is not exactly one block long.
    WrongLength,
    /// The device refuses writes.
    ReadOnly,
    /// The device reported an error (media error, reset, …).
    Device,
}

/// The blocks of the journal itself, numbered from 0 (the journal
/// superblock) to `block_count() - 1`.
pub trait JournalArea {
    /// Bytes in one block: the file system's block size.
    fn block_size(&self) -> u32;

    /// How many blocks the area holds (inode 8's size in blocks).
    fn block_count(&self) -> u64;

    /// Fills `buffer` (one block long) with journal block `index`.
    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), IoError>;

    /// Writes `data` (one block long) to journal block `index`.
    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), IoError>;

    /// Returns once every completed write is durable.
    fn flush(&self) -> Result<(), IoError>;
}

/// The file system's blocks, where replay and checkpoint put journaled
/// blocks back at their home locations.
pub trait FileSystemBlocks {
    /// Writes `data` (one block long) to file-system block `block_number`.
    fn write_fs_block(&self, block_number: u64, data: &[u8]) -> Result<(), IoError>;

    /// Returns once every completed write is durable.
    fn flush(&self) -> Result<(), IoError>;
}

impl<T: JournalArea + ?Sized> JournalArea for &T {
    fn block_size(&self) -> u32 {
        (**self).block_size()
    }

    fn block_count(&self) -> u64 {
        (**self).block_count()
    }

    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        (**self).read_block(index, buffer)
    }

    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), IoError> {
        (**self).write_block(index, data)
    }

    fn flush(&self) -> Result<(), IoError> {
        (**self).flush()
    }
}

impl<T: FileSystemBlocks + ?Sized> FileSystemBlocks for &T {
    fn write_fs_block(&self, block_number: u64, data: &[u8]) -> Result<(), IoError> {
        (**self).write_fs_block(block_number, data)
    }

    fn flush(&self) -> Result<(), IoError> {
        (**self).flush()
    }
}
