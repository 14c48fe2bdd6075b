//! One inode: type and permissions, owner, size, link count, flags, times
//! and the 60-byte `i_block` area (an extent root, a block map or a fast
//! symlink's target), checked by its checksum under `metadata_csum`.
//!
//! Checksum (Linux `ext4_inode_csum`): with `seed = crc32c(crc32c(fs_seed,
//! number as le32), i_generation as le32)`, the crc32c chain over all
//! `s_inode_size` bytes with `i_checksum_lo` (0x7C) and, when
//! `i_extra_isize` covers it, `i_checksum_hi` (0x82) read as zero; the low
//! half is stored in `_lo`, the high half in `_hi` (or dropped).
//! **Must never** return an inode that is free or failed a check.

use alloc::vec::Vec;

use crate::bytes::{array, le16, le32, put, put_le16, put_le32};
use crate::checksum::crc32c;
use crate::error::{Error, Problem, Structure};
use crate::superblock::{Checksums, Superblock, GOOD_OLD_INODE_SIZE};
use crate::timestamp::Timestamp;

/// Inode flags (`i_flags`) this crate looks at.
pub mod flags {
    /// Directory entries are encrypted.
    pub const ENCRYPT: u32 = 0x800;
    /// The directory is a hashed b-tree.
    pub const INDEX: u32 = 0x1000;
    /// `i_blocks` counts file-system blocks, not 512-byte sectors.
    pub const HUGE_FILE: u32 = 0x40000;
    /// `i_block` holds an extent tree root.
    pub const EXTENTS: u32 = 0x80000;
    /// The inode holds a large extended attribute value.
    pub const EA_INODE: u32 = 0x200000;
    /// The data is inside the inode.
    pub const INLINE_DATA: u32 = 0x1000_0000;
    /// Names in the directory are compared without case.
    pub const CASEFOLD: u32 = 0x4000_0000;
}

/// An inode number (1-based; the root directory is [`InodeNumber::ROOT`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct InodeNumber(pub u32);

impl InodeNumber {
    /// The root directory.
    pub const ROOT: InodeNumber = InodeNumber(2);
}

/// What kind of file an inode is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FileType {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A character device.
    CharacterDevice,
    /// A block device.
    BlockDevice,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
}

impl FileType {
    /// The type in the `S_IFMT` bits of `mode`, if they name one.
    pub fn from_mode(mode: u16) -> Option<Self> {
        Some(match mode & 0xF000 {
            0x1000 => FileType::Fifo,
            0x2000 => FileType::CharacterDevice,
            0x4000 => FileType::Directory,
            0x6000 => FileType::BlockDevice,
            0x8000 => FileType::Regular,
            0xA000 => FileType::Symlink,
            0xC000 => FileType::Socket,
            _ => return None,
        })
    }
}

/// Size of `i_block`.
pub const BLOCK_AREA_SIZE: usize = 60;
const CHECKSUM_LOW: usize = 0x7C;
const CHECKSUM_HIGH: usize = 0x82;
const EXTRA_START: usize = GOOD_OLD_INODE_SIZE as usize;

/// A parsed, checked inode.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Inode {
    /// Its number.
    pub number: InodeNumber,
    /// Its type.
    pub file_type: FileType,
    /// `i_mode`: type and permission bits.
    pub mode: u16,
    /// Owner (both halves).
    pub uid: u32,
    /// Group (both halves).
    pub gid: u32,
    /// Size in bytes (both halves).
    pub size: u64,
    /// Hard links.
    pub links_count: u16,
    /// Space used, in 512-byte units (converted from block units for
    /// `HUGE_FILE` inodes).
    pub sectors: u64,
    /// `i_flags` (see [`flags`]).
    pub flags: u32,
    /// Last access.
    pub access_time: Timestamp,
    /// Last status change.
    pub change_time: Timestamp,
    /// Last modification.
    pub modification_time: Timestamp,
    /// Creation, if the inode has room for it.
    pub creation_time: Option<Timestamp>,
    /// Deletion time (orphan-list link while the inode is an orphan).
    pub deletion_time: u32,
    /// `i_generation` (NFS handles; part of the checksum seed).
    pub generation: u32,
    /// Block of extended attributes (0: none).
    pub file_acl: u64,
    /// The `i_block` area.
    pub block_area: [u8; BLOCK_AREA_SIZE],
    /// Bytes used past the first 128 (`i_extra_isize`).
    pub extra_size: u16,
    /// Seed for this inode's extent and directory block checksums.
    pub checksum_seed: u32,
    /// The on-disk bytes as read (or as created), `s_inode_size` long.
    pub(crate) bytes: Vec<u8>,
}

