//! The journal at mount and unmount, on images made by mkfs.ext4: a clean
//! unmount leaves nothing to recover; a crash leaves a log that this crate
//! and e2fsck replay to the same files; read-only opens never write; a
//! stale log is discarded, unsupported journal features and a failed
//! replay are named; grouped transactions commit by themselves when full
//! and wrap the log.

mod common;
mod writing;

use common::{pattern, TempDir, E2FSCK};
use ext4::{
    superblock_checksum, Access, CommitPolicy, Error, Ext4, InodeNumber, JournalFailure, MemoryDisk, Mount,
    ReadOnlyReason, Run, SUPERBLOCK_OFFSET,
};
use writing::{assert_fsck_clean, contents, fresh, image_of, resolve, Clock, ROOT_OWNER};

const RECOVER: u32 = 0x4;

fn open_with(image: &[u8], access: Access) -> Result<Ext4<MemoryDisk>, Error> {
    Ext4::open_with(MemoryDisk::new(image.to_vec()), access, CommitPolicy::Grouped)
}

fn incompat(image: &[u8]) -> u32 {
    let at = SUPERBLOCK_OFFSET as usize + 0x60;
    u32::from_le_bytes(image[at..at + 4].try_into().unwrap())
}

/// Byte offset of the journal superblock in `image`.
fn journal_superblock_offset(image: &[u8]) -> usize {
    let fs = Ext4::open_with(MemoryDisk::new(image.to_vec()), Access::ReadOnly, CommitPolicy::Grouped).unwrap();
    let inode = fs.inode(InodeNumber(fs.superblock().journal_inode)).unwrap();
    let Run::Data { physical, .. } = fs.map_block(&inode, 0).unwrap() else { panic!("journal block 0") };
    physical as usize * fs.superblock().block_size as usize
}

fn be32(image: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(image[at..at + 4].try_into().unwrap())
}

/// `s_start` and `s_sequence` of the journal.
fn journal_start_and_sequence(image: &[u8]) -> (u32, u32) {
    let at = journal_superblock_offset(image);
    (be32(image, at + 0x1C), be32(image, at + 0x18))
}

/// Changes the journal superblock with `change` and reseals its checksum.
fn patch_journal_superblock(image: &mut [u8], change: impl FnOnce(&mut [u8])) {
    let at = journal_superblock_offset(image);
    let block = &mut image[at..at + 1024];
    change(block);
    let checksum = jbd2::format::checksums::superblock_checksum(block);
    block[0xFC..0x100].copy_from_slice(&checksum.to_be_bytes());
}

/// What to do to `needs_recovery`.
#[derive(Clone, Copy)]
enum Flag {
    Set,
    Clear,
}

/// Sets or clears `needs_recovery` in the ext4 superblock (checksum resealed).
fn mark_recovery(image: &mut [u8], flag: Flag) {
    let at = SUPERBLOCK_OFFSET as usize;
    let features = match flag {
        Flag::Set => incompat(image) | RECOVER,
        Flag::Clear => incompat(image) & !RECOVER,
    };
    image[at + 0x60..at + 0x64].copy_from_slice(&features.to_le_bytes());
    let bytes: &mut [u8; 1024] = (&mut image[at..at + 1024]).try_into().unwrap();
    let checksum = superblock_checksum(bytes);
    bytes[0x3FC..].copy_from_slice(&checksum.to_le_bytes());
}

/// A 1 KiB-block image after a crash: `/kept` (fsynced) and `/lost`
/// (written after the fsync, never committed) under the Grouped policy.
fn crashed_image() -> (Vec<u8>, Vec<u8>) {
    let image = image_of(fresh(1024, 16, "metadata_csum,64bit"));
    let mut fs = Ext4::open_with(MemoryDisk::new(image), Access::ReadWrite, CommitPolicy::Grouped).unwrap();
    let mut clock = Clock(0);
    let kept = fs.create(fs.root(), b"kept", 0o644, ROOT_OWNER, clock.tick()).unwrap();
    let data = pattern(7, 30_000);
    fs.write(kept, 0, &data, clock.tick()).unwrap();
    fs.fsync(kept).unwrap();
    let lost = fs.create(fs.root(), b"lost", 0o644, ROOT_OWNER, clock.tick()).unwrap();
    fs.write(lost, 0, &pattern(8, 5000), clock.tick()).unwrap();
    (fs.into_device().into_bytes(), data)
}

