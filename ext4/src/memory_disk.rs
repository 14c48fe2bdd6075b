//! A disk held in memory, for host tests and for tools that build images.
//!
//! Interior mutability is a `RefCell`, so a `MemoryDisk` is not `Sync`:
//! it serves one thread, which is all tests and tools need. The kernel's
//! virtio-blk device locks its queue instead. **Must never** panic: a
//! reentrant request (impossible through this crate) is [`IoError::Busy`].

use alloc::vec::Vec;
use core::cell::RefCell;

use crate::block_device::{checked_byte_range, BlockDevice, IoError, SECTOR_SIZE};

/// A `Vec<u8>` seen as a disk of 512-byte sectors (a trailing partial
/// sector is not addressable).
pub struct MemoryDisk {
    bytes: RefCell<Vec<u8>>,
}

impl core::fmt::Debug for MemoryDisk {
    /// The size only: a whole image is too much to print.
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(formatter, "MemoryDisk({} sectors)", self.sector_count())
    }
}

impl MemoryDisk {
    /// A disk whose contents are `bytes` (for example a whole image file).
    pub fn new(bytes: Vec<u8>) -> Self {
        Self { bytes: RefCell::new(bytes) }
    }

    /// The contents, for comparing or saving an image.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_inner()
    }
}

impl BlockDevice for MemoryDisk {
    fn sector_count(&self) -> u64 {
        self.bytes.try_borrow().map_or(0, |bytes| (bytes.len() / SECTOR_SIZE) as u64)
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let range = checked_byte_range(first_sector, buffer.len(), self.sector_count())?;
        let bytes = self.bytes.try_borrow().map_err(|_| IoError::Busy)?;
        let source = slice(&bytes, range).ok_or(IoError::OutOfRange)?;
        buffer.copy_from_slice(source);
        Ok(())
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        let range = checked_byte_range(first_sector, data.len(), self.sector_count())?;
        let mut bytes = self.bytes.try_borrow_mut().map_err(|_| IoError::Busy)?;
        let start = usize::try_from(range.start).map_err(|_| IoError::OutOfRange)?;
        let end = usize::try_from(range.end).map_err(|_| IoError::OutOfRange)?;
        let target = bytes.get_mut(start..end).ok_or(IoError::OutOfRange)?;
        target.copy_from_slice(data);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

fn slice(bytes: &[u8], range: core::ops::Range<u64>) -> Option<&[u8]> {
    let start = usize::try_from(range.start).ok()?;
    let end = usize::try_from(range.end).ok()?;
    bytes.get(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn sectors_round_trip_and_bad_requests_are_refused() {
        let disk = MemoryDisk::new(vec![0; 4 * SECTOR_SIZE + 100]);
        assert_eq!(disk.sector_count(), 4);
        disk.write_sectors(1, &[7; SECTOR_SIZE]).unwrap();
        let mut buffer = [0; 2 * SECTOR_SIZE];
        disk.read_sectors(0, &mut buffer).unwrap();
        assert_eq!(&buffer[..SECTOR_SIZE], &[0; SECTOR_SIZE][..]);
        assert_eq!(&buffer[SECTOR_SIZE..], &[7; SECTOR_SIZE][..]);
        assert_eq!(disk.read_sectors(3, &mut buffer), Err(IoError::OutOfRange));
        assert_eq!(disk.read_sectors(u64::MAX, &mut buffer), Err(IoError::OutOfRange));
        assert_eq!(disk.read_sectors(0, &mut [0; 100]), Err(IoError::PartialSector));
    }
}
