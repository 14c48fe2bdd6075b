//! Directory blocks: a chain of `ext4_dir_entry_2` records (inode le32,
//! rec_len le16, name_len u8, file_type u8, name), each record's length
//! reaching the next; under `metadata_csum`, leaf blocks end with a
//! 12-byte tail record (inode 0, rec_len 12, name_len 0, type 0xDE) whose
//! last four bytes are `crc32c(inode seed, block[..size - 12])`.
//!
//! Every record is checked the way Linux's `__ext4_check_dir_entry` does
//! before its name is looked at. Entries with inode 0 are unused space,
//! which is also how htree index blocks hide from a linear scan (see
//! [`crate::htree`]). **Must never** yield a name that runs past its record.

use core::ops::ControlFlow;

use crate::bytes::{byte, le16, le32};
use crate::checksum::crc32c;
use crate::error::{Error, Problem, Structure};
use crate::inode::{FileType, InodeNumber};
use crate::superblock::{Checksums, Superblock};

/// Longest name.
pub const MAX_NAME_LENGTH: usize = 255;
/// Size of the tail record holding a leaf block's checksum.
pub const TAIL_SIZE: usize = 12;
/// `det_reserved_ft`: the tail's file-type byte.
pub(crate) const TAIL_FILE_TYPE: u8 = 0xDE;
pub(crate) const HEADER: usize = 8;
/// The smallest record (`EXT4_DIR_REC_LEN(1)`).
const SMALLEST_RECORD: usize = 12;

/// One directory entry, borrowed from the block it was read from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Entry<'a> {
    /// The inode the name refers to.
    pub inode: InodeNumber,
    /// The type recorded in the entry (`None` if unknown or not recorded).
    pub file_type: Option<FileType>,
    /// The name (1 to 255 bytes, no `/` or NUL).
    pub name: &'a [u8],
}

/// `rec_len` as stored to bytes (Linux `ext4_rec_len_from_disk`): with 64 KiB
/// blocks, 65535 and 0 mean 65536 and the low two bits carry bits 16 and 17.
pub fn record_length(stored: u16, block_size: u32) -> usize {
    if block_size < 65536 {
        return usize::from(stored);
    }
    if stored == u16::MAX || stored == 0 {
        return block_size as usize;
    }
    usize::from(stored & 0xFFFC) | (usize::from(stored & 3) << 16)
}

/// The record length a name of `name_length` bytes needs (`EXT4_DIR_REC_LEN`).
pub fn needed_record_length(name_length: usize) -> usize {
    (HEADER + name_length + 3) & !3
}

/// Calls `visit` with each used entry of `records` (a block, or the part
/// before its tail), checking every record; stops early when `visit` breaks.
pub fn for_each_entry<'a>(
    records: &'a [u8],
    superblock: &Superblock,
    structure: Structure,
    visit: &mut dyn FnMut(Entry<'a>) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, Error> {
    let mut offset = 0;
    while offset < records.len() {
        let record = records.get(offset..).unwrap_or_default();
        let length = check_record(record, superblock, structure)?;
        let inode = le32(record, 0);
        if inode != 0 {
            let name_length = usize::from(byte(record, 6));
            let name = record.get(HEADER..HEADER + name_length).unwrap_or_default();
            if name.is_empty() || name.iter().any(|&b| b == b'/' || b == 0) {
                return Err(Error::invalid(structure, "name empty or containing '/' or NUL"));
            }
            let file_type = entry_file_type(byte(record, 7), superblock);
            if visit(Entry { inode: InodeNumber(inode), file_type, name }).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        offset += length;
    }
    Ok(ControlFlow::Continue(()))
}

/// The length of the record at the start of `record` (which runs to the
/// end of the region), after Linux's checks.
fn check_record(record: &[u8], superblock: &Superblock, structure: Structure) -> Result<usize, Error> {
    let fail = |what| Err(Error::invalid(structure, what));
    if record.len() < SMALLEST_RECORD {
        return fail("directory entry overrun");
    }
    let length = record_length(le16(record, 4), superblock.block_size);
    if length < SMALLEST_RECORD {
        return fail("rec_len is smaller than minimal");
    }
    if !length.is_multiple_of(4) {
        return fail("rec_len % 4 != 0");
    }
    if length < needed_record_length(usize::from(byte(record, 6))) {
        return fail("rec_len is too small for name_len");
    }
    if length > record.len() {
        return fail("directory entry overrun");
    }
    if le32(record, 0) > superblock.inodes_count {
        return fail("inode out of bounds");
    }
    Ok(length)
}

/// The dirent type code as a [`FileType`] (Linux `get_dtype`: unknown
/// without `filetype` or for codes above 7).
fn entry_file_type(code: u8, superblock: &Superblock) -> Option<FileType> {
    if !superblock.has_file_types() {
        return None;
    }
    Some(match code {
        1 => FileType::Regular,
        2 => FileType::Directory,
        3 => FileType::CharacterDevice,
        4 => FileType::BlockDevice,
        5 => FileType::Fifo,
        6 => FileType::Socket,
        7 => FileType::Symlink,
        _ => return None,
    })
}

/// The records of a leaf block: all of it, or with `metadata_csum` the part
/// before its tail, once the tail's checksum is verified.
pub fn leaf_records<'a>(
    block: &'a [u8],
    superblock: &Superblock,
    seed: u32,
    structure: Structure,
) -> Result<&'a [u8], Error> {
    let Checksums::Crc32c { .. } = superblock.checksums else { return Ok(block) };
    let split = block.len().checked_sub(TAIL_SIZE).ok_or(Error::invalid(structure, "block too small"))?;
    let (records, tail) = block.split_at(split);
    let is_tail = le32(tail, 0) == 0
        && record_length(le16(tail, 4), superblock.block_size) == TAIL_SIZE
        && byte(tail, 6) == 0
        && byte(tail, 7) == TAIL_FILE_TYPE;
    if !is_tail {
        return Err(Error::invalid(structure, "no space for directory leaf checksum"));
    }
    if le32(tail, 8) != leaf_checksum(records, seed) {
        return Err(Error::corrupted(structure, Problem::ChecksumMismatch));
    }
    Ok(records)
}

/// A leaf block's checksum: `crc32c(inode seed, records)`.
pub fn leaf_checksum(records: &[u8], seed: u32) -> u32 {
    crc32c(seed, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lengths_of_64_kib_blocks_carry_two_more_bits() {
        assert_eq!(record_length(12, 4096), 12);
        assert_eq!(record_length(u16::MAX, 4096), 65535);
        assert_eq!(record_length(u16::MAX, 65536), 65536);
        assert_eq!(record_length(0, 65536), 65536);
        assert_eq!(record_length(0xFFF0, 65536), 0xFFF0);
        assert_eq!(record_length(0x0011, 65536), 0x1_0010);
    }

    #[test]
    fn names_need_eight_bytes_of_header_rounded_to_four() {
        assert_eq!(needed_record_length(1), 12);
        assert_eq!(needed_record_length(4), 12);
        assert_eq!(needed_record_length(5), 16);
        assert_eq!(needed_record_length(255), 264);
    }
}
