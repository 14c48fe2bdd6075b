//! The superblock: the 1024 bytes at byte offset 1024 that describe the
//! file system's geometry, features and checksum seed.
//!
//! [`Superblock::parse`] checks the magic, the checksum (with
//! `metadata_csum`) and every field the rest of the crate divides by,
//! shifts by or sizes buffers from, so later code may trust the geometry.
//! [`Superblock::encode`] writes the fields a writer changes back over the
//! bytes read and recomputes the checksum. **Must never** accept a geometry
//! whose derived values (group count, table sizes) overflow or disagree.

use crate::bytes::{array, byte, le16, le32, put, put_le16, put_le32, split64};
use crate::checksum::crc32c;
use crate::error::{Error, Structure, Unsupported};
use crate::features::{compatible, incompatible, read_only_compatible as ro};

/// Byte offset of the primary superblock on the device.
pub const SUPERBLOCK_OFFSET: u64 = 1024;
/// Size of the superblock.
pub const SUPERBLOCK_SIZE: usize = 1024;
/// `s_magic`.
pub const MAGIC: u16 = 0xEF53;
/// `s_checksum_type` for crc32c, the only one defined.
pub const CHECKSUM_TYPE_CRC32C: u8 = 1;
/// Offset of `s_checksum`, the last four bytes, which the checksum covers up to.
const CHECKSUM_OFFSET: usize = 0x3FC;
/// `s_state` bit: cleanly unmounted.
pub const STATE_CLEAN: u16 = 0x1;
/// `s_state` bit: errors were detected.
pub const STATE_ERRORS: u16 = 0x2;
/// The smallest inode, and the only size before revision 1.
pub const GOOD_OLD_INODE_SIZE: u16 = 128;
const GOOD_OLD_FIRST_INODE: u32 = 11;
const MAX_LOG_BLOCK_SIZE: u32 = 6; // 1024 << 6 = 64 KiB
const SMALLEST_64BIT_DESCRIPTOR: u16 = 64;
const DESCRIPTOR_SIZE_32BIT: u16 = 32;
const LARGEST_DESCRIPTOR: u16 = 1024;

/// Which checksums protect metadata.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Checksums {
    /// None (ext2/ext3 style).
    None,
    /// `gdt_csum` (`uninit_bg`): crc16 over group descriptors only.
    GroupDescriptorCrc16,
    /// `metadata_csum`: crc32c everywhere, chains starting from `seed`.
    Crc32c {
        /// `s_checksum_seed` with `metadata_csum_seed`, else
        /// `crc32c(!0, uuid)`.
        seed: u32,
    },
}

/// A parsed, checked superblock.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Superblock {
    /// `s_inodes_count`.
    pub inodes_count: u32,
    /// `s_blocks_count` (with the high half under `64bit`).
    pub blocks_count: u64,
    /// `s_r_blocks_count`: blocks reserved for the superuser.
    pub reserved_blocks_count: u64,
    /// `s_free_blocks_count`.
    pub free_blocks_count: u64,
    /// `s_free_inodes_count`.
    pub free_inodes_count: u32,
    /// `s_first_data_block`: 1 for 1 KiB blocks, else 0.
    pub first_data_block: u32,
    /// Block size in bytes (1 KiB to 64 KiB).
    pub block_size: u32,
    /// `s_blocks_per_group`.
    pub blocks_per_group: u32,
    /// `s_inodes_per_group`.
    pub inodes_per_group: u32,
    /// Last mount time (seconds since the epoch).
    pub mount_time: u64,
    /// Last write time.
    pub write_time: u64,
    /// Creation time.
    pub mkfs_time: u64,
    /// Last check time.
    pub last_check_time: u64,
    /// Mounts since the last check.
    pub mount_count: u16,
    /// Mounts allowed between checks (-1: no limit).
    pub max_mount_count: i16,
    /// `s_state`: [`STATE_CLEAN`], [`STATE_ERRORS`].
    pub state: u16,
    /// `s_errors`: what to do on errors.
    pub errors_behaviour: u16,
    /// `s_creator_os` (0 is Linux).
    pub creator_os: u32,
    /// `s_rev_level`: 0 (fixed inode size) or 1 (dynamic).
    pub revision: u32,
    /// First non-reserved inode.
    pub first_inode: u32,
    /// Bytes per on-disk inode.
    pub inode_size: u16,
    /// `s_feature_compat`.
    pub compatible_features: u32,
    /// `s_feature_incompat`.
    pub incompatible_features: u32,
    /// `s_feature_ro_compat`.
    pub read_only_features: u32,
    /// The file system's UUID.
    pub uuid: [u8; 16],
    /// The volume label (NUL-padded).
    pub volume_name: [u8; 16],
    /// Descriptor blocks reserved for online growth.
    pub reserved_gdt_blocks: u16,
    /// The external journal's UUID.
    pub journal_uuid: [u8; 16],
    /// The journal's inode (usually 8).
    pub journal_inode: u32,
    /// Head of the orphan inode list.
    pub last_orphan: u32,
    /// Seed of the directory hash.
    pub hash_seed: [u32; 4],
    /// Default directory hash (0 legacy, 1 half MD4, 2 TEA; +3 unsigned).
    pub default_hash_version: u8,
    /// Bytes per group descriptor (32 without `64bit`).
    pub descriptor_size: u16,
    /// First group of the meta block group layout (`meta_bg`).
    pub first_meta_bg: u32,
    /// `s_min_extra_isize`.
    pub min_extra_isize: u16,
    /// `s_want_extra_isize`.
    pub want_extra_isize: u16,
    /// `s_flags` (signed or unsigned directory hash).
    pub flags: u32,
    /// log2 of groups per flexible group.
    pub log_groups_per_flex: u8,
    /// The two backup groups under `sparse_super2`.
    pub backup_groups: [u32; 2],
    /// Which checksums protect metadata, and their seed.
    pub checksums: Checksums,
    bytes: [u8; SUPERBLOCK_SIZE],
}