#[test]
fn a_clean_unmount_leaves_nothing_to_recover_and_the_journal_used() {
    let image = image_of(fresh(4096, 32, "metadata_csum,64bit"));
    let (_, sequence_before) = journal_start_and_sequence(&image);
    let mut fs = open_with(&image, Access::ReadWrite).unwrap();
    let mut clock = Clock(0);
    let file = fs.create(fs.root(), b"file", 0o644, ROOT_OWNER, clock.tick()).unwrap();
    fs.write(file, 0, &pattern(3, 50_000), clock.tick()).unwrap();
    fs.sync().unwrap();
    fs.mkdir(fs.root(), b"dir", 0o755, ROOT_OWNER, clock.tick()).unwrap();
    let image = fs.unmount().unwrap().into_bytes();
    assert_eq!(incompat(&image) & RECOVER, 0, "needs_recovery left set");
    let (start, sequence_after) = journal_start_and_sequence(&image);
    assert_eq!(start, 0, "log left in use");
    assert!(sequence_after > sequence_before, "no transaction went through the journal");
    assert_fsck_clean(&image, "after unmount");
    let fs = Ext4::open(MemoryDisk::new(image)).unwrap();
    assert_eq!(fs.mount(), Mount::ReadWrite);
    assert_eq!(contents(&fs, resolve(&fs, "/file")), pattern(3, 50_000));
    resolve(&fs, "/dir");
}