impl Inode {
    /// Parses and checks the on-disk inode `bytes` (`s_inode_size` long).
    pub fn parse(bytes: &[u8], number: InodeNumber, superblock: &Superblock) -> Result<Self, Error> {
        let structure = Structure::Inode(number.0);
        if bytes.len() < EXTRA_START {
            return Err(Error::invalid(structure, "inode smaller than 128 bytes"));
        }
        let extra_size = extra_size(bytes, structure)?;
        let generation = le32(bytes, 0x64);
        let checksum_seed = checksum_seed(superblock, number, generation);
        verify_checksum(bytes, superblock, checksum_seed, extra_size, structure)?;
        let links_count = le16(bytes, 0x1A);
        let mode = le16(bytes, 0x0);
        if links_count == 0 {
            return Err(Error::InodeNotInUse(number.0));
        }
        let file_type = FileType::from_mode(mode).ok_or(Error::invalid(structure, "bogus i_mode"))?;
        let size = u64::from(le32(bytes, 0x4)) | (u64::from(le32(bytes, 0x6C)) << 32);
        if i64::try_from(size).is_err() {
            return Err(Error::invalid(structure, "i_size above 2^63"));
        }
        let flags = le32(bytes, 0x20);
        check_flags(flags, structure)?;
        let fits = |offset: usize| offset + 4 <= EXTRA_START + usize::from(extra_size);
        let extra = |offset: usize| fits(offset).then(|| le32(bytes, offset));
        Ok(Self {
            number,
            file_type,
            mode,
            uid: u32::from(le16(bytes, 0x2)) | (u32::from(le16(bytes, 0x78)) << 16),
            gid: u32::from(le16(bytes, 0x18)) | (u32::from(le16(bytes, 0x7A)) << 16),
            size,
            links_count,
            sectors: sectors(bytes, flags, superblock),
            flags,
            access_time: Timestamp::decode(le32(bytes, 0x8), extra(0x8C)),
            change_time: Timestamp::decode(le32(bytes, 0xC), extra(0x84)),
            modification_time: Timestamp::decode(le32(bytes, 0x10), extra(0x88)),
            creation_time: extra(0x90).map(|base| Timestamp::decode(base, extra(0x94))),
            deletion_time: le32(bytes, 0x14),
            generation,
            file_acl: u64::from(le32(bytes, 0x68)) | (u64::from(le16(bytes, 0x76)) << 32),
            block_area: array(bytes, 0x28).unwrap_or([0; BLOCK_AREA_SIZE]),
            extra_size,
            checksum_seed,
            bytes: bytes.to_vec(),
        })
    }

    /// Permission bits (`mode & 0o7777`).
    pub fn permissions(&self) -> u16 {
        self.mode & 0o7777
    }

    /// Whether `i_block` holds an extent tree (else a block map).
    pub fn uses_extents(&self) -> bool {
        self.flags & flags::EXTENTS != 0
    }

    /// Whether a directory is a hashed b-tree.
    pub fn is_htree(&self) -> bool {
        self.flags & flags::INDEX != 0
    }