impl Superblock {
    /// Parses and checks the superblock `bytes` (read from [`SUPERBLOCK_OFFSET`]).
    pub fn parse(bytes: &[u8; SUPERBLOCK_SIZE]) -> Result<Self, Error> {
        if le16(bytes, 0x38) != MAGIC {
            return Err(Error::corrupted(Structure::Superblock, crate::error::Problem::BadMagic));
        }
        let incompatible_features = le32(bytes, 0x60);
        let read_only_features = le32(bytes, 0x64);
        let checksums = checksums(bytes, incompatible_features, read_only_features)?;
        let sixty_four = incompatible_features & incompatible::SIXTY_FOUR_BIT != 0;
        let high = |offset| sixty_four.then_some(offset);
        let revision = le32(bytes, 0x4C);
        let dynamic = revision >= 1;
        let superblock = Self {
            inodes_count: le32(bytes, 0x0),
            blocks_count: split64(bytes, 0x4, high(0x150)),
            reserved_blocks_count: split64(bytes, 0x8, high(0x154)),
            free_blocks_count: split64(bytes, 0xC, high(0x158)),
            free_inodes_count: le32(bytes, 0x10),
            first_data_block: le32(bytes, 0x14),
            block_size: block_size(bytes)?,
            blocks_per_group: le32(bytes, 0x20),
            inodes_per_group: le32(bytes, 0x28),
            mount_time: time(bytes, 0x2C, 0x275),
            write_time: time(bytes, 0x30, 0x274),
            mkfs_time: time(bytes, 0x108, 0x276),
            last_check_time: time(bytes, 0x40, 0x277),
            mount_count: le16(bytes, 0x34),
            max_mount_count: le16(bytes, 0x36) as i16,
            state: le16(bytes, 0x3A),
            errors_behaviour: le16(bytes, 0x3C),
            creator_os: le32(bytes, 0x48),
            revision,
            first_inode: if dynamic { le32(bytes, 0x54) } else { GOOD_OLD_FIRST_INODE },
            inode_size: if dynamic { le16(bytes, 0x58) } else { GOOD_OLD_INODE_SIZE },
            compatible_features: le32(bytes, 0x5C),
            incompatible_features,
            read_only_features,
            uuid: array(bytes, 0x68).unwrap_or_default(),
            volume_name: array(bytes, 0x78).unwrap_or_default(),
            reserved_gdt_blocks: le16(bytes, 0xCE),
            journal_uuid: array(bytes, 0xD0).unwrap_or_default(),
            journal_inode: le32(bytes, 0xE0),
            last_orphan: le32(bytes, 0xE8),
            hash_seed: [le32(bytes, 0xEC), le32(bytes, 0xF0), le32(bytes, 0xF4), le32(bytes, 0xF8)],
            default_hash_version: byte(bytes, 0xFC),
            descriptor_size: if sixty_four { le16(bytes, 0xFE) } else { DESCRIPTOR_SIZE_32BIT },
            first_meta_bg: le32(bytes, 0x104),
            min_extra_isize: le16(bytes, 0x15C),
            want_extra_isize: le16(bytes, 0x15E),
            flags: le32(bytes, 0x160),
            log_groups_per_flex: byte(bytes, 0x174),
            backup_groups: [le32(bytes, 0x24C), le32(bytes, 0x250)],
            checksums,
            bytes: *bytes,
        };
        crate::geometry::check(&superblock, bytes)?;
        Ok(superblock)
    }

