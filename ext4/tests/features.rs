//! The feature policy on real images: unknown or refused `incompat` bits
//! refuse the mount and name the features, unknown `ro_compat` bits and a
//! journal needing recovery allow reading only, and damaged superblock
//! fields are errors, each with its errno.

mod common;

use common::{make_image, open, walk_everything};
use ext4::{
    errno, superblock_checksum, Error, FeatureSet, Mount, Problem, ReadOnlyReason, Structure, Unsupported,
    SUPERBLOCK_SIZE,
};

const INCOMPAT: usize = 0x60;
const RO_COMPAT: usize = 0x64;
const CHECKSUM_TYPE: usize = 0x175;

/// A `metadata_csum` image with `change` applied to its superblock and the
/// checksum fixed up, as a tool that sets a feature would.
fn with_superblock(change: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut image = base_image().to_vec();
    let superblock: &mut [u8; SUPERBLOCK_SIZE] = (&mut image[1024..2048]).try_into().unwrap();
    change(superblock);
    let checksum = superblock_checksum(superblock);
    superblock[0x3FC..].copy_from_slice(&checksum.to_le_bytes());
    image
}

fn base_image() -> &'static [u8] {
    static IMAGE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    IMAGE.get_or_init(|| make_image(1024, 16, &[]))
}

fn set_bits(superblock: &mut [u8], offset: usize, bits: u32) {
    let value = u32::from_le_bytes(superblock[offset..offset + 4].try_into().unwrap()) | bits;
    superblock[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

fn refused_features(image: &[u8]) -> String {
    match open(image) {
        Err(error @ Error::Unsupported(Unsupported::Features(names))) => {
            assert_eq!(names.set, FeatureSet::Incompatible);
            assert_eq!(error.errno(), errno::EINVAL);
            names.to_string()
        }
        other => panic!("expected unsupported features, got {:?}", other.map(|fs| fs.mount())),
    }
}

#[test]
fn an_unknown_incompat_bit_refuses_the_mount() {
    let image = with_superblock(|superblock| set_bits(superblock, INCOMPAT, 0x0080_0000));
    assert_eq!(refused_features(&image), "unknown(0x800000)");
}

#[test]
fn refused_incompat_features_are_named() {
    let image = with_superblock(|superblock| set_bits(superblock, INCOMPAT, 0x8000 | 0x100 | 0x20000));
    assert_eq!(refused_features(&image), "mmp,inline_data,casefold");
    let image = with_superblock(|superblock| set_bits(superblock, INCOMPAT, 0x8 | 0x400 | 0x1000 | 0x10000));
    assert_eq!(refused_features(&image), "journal_dev,ea_inode,dirdata,encrypt");
}

#[test]
fn an_unknown_ro_compat_bit_mounts_read_only_and_still_reads() {
    let image = with_superblock(|superblock| set_bits(superblock, RO_COMPAT, 0x8000_0000 | 0x100));
    let fs = open(&image).unwrap();
    let Mount::ReadOnly(ReadOnlyReason::Features(names)) = fs.mount() else { panic!("{:?}", fs.mount()) };
    assert_eq!(names.to_string(), "quota,unknown(0x80000000)");
    assert!(walk_everything(&fs, u64::MAX).unwrap() > 200);
}

#[test]
fn a_journal_needing_recovery_mounts_read_only_and_is_reported() {
    let image = with_superblock(|superblock| set_bits(superblock, INCOMPAT, 0x4));
    let fs = open(&image).unwrap();
    assert_eq!(fs.mount(), Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
    assert!(fs.superblock().needs_recovery());
    walk_everything(&fs, u64::MAX).unwrap();
}

#[test]
fn a_clean_image_mounts_read_write() {
    let fs = open(base_image()).unwrap();
    assert_eq!(fs.mount(), Mount::ReadWrite);
    assert!(!fs.superblock().needs_recovery());
}

#[test]
fn an_unknown_checksum_type_is_unsupported() {
    let image = with_superblock(|superblock| superblock[CHECKSUM_TYPE] = 2);
    let error = open(&image).unwrap_err();
    assert_eq!(error, Error::Unsupported(Unsupported::ChecksumType(2)));
    assert_eq!(error.errno(), errno::EOPNOTSUPP);
}

#[test]
fn a_superblock_checksum_mismatch_is_ebadmsg() {
    let mut image = base_image().to_vec();
    image[1024 + 0x78] ^= 1; // the volume name: no field check would notice
    let error = open(&image).unwrap_err();
    assert_eq!(
        error,
        Error::Corrupted(ext4::Corruption { structure: Structure::Superblock, problem: Problem::ChecksumMismatch })
    );
    assert_eq!(error.errno(), errno::EBADMSG);
    assert_eq!(error.to_string(), "corrupted superblock: checksum mismatch");
}

#[test]
fn damaged_geometry_is_euclean() {
    type Change = fn(&mut [u8]);
    let cases: [(&str, Change); 5] = [
        ("bad magic number", |superblock| superblock[0x38] = 0),
        ("s_log_block_size above 64 KiB", |superblock| superblock[0x18] = 7),
        ("s_inodes_count is not groups times s_inodes_per_group", |superblock| superblock[0] ^= 1),
        ("s_inode_size not a power of two from 128 to the block size", |superblock| superblock[0x58] = 100),
        ("s_blocks_per_group disagrees with the cluster size", |superblock| superblock[0x21] ^= 1),
    ];
    for (expected, change) in cases {
        let error = open(&with_superblock(change)).unwrap_err();
        let Error::Corrupted(corruption) = error else { panic!("{expected}: {error:?}") };
        assert_eq!(
            (corruption.structure, corruption.problem.to_string()),
            (Structure::Superblock, expected.to_string())
        );
        assert_eq!(error.errno(), errno::EUCLEAN);
    }
}

#[test]
fn a_device_smaller_than_the_file_system_is_refused() {
    let image = &base_image()[..8 << 20];
    let error = open(image).unwrap_err();
    assert_eq!(error.to_string(), "corrupted superblock: s_blocks_count beyond the device");
    assert_eq!(open(&[]).unwrap_err(), Error::Io(ext4::IoError::OutOfRange));
}