    /// The inode as stored, with the writable fields written back and the
    /// checksum recomputed (the fields' own halves: high uid/gid, size,
    /// times' extra words only where the inode has room).
    pub fn encode(&self, superblock: &Superblock) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        put_le16(&mut bytes, 0x0, self.mode);
        put_le16(&mut bytes, 0x2, self.uid as u16);
        put_le16(&mut bytes, 0x78, (self.uid >> 16) as u16);
        put_le16(&mut bytes, 0x18, self.gid as u16);
        put_le16(&mut bytes, 0x7A, (self.gid >> 16) as u16);
        put_le32(&mut bytes, 0x4, self.size as u32);
        put_le32(&mut bytes, 0x6C, (self.size >> 32) as u32);
        put_le16(&mut bytes, 0x1A, self.links_count);
        let flags = encode_sectors(&mut bytes, self.sectors, self.flags, superblock);
        put_le32(&mut bytes, 0x20, flags);
        put_le32(&mut bytes, 0x14, self.deletion_time);
        put_le32(&mut bytes, 0x64, self.generation);
        put(&mut bytes, 0x28, &self.block_area);
        let extra_end = EXTRA_START + usize::from(self.extra_size);
        let times =
            [(0x8, 0x8C, self.access_time), (0xC, 0x84, self.change_time), (0x10, 0x88, self.modification_time)];
        for (base, extra, time) in times {
            let (base_word, extra_word) = time.encode();
            put_le32(&mut bytes, base, base_word);
            if extra + 4 <= extra_end {
                put_le32(&mut bytes, extra, extra_word);
            }
        }
        if let Some(creation) = self.creation_time.filter(|_| 0x98 <= extra_end) {
            let (base_word, extra_word) = creation.encode();
            put_le32(&mut bytes, 0x90, base_word);
            put_le32(&mut bytes, 0x94, extra_word);
        }
        let checksum = inode_checksum(&bytes, self.checksum_seed, self.extra_size);
        if let (Checksums::Crc32c { .. }, Some(checksum)) = (superblock.checksums, checksum) {
            put_le16(&mut bytes, CHECKSUM_LOW, checksum as u16);
            if has_high_checksum(bytes.len(), self.extra_size) {
                put_le16(&mut bytes, CHECKSUM_HIGH, (checksum >> 16) as u16);
            }
        }
        bytes
    }
}

/// Writes `sectors` (512-byte units) into `i_blocks` and returns the flags
/// to store: in 512-byte units while they fit 32 bits (48 with
/// `huge_file`), else in blocks with `HUGE_FILE`. Callers check
/// [`sectors_fit`] first; a count that fits nowhere is stored truncated.
fn encode_sectors(bytes: &mut [u8], sectors: u64, flags: u32, superblock: &Superblock) -> u32 {
    let flags = flags & !flags::HUGE_FILE;
    if !superblock.has_huge_files() || sectors < 1 << 48 {
        put_le32(bytes, 0x1C, sectors as u32);
        if superblock.has_huge_files() {
            put_le16(bytes, 0x74, (sectors >> 32) as u16);
        }
        return flags;
    }
    let blocks = sectors >> (superblock.block_size.trailing_zeros() - 9);
    put_le32(bytes, 0x1C, blocks as u32);
    put_le16(bytes, 0x74, (blocks >> 32) as u16);
    flags | flags::HUGE_FILE
}

/// Whether `i_blocks` can hold `sectors` 512-byte units (Linux
/// `ext4_inode_blocks_set`).
pub(crate) fn sectors_fit(sectors: u64, superblock: &Superblock) -> bool {
    if !superblock.has_huge_files() {
        return sectors <= u64::from(u32::MAX);
    }
    (sectors >> (superblock.block_size.trailing_zeros() - 9)) < 1 << 48
}

