//! Feature flags of the superblock, their names, and the mount policy: what
//! this crate can read, and what it may write, given the three feature sets.
//!
//! Policy (mirrors Linux's `ext4_feature_set_ok`): an `incompat` bit this
//! crate does not implement refuses the file system; a `ro_compat` bit it
//! does not implement allows reading only; `compat` bits never stop a
//! mount. **Must never** accept an unknown `incompat` bit.

use core::fmt;

/// `s_feature_compat`: safe to ignore.
pub mod compatible {
    /// Directory preallocation.
    pub const DIR_PREALLOC: u32 = 0x1;
    /// AFS server inodes.
    pub const IMAGIC_INODES: u32 = 0x2;
    /// A jbd2 journal (inode `s_journal_inum`).
    pub const HAS_JOURNAL: u32 = 0x4;
    /// Extended attributes.
    pub const EXT_ATTR: u32 = 0x8;
    /// Reserved descriptor blocks for online growth.
    pub const RESIZE_INODE: u32 = 0x10;
    /// Hashed (htree) directories.
    pub const DIR_INDEX: u32 = 0x20;
    /// Lazy block groups (obsolete).
    pub const LAZY_BG: u32 = 0x40;
    /// Snapshot exclude inode.
    pub const EXCLUDE_INODE: u32 = 0x80;
    /// Snapshot exclude bitmap.
    pub const EXCLUDE_BITMAP: u32 = 0x100;
    /// Superblock backups only in the groups `s_backup_bgs` names.
    pub const SPARSE_SUPER2: u32 = 0x200;
    /// Fast commits in the journal.
    pub const FAST_COMMIT: u32 = 0x400;
    /// Inode numbers never change (for encryption policies).
    pub const STABLE_INODES: u32 = 0x800;
    /// An orphan file instead of the orphan list.
    pub const ORPHAN_FILE: u32 = 0x1000;
}

/// `s_feature_incompat`: must be understood to read at all.
pub mod incompatible {
    /// Compression (never finished).
    pub const COMPRESSION: u32 = 0x1;
    /// Directory entries record the file type.
    pub const FILETYPE: u32 = 0x2;
    /// The journal needs recovery.
    pub const RECOVER: u32 = 0x4;
    /// This device is an external journal.
    pub const JOURNAL_DEV: u32 = 0x8;
    /// Meta block groups: descriptor blocks spread over the disk.
    pub const META_BG: u32 = 0x10;
    /// Files may map blocks with extent trees.
    pub const EXTENTS: u32 = 0x40;
    /// Block numbers are 64-bit; descriptors may be 64 bytes.
    pub const SIXTY_FOUR_BIT: u32 = 0x80;
    /// Multiple-mount protection.
    pub const MMP: u32 = 0x100;
    /// Flexible block groups: bitmaps and tables may live in other groups.
    pub const FLEX_BG: u32 = 0x200;
    /// Extended attribute values in inodes.
    pub const EA_INODE: u32 = 0x400;
    /// Data in directory entries.
    pub const DIRDATA: u32 = 0x1000;
    /// The checksum seed is stored in `s_checksum_seed`.
    pub const CSUM_SEED: u32 = 0x2000;
    /// Directories over 2 GiB and three-level htrees.
    pub const LARGEDIR: u32 = 0x4000;
    /// Small files' data inside the inode.
    pub const INLINE_DATA: u32 = 0x8000;
    /// Encrypted files and names.
    pub const ENCRYPT: u32 = 0x10000;
    /// Case-insensitive names.
    pub const CASEFOLD: u32 = 0x20000;

    /// The bits this crate reads.
    pub const READABLE: u32 = FILETYPE | RECOVER | META_BG | EXTENTS | SIXTY_FOUR_BIT | FLEX_BG | CSUM_SEED | LARGEDIR;
}