#[test]
fn a_crash_leaves_a_log_that_this_crate_and_e2fsck_replay_alike() {
    let (crashed, kept) = crashed_image();
    assert_ne!(incompat(&crashed) & RECOVER, 0, "a log in use without needs_recovery");
    let legacy = Ext4::open(MemoryDisk::new(crashed.clone())).unwrap();
    assert_eq!(legacy.mount(), Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
    let read_only = open_with(&crashed, Access::ReadOnly).unwrap();
    assert_eq!(read_only.mount(), Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
    assert!(read_only.into_device().into_bytes() == crashed, "a read-only open wrote");

    let ours = open_with(&crashed, Access::ReadWrite).unwrap();
    assert_eq!(ours.mount(), Mount::ReadWrite);
    assert!(!ours.superblock().needs_recovery());
    assert_eq!(contents(&ours, resolve(&ours, "/kept")), kept);
    assert!(ours.resolve(b"/lost").is_err(), "an uncommitted file survived");
    let ours = ours.into_device().into_bytes();
    assert_fsck_clean(&ours, "after our recovery");

    let dir = TempDir::new("e2fsck-replay");
    let path = dir.0.join("image");
    std::fs::write(&path, &crashed).unwrap();
    let output = std::process::Command::new(E2FSCK).arg("-fy").arg(&path).output().unwrap();
    let theirs = std::fs::read(&path).unwrap();
    assert!(output.status.code().is_some_and(|code| code <= 1), "{}", String::from_utf8_lossy(&output.stdout));
    assert_fsck_clean(&theirs, "after e2fsck's recovery");
    let theirs = Ext4::open(MemoryDisk::new(theirs)).unwrap();
    assert_eq!(contents(&theirs, resolve(&theirs, "/kept")), kept);
    assert!(theirs.resolve(b"/lost").is_err());
    let block_size = theirs.superblock().block_size as usize;
    let theirs = theirs.into_device().into_bytes();
    // Both replays write the same blocks home: everything but the two
    // superblocks (e2fsck stamps its check time) must be equal.
    let journal_block = journal_superblock_offset(&ours) / block_size;
    let differing: Vec<usize> = (0..ours.len() / block_size)
        .filter(|&block| ours[block * block_size..][..block_size] != theirs[block * block_size..][..block_size])
        .filter(|&block| block != SUPERBLOCK_OFFSET as usize / block_size && block != journal_block)
        .collect();
    assert!(differing.is_empty(), "blocks replayed differently: {differing:?}");
}

#[test]
fn a_stale_log_without_needs_recovery_is_discarded() {
    let (mut crashed, _) = crashed_image();
    mark_recovery(&mut crashed, Flag::Clear);
    let legacy = Ext4::open(MemoryDisk::new(crashed.clone())).unwrap();
    assert_eq!(legacy.mount(), Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
    let fs = open_with(&crashed, Access::ReadWrite).unwrap();
    assert_eq!(fs.mount(), Mount::ReadWrite);
    let image = fs.unmount().unwrap().into_bytes();
    assert_eq!(journal_start_and_sequence(&image).0, 0);
    assert_fsck_clean(&image, "after discarding a stale log");
}

#[test]
fn unsupported_journal_features_are_named() {
    let mut image = image_of(fresh(1024, 16, "metadata_csum,64bit"));
    patch_journal_superblock(&mut image, |block| {
        let features = be32(block, 0x28) | jbd2::Features::INCOMPAT_FAST_COMMIT;
        block[0x28..0x2C].copy_from_slice(&features.to_be_bytes());
    });
    for fs in [Ext4::open(MemoryDisk::new(image.clone())).unwrap(), open_with(&image, Access::ReadWrite).unwrap()] {
        let Mount::ReadOnly(ReadOnlyReason::Journal(failure)) = fs.mount() else { panic!("{:?}", fs.mount()) };
        assert!(failure.to_string().contains("fast_commit"), "{failure}");
    }
    mark_recovery(&mut image, Flag::Set);
    let error = open_with(&image, Access::ReadWrite).unwrap_err();
    assert!(error.to_string().contains("fast_commit"), "{error}");
}

#[test]
fn a_failed_replay_refuses_the_mount() {
    let (mut crashed, _) = crashed_image();
    let journal = journal_superblock_offset(&crashed);
    let (start, _) = journal_start_and_sequence(&crashed);
    // The first logged copy follows the first descriptor: damage it.
    let copy = journal + (start as usize + 1) * 1024;
    assert_eq!(be32(&crashed, copy - 1024), 0xC03B_3998, "a descriptor at the log's start");
    crashed[copy + 100] ^= 0xFF;
    let error = open_with(&crashed, Access::ReadWrite).unwrap_err();
    assert!(matches!(error, Error::Journal(JournalFailure::Recovery(_))), "{error:?}");
    let legacy = Ext4::open(MemoryDisk::new(crashed)).unwrap();
    assert_eq!(legacy.mount(), Mount::ReadOnly(ReadOnlyReason::JournalNeedsRecovery));
}

#[test]
fn full_transactions_commit_by_themselves_and_the_log_wraps() {
    let image = image_of(fresh(1024, 16, "metadata_csum,64bit"));
    let mut fs = open_with(&image, Access::ReadWrite).unwrap();
    let mut clock = Clock(0);
    let root = fs.root();
    for index in 0..1200 {
        fs.mkdir(root, format!("d{index}").as_bytes(), 0o755, ROOT_OWNER, clock.tick()).unwrap();
    }
    // No sync yet: the transaction limit alone committed most of them, and
    // 1200 new directory blocks alone are more than the 1024-block log holds.
    let crashed = fs.into_device().into_bytes();
    let recovered = open_with(&crashed, Access::ReadWrite).unwrap();
    let survivors = (0..1200).filter(|index| recovered.resolve(format!("/d{index}").as_bytes()).is_ok()).count();
    assert!(survivors > 900, "only {survivors} of 1200 directories were committed without a sync");
    assert!((0..survivors).all(|index| recovered.resolve(format!("/d{index}").as_bytes()).is_ok()), "a hole in the order");
    let image = recovered.unmount().unwrap().into_bytes();
    assert_fsck_clean(&image, "after 1200 mkdirs in grouped transactions");
}
