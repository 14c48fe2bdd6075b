//! Block device files (`/dev/vda`, `/dev/vdb`, …): a disk read and
//! written at any byte offset and length, as Linux's block devices allow.
//!
//! Whole-sector transfers go straight between the caller's buffer and the
//! driver; a partial sector at either end of a write is read first, changed
//! and written back whole. Minor numbers go in steps of 16 per disk (Linux's
//! virtio-blk numbering; partitions are not shown).
//!
//! Must never touch sectors past the disk's end, or report a device error
//! as anything but an errno.

use alloc::sync::Arc;
use alloc::vec::Vec;

use drivers::{BlockIoError, VirtioBlock, SECTOR_BYTES};
use linux_abi::Errno;

/// The major number of virtio disks (Linux assigns it dynamically; 254 is
/// what Debian's kernels show).
pub const VIRTIO_BLOCK_MAJOR: u32 = 254;
const MINORS_PER_DISK: u32 = 16;

/// The disks as `/dev` shows them: name and (major, minor).
pub fn nodes() -> impl Iterator<Item = (&'static str, (u32, u32))> {
    drivers::block_devices().iter().enumerate().map(|(index, disk)| (disk.name.as_str(), (VIRTIO_BLOCK_MAJOR, index as u32 * MINORS_PER_DISK)))
}

/// The disk a block device number names.
pub fn disk(numbers: (u32, u32)) -> Option<&'static Arc<VirtioBlock>> {
    let (major, minor) = numbers;
    if major != VIRTIO_BLOCK_MAJOR || minor % MINORS_PER_DISK != 0 {
        return None;
    }
    drivers::block_devices().get((minor / MINORS_PER_DISK) as usize)
}

/// The disk's size in bytes.
pub fn size(disk: &VirtioBlock) -> u64 {
    disk.capacity_sectors() * SECTOR_BYTES as u64
}

/// Reads up to `buffer.len()` bytes at `offset` (fewer at the end).
pub fn read_at(disk: &VirtioBlock, offset: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
    let length = (buffer.len() as u64).min(size(disk).saturating_sub(offset)) as usize;
    if length == 0 {
        return Ok(0);
    }
    let (first, sectors) = covering(offset, length);
    if is_whole_sectors(offset, length) {
        disk.read(first, &mut buffer[..length]).map_err(errno)?;
        return Ok(length);
    }
    let mut whole = zeroed(sectors * SECTOR_BYTES)?;
    disk.read(first, &mut whole).map_err(errno)?;
    let start = (offset % SECTOR_BYTES as u64) as usize;
    buffer[..length].copy_from_slice(&whole[start..start + length]);
    Ok(length)
}

/// Writes `data` at `offset` (fewer bytes at the end; ENOSPC past it).
pub fn write_at(disk: &VirtioBlock, offset: u64, data: &[u8]) -> Result<usize, Errno> {
    if data.is_empty() {
        return Ok(0);
    }
    let length = (data.len() as u64).min(size(disk).saturating_sub(offset)) as usize;
    if length == 0 {
        return Err(Errno::ENOSPC);
    }
    let (first, sectors) = covering(offset, length);
    if is_whole_sectors(offset, length) {
        disk.write(first, &data[..length]).map_err(errno)?;
        return Ok(length);
    }
    let mut whole = zeroed(sectors * SECTOR_BYTES)?;
    let start = (offset % SECTOR_BYTES as u64) as usize;
    let last = whole.len() - SECTOR_BYTES;
    if start != 0 {
        disk.read(first, &mut whole[..SECTOR_BYTES]).map_err(errno)?;
    }
    if (start + length) % SECTOR_BYTES != 0 && (start == 0 || sectors > 1) {
        disk.read(first + sectors as u64 - 1, &mut whole[last..]).map_err(errno)?;
    }
    whole[start..start + length].copy_from_slice(&data[..length]);
    disk.write(first, &whole).map_err(errno)?;
    Ok(length)
}

/// Makes what was written durable (`fsync`, `fdatasync`, `sync`).
pub fn flush(disk: &VirtioBlock) -> Result<(), Errno> {
    disk.flush().map_err(errno)
}

/// Whether `[offset, offset + length)` is whole sectors (then no bytes
/// around it need reading, and no staging copy is made).
fn is_whole_sectors(offset: u64, length: usize) -> bool {
    offset % SECTOR_BYTES as u64 == 0 && length % SECTOR_BYTES == 0
}

/// The first sector and the number of sectors holding `[offset, offset + length)`.
fn covering(offset: u64, length: usize) -> (u64, usize) {
    let first = offset / SECTOR_BYTES as u64;
    let end = (offset + length as u64).div_ceil(SECTOR_BYTES as u64);
    (first, (end - first) as usize)
}

fn zeroed(bytes: usize) -> Result<Vec<u8>, Errno> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(bytes).map_err(|_| Errno::ENOMEM)?;
    buffer.resize(bytes, 0);
    Ok(buffer)
}

/// The errno of a failed transfer.
pub fn errno(error: BlockIoError) -> Errno {
    match error {
        BlockIoError::OutOfMemory => Errno::ENOMEM,
        BlockIoError::OutOfRange => Errno::EINVAL,
        BlockIoError::ReadOnly => Errno::EROFS,
        BlockIoError::Device | BlockIoError::Broken => Errno::EIO,
    }
}