fn extra_size(bytes: &[u8], structure: Structure) -> Result<u16, Error> {
    if bytes.len() <= EXTRA_START {
        return Ok(0);
    }
    let extra = le16(bytes, 0x80);
    if EXTRA_START + usize::from(extra) > bytes.len() || !extra.is_multiple_of(4) {
        return Err(Error::invalid(structure, "i_extra_isize out of range"));
    }
    Ok(extra)
}

fn check_flags(flags: u32, structure: Structure) -> Result<(), Error> {
    let refused = [
        (flags::INLINE_DATA, "inline data flag without the feature"),
        (flags::ENCRYPT, "encrypt flag without the feature"),
        (flags::CASEFOLD, "casefold flag without the feature"),
        (flags::EA_INODE, "ea_inode flag without the feature"),
    ];
    match refused.iter().find(|(flag, _)| flags & flag != 0) {
        Some((_, what)) => Err(Error::invalid(structure, what)),
        None => Ok(()),
    }
}

fn sectors(bytes: &[u8], flags: u32, superblock: &Superblock) -> u64 {
    let low = u64::from(le32(bytes, 0x1C));
    if !superblock.has_huge_files() {
        return low;
    }
    let count = low | (u64::from(le16(bytes, 0x74)) << 32);
    if flags & flags::HUGE_FILE == 0 {
        return count;
    }
    count << (superblock.block_size.trailing_zeros() - 9)
}

/// The seed of this inode's checksums (0 without `metadata_csum`).
pub fn checksum_seed(superblock: &Superblock, number: InodeNumber, generation: u32) -> u32 {
    match superblock.checksums {
        Checksums::Crc32c { seed } => crc32c(crc32c(seed, &number.0.to_le_bytes()), &generation.to_le_bytes()),
        _ => 0,
    }
}

fn has_high_checksum(inode_size: usize, extra_size: u16) -> bool {
    inode_size > EXTRA_START && CHECKSUM_HIGH + 2 <= EXTRA_START + usize::from(extra_size)
}

/// The full 32-bit checksum of `bytes`, or `None` if they are too short to
/// hold one.
fn inode_checksum(bytes: &[u8], seed: u32, extra_size: u16) -> Option<u32> {
    let zero = [0u8; 2];
    let mut crc = crc32c(seed, bytes.get(..CHECKSUM_LOW)?);
    crc = crc32c(crc, &zero);
    crc = crc32c(crc, bytes.get(CHECKSUM_LOW + 2..EXTRA_START)?);
    if bytes.len() > EXTRA_START {
        crc = crc32c(crc, bytes.get(EXTRA_START..CHECKSUM_HIGH)?);
        let rest = if has_high_checksum(bytes.len(), extra_size) {
            crc = crc32c(crc, &zero);
            CHECKSUM_HIGH + 2
        } else {
            CHECKSUM_HIGH
        };
        crc = crc32c(crc, bytes.get(rest..)?);
    }
    Some(crc)
}

fn verify_checksum(
    bytes: &[u8],
    superblock: &Superblock,
    seed: u32,
    extra_size: u16,
    structure: Structure,
) -> Result<(), Error> {
    const LINUX: u32 = 0;
    let Checksums::Crc32c { .. } = superblock.checksums else { return Ok(()) };
    if superblock.creator_os != LINUX || bytes.iter().all(|&byte| byte == 0) {
        return Ok(()); // Linux only checks its own layout; e2fsprogs accepts a never-used zero inode.
    }
    let computed = inode_checksum(bytes, seed, extra_size).ok_or(Error::invalid(structure, "inode too small"))?;
    let mut stored = u32::from(le16(bytes, CHECKSUM_LOW));
    let mut expected = computed & 0xFFFF;
    if has_high_checksum(bytes.len(), extra_size) {
        stored |= u32::from(le16(bytes, CHECKSUM_HIGH)) << 16;
        expected = computed;
    }
    if stored != expected {
        return Err(Error::corrupted(structure, Problem::ChecksumMismatch));
    }
    Ok(())
}