/// `s_feature_ro_compat`: must be understood to write.
pub mod read_only_compatible {
    /// Superblock backups only in groups 0, 1 and powers of 3, 5 and 7.
    pub const SPARSE_SUPER: u32 = 0x1;
    /// Files over 2 GiB.
    pub const LARGE_FILE: u32 = 0x2;
    /// B-tree directories (never used).
    pub const BTREE_DIR: u32 = 0x4;
    /// `i_blocks` may count file-system blocks (inode flag `HUGE_FILE`).
    pub const HUGE_FILE: u32 = 0x8;
    /// crc16 group descriptor checksums.
    pub const GDT_CSUM: u32 = 0x10;
    /// Directories may have more than 65000 subdirectories.
    pub const DIR_NLINK: u32 = 0x20;
    /// Inodes have at least `s_min_extra_isize` extra bytes.
    pub const EXTRA_ISIZE: u32 = 0x40;
    /// Snapshots.
    pub const HAS_SNAPSHOT: u32 = 0x80;
    /// Quota inodes.
    pub const QUOTA: u32 = 0x100;
    /// Allocation in clusters of blocks.
    pub const BIGALLOC: u32 = 0x200;
    /// crc32c checksums on all metadata.
    pub const METADATA_CSUM: u32 = 0x400;
    /// Replicas.
    pub const REPLICA: u32 = 0x800;
    /// Marked read-only.
    pub const READONLY: u32 = 0x1000;
    /// Project quotas.
    pub const PROJECT: u32 = 0x2000;
    /// Blocks shared between files.
    pub const SHARED_BLOCKS: u32 = 0x4000;
    /// fs-verity files.
    pub const VERITY: u32 = 0x8000;
    /// Orphan file entries are present.
    pub const ORPHAN_PRESENT: u32 = 0x10000;

    /// The bits this crate will be able to keep consistent when writing.
    pub const WRITABLE: u32 =
        SPARSE_SUPER | LARGE_FILE | HUGE_FILE | GDT_CSUM | DIR_NLINK | EXTRA_ISIZE | METADATA_CSUM;
}

const INCOMPATIBLE_NAMES: [(u32, &str); 16] = [
    (incompatible::COMPRESSION, "compression"),
    (incompatible::FILETYPE, "filetype"),
    (incompatible::RECOVER, "needs_recovery"),
    (incompatible::JOURNAL_DEV, "journal_dev"),
    (incompatible::META_BG, "meta_bg"),
    (incompatible::EXTENTS, "extent"),
    (incompatible::SIXTY_FOUR_BIT, "64bit"),
    (incompatible::MMP, "mmp"),
    (incompatible::FLEX_BG, "flex_bg"),
    (incompatible::EA_INODE, "ea_inode"),
    (incompatible::DIRDATA, "dirdata"),
    (incompatible::CSUM_SEED, "metadata_csum_seed"),
    (incompatible::LARGEDIR, "large_dir"),
    (incompatible::INLINE_DATA, "inline_data"),
    (incompatible::ENCRYPT, "encrypt"),
    (incompatible::CASEFOLD, "casefold"),
];

const READ_ONLY_COMPATIBLE_NAMES: [(u32, &str); 17] = [
    (read_only_compatible::SPARSE_SUPER, "sparse_super"),
    (read_only_compatible::LARGE_FILE, "large_file"),
    (read_only_compatible::BTREE_DIR, "btree_dir"),
    (read_only_compatible::HUGE_FILE, "huge_file"),
    (read_only_compatible::GDT_CSUM, "uninit_bg"),
    (read_only_compatible::DIR_NLINK, "dir_nlink"),
    (read_only_compatible::EXTRA_ISIZE, "extra_isize"),
    (read_only_compatible::HAS_SNAPSHOT, "snapshot"),
    (read_only_compatible::QUOTA, "quota"),
    (read_only_compatible::BIGALLOC, "bigalloc"),
    (read_only_compatible::METADATA_CSUM, "metadata_csum"),
    (read_only_compatible::REPLICA, "replica"),
    (read_only_compatible::READONLY, "read-only"),
    (read_only_compatible::PROJECT, "project"),
    (read_only_compatible::SHARED_BLOCKS, "shared_blocks"),
    (read_only_compatible::VERITY, "verity"),
    (read_only_compatible::ORPHAN_PRESENT, "orphan_present"),
];

/// Which feature set a [`FeatureNames`] list comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FeatureSet {
    /// `s_feature_incompat`.
    Incompatible,
    /// `s_feature_ro_compat`.
    ReadOnlyCompatible,
}

