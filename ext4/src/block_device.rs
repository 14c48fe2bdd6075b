//! What the file system needs from a disk: whole 512-byte sectors.
//!
//! The kernel implements [`BlockDevice`] over virtio-blk; host tests use
//! [`crate::MemoryDisk`]. Methods take `&self` because the kernel shares one
//! device between threads: an implementation serialises requests itself
//! (a lock around its queue), and the file system never holds a borrow of
//! device state across calls. **Must never** be asked for a partial
//! sector: callers pass buffers whose length is a multiple of
//! [`SECTOR_SIZE`].

/// The unit of transfer.
pub const SECTOR_SIZE: usize = 512;

/// Why a device request failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IoError {
    /// The request reaches past the last sector.
    OutOfRange,
    /// The buffer length is not a multiple of [`SECTOR_SIZE`].
    PartialSector,
    /// The device is already serving a request that cannot be interleaved.
    Busy,
    /// The device refuses writes.
    ReadOnly,
    /// The device reported an error (media error, reset, …).
    Device,
}

/// A disk addressed in 512-byte sectors.
pub trait BlockDevice {
    /// How many sectors the device holds.
    fn sector_count(&self) -> u64;

    /// Fills `buffer` (a multiple of [`SECTOR_SIZE`] long) with the sectors
    /// starting at `first_sector`.
    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError>;

    /// Writes `data` (a multiple of [`SECTOR_SIZE`] long) to the sectors
    /// starting at `first_sector`.
    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError>;

    /// Returns once every completed write is durable.
    fn flush(&self) -> Result<(), IoError>;

    /// Writes each `(first_sector, data)` piece, in any order (a device
    /// may have several at once in flight); every piece is tried and the
    /// first failure reported. By default one after another.
    fn write_many(&self, pieces: &[(u64, &[u8])]) -> Result<(), IoError> {
        let mut outcome = Ok(());
        for &(first_sector, data) in pieces {
            outcome = outcome.and(self.write_sectors(first_sector, data));
        }
        outcome
    }
}

/// The byte range of `length` bytes starting at `first_sector`, checked
/// against a device of `sector_count` sectors: what every implementation
/// needs to refuse a bad request before touching anything.
pub fn checked_byte_range(
    first_sector: u64,
    length: usize,
    sector_count: u64,
) -> Result<core::ops::Range<u64>, IoError> {
    if !length.is_multiple_of(SECTOR_SIZE) {
        return Err(IoError::PartialSector);
    }
    let sectors = (length / SECTOR_SIZE) as u64;
    let end_sector = first_sector.checked_add(sectors).ok_or(IoError::OutOfRange)?;
    if end_sector > sector_count {
        return Err(IoError::OutOfRange);
    }
    let start = first_sector.checked_mul(SECTOR_SIZE as u64).ok_or(IoError::OutOfRange)?;
    let end = end_sector.checked_mul(SECTOR_SIZE as u64).ok_or(IoError::OutOfRange)?;
    Ok(start..end)
}