    /// The superblock as stored, with the fields a writer changes (counts,
    /// times, state, features, orphan list) written back and the checksum
    /// recomputed.
    pub fn encode(&self) -> [u8; SUPERBLOCK_SIZE] {
        let mut bytes = self.bytes;
        put_split(&mut bytes, 0xC, 0x158, self.free_blocks_count, self.has_64bit());
        put_le32(&mut bytes, 0x10, self.free_inodes_count);
        put_time(&mut bytes, 0x2C, 0x275, self.mount_time);
        put_time(&mut bytes, 0x30, 0x274, self.write_time);
        put_time(&mut bytes, 0x40, 0x277, self.last_check_time);
        put_le16(&mut bytes, 0x34, self.mount_count);
        put_le16(&mut bytes, 0x3A, self.state);
        put_le32(&mut bytes, 0x5C, self.compatible_features);
        put_le32(&mut bytes, 0x60, self.incompatible_features);
        put_le32(&mut bytes, 0x64, self.read_only_features);
        put_le32(&mut bytes, 0xE8, self.last_orphan);
        if let Checksums::Crc32c { .. } = self.checksums {
            let checksum = superblock_checksum(&bytes);
            put_le32(&mut bytes, CHECKSUM_OFFSET, checksum);
        }
        bytes
    }

    /// Whether block numbers are 64-bit (`64bit`).
    pub fn has_64bit(&self) -> bool {
        self.incompatible_features & incompatible::SIXTY_FOUR_BIT != 0
    }

    /// Whether files may use extent trees.
    pub fn has_extents(&self) -> bool {
        self.incompatible_features & incompatible::EXTENTS != 0
    }

    /// Whether directory entries carry a file type.
    pub fn has_file_types(&self) -> bool {
        self.incompatible_features & incompatible::FILETYPE != 0
    }

    /// Whether directories may be hashed b-trees (`dir_index`).
    pub fn has_directory_index(&self) -> bool {
        self.compatible_features & compatible::DIR_INDEX != 0
    }

    /// Whether `i_blocks` may exceed 32 bits and count blocks (`huge_file`).
    pub fn has_huge_files(&self) -> bool {
        self.read_only_features & ro::HUGE_FILE != 0
    }

    /// Whether the journal must be replayed before the contents are current.
    pub fn needs_recovery(&self) -> bool {
        self.incompatible_features & incompatible::RECOVER != 0
    }

    /// The volume label, without its NUL padding.
    pub fn volume_label(&self) -> &[u8] {
        let length = self.volume_name.iter().position(|&b| b == 0).unwrap_or(self.volume_name.len());
        self.volume_name.get(..length).unwrap_or_default()
    }
}

/// The `metadata_csum` superblock checksum: `crc32c(!0, bytes[..0x3FC])`.
pub fn superblock_checksum(bytes: &[u8; SUPERBLOCK_SIZE]) -> u32 {
    crc32c(!0, bytes.get(..CHECKSUM_OFFSET).unwrap_or_default())
}

fn checksums(bytes: &[u8; SUPERBLOCK_SIZE], incompat: u32, read_only: u32) -> Result<Checksums, Error> {
    if read_only & ro::METADATA_CSUM == 0 {
        let crc16 = read_only & ro::GDT_CSUM != 0;
        return Ok(if crc16 { Checksums::GroupDescriptorCrc16 } else { Checksums::None });
    }
    let kind = byte(bytes, 0x175);
    if kind != CHECKSUM_TYPE_CRC32C {
        return Err(Error::Unsupported(Unsupported::ChecksumType(kind)));
    }
    if le32(bytes, CHECKSUM_OFFSET) != superblock_checksum(bytes) {
        return Err(Error::corrupted(Structure::Superblock, crate::error::Problem::ChecksumMismatch));
    }
    let seed = if incompat & incompatible::CSUM_SEED != 0 {
        le32(bytes, 0x270)
    } else {
        crc32c(!0, bytes.get(0x68..0x78).unwrap_or_default())
    };
    Ok(Checksums::Crc32c { seed })
}

fn block_size(bytes: &[u8]) -> Result<u32, Error> {
    let log = le32(bytes, 0x18);
    if log > MAX_LOG_BLOCK_SIZE {
        return Err(Error::invalid(Structure::Superblock, "s_log_block_size above 64 KiB"));
    }
    Ok(1024 << log)
}

/// The 40-bit time with its low 32 bits at `low` and high 8 bits at `high`.
fn time(bytes: &[u8], low: usize, high: usize) -> u64 {
    u64::from(le32(bytes, low)) | (u64::from(byte(bytes, high)) << 32)
}

fn put_time(bytes: &mut [u8], low: usize, high: usize, value: u64) {
    put_le32(bytes, low, value as u32);
    put(bytes, high, &[(value >> 32) as u8]);
}

fn put_split(bytes: &mut [u8], low: usize, high: usize, value: u64, sixty_four: bool) {
    put_le32(bytes, low, value as u32);
    if sixty_four {
        put_le32(bytes, high, (value >> 32) as u32);
    }
}

/// The descriptor size rules: 32 without `64bit`; with it, a power of two
/// from 64 to 1024.
pub(crate) fn descriptor_size_is_valid(superblock: &Superblock) -> bool {
    let size = superblock.descriptor_size;
    if !superblock.has_64bit() {
        return size == DESCRIPTOR_SIZE_32BIT;
    }
    (SMALLEST_64BIT_DESCRIPTOR..=LARGEST_DESCRIPTOR).contains(&size) && size.is_power_of_two()
}