/// Some bits of one feature set, displayed as mke2fs names separated by
/// commas (unknown bits as `unknown(0x…)`), for error messages.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FeatureNames {
    /// The feature set the bits belong to.
    pub set: FeatureSet,
    /// The bits.
    pub bits: u32,
}

impl FeatureNames {
    /// The names of the set bits, in bit order; `None` for unknown bits.
    pub fn names(&self) -> impl Iterator<Item = (u32, Option<&'static str>)> + '_ {
        let table: &[(u32, &str)] = match self.set {
            FeatureSet::Incompatible => &INCOMPATIBLE_NAMES,
            FeatureSet::ReadOnlyCompatible => &READ_ONLY_COMPATIBLE_NAMES,
        };
        (0..32).map(|shift| 1u32 << shift).filter(|bit| self.bits & bit != 0).map(move |bit| {
            let name = table.iter().find(|(known, _)| *known == bit).map(|(_, name)| *name);
            (bit, name)
        })
    }
}

impl fmt::Display for FeatureNames {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, (bit, name)) in self.names().enumerate() {
            if index > 0 {
                formatter.write_str(",")?;
            }
            match name {
                Some(name) => formatter.write_str(name)?,
                None => write!(formatter, "unknown({bit:#x})")?,
            }
        }
        Ok(())
    }
}

/// How the file system may be used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mount {
    /// Reading and writing.
    ReadWrite,
    /// Reading only, for this reason.
    ReadOnly(ReadOnlyReason),
}

/// Why a file system may only be read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReadOnlyReason {
    /// These `ro_compat` features are not implemented for writing.
    Features(FeatureNames),
    /// The journal must be replayed before anything is written (opened
    /// without replaying: [`crate::Ext4::open`], or [`crate::Access::ReadOnly`]).
    JournalNeedsRecovery,
    /// The caller asked for reading only ([`crate::Access::ReadOnly`]).
    Requested,
    /// The journal cannot be written (unsupported journal features, a
    /// damaged journal inode) or was aborted by an error.
    Journal(crate::JournalFailure),
}

/// The mount decision for these feature sets: `Err` holds the `incompat`
/// bits that make the file system unreadable.
pub fn mount_policy(incompatible_bits: u32, read_only_bits: u32) -> Result<Mount, FeatureNames> {
    let refused = incompatible_bits & !incompatible::READABLE;
    if refused != 0 {
        return Err(FeatureNames { set: FeatureSet::Incompatible, bits: refused });
    }
    let not_writable = read_only_bits & !read_only_compatible::WRITABLE;
    if not_writable != 0 {
        let names = FeatureNames { set: FeatureSet::ReadOnlyCompatible, bits: not_writable };
        return Ok(Mount::ReadOnly(ReadOnlyReason::Features(names)));
    }
    if incompatible_bits & incompatible::RECOVER != 0 {
        return Ok(Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
    }
    Ok(Mount::ReadWrite)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn understood_features_mount_read_write() {
        let incompat = incompatible::FILETYPE | incompatible::EXTENTS | incompatible::FLEX_BG;
        let ro = read_only_compatible::METADATA_CSUM | read_only_compatible::HUGE_FILE;
        assert_eq!(mount_policy(incompat, ro), Ok(Mount::ReadWrite));
    }

    #[test]
    fn refused_and_unknown_incompat_bits_are_named() {
        let refused = mount_policy(incompatible::MMP | incompatible::INLINE_DATA | 0x0080_0000, 0).unwrap_err();
        assert_eq!(refused.to_string(), "mmp,inline_data,unknown(0x800000)");
    }

    #[test]
    fn unknown_ro_compat_bits_mount_read_only() {
        let mount = mount_policy(incompatible::FILETYPE, read_only_compatible::QUOTA | 0x0100_0000).unwrap();
        let Mount::ReadOnly(ReadOnlyReason::Features(names)) = mount else {
            panic!("expected read-only, got {mount:?}")
        };
        assert_eq!(names.to_string(), "quota,unknown(0x1000000)");
    }

    #[test]
    fn a_journal_needing_recovery_mounts_read_only() {
        let mount = mount_policy(incompatible::RECOVER, 0);
        assert_eq!(mount, Ok(Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery)));
    }
}
