//! Damaged journals: a torn or corrupted transaction must end the log, or
//! fail recovery, exactly where the kernel's rules (as e2fsck 1.47 runs
//! them) do — the resulting image is compared with `e2fsck -fy`'s block
//! for block — and random damage anywhere in the journal never panics or
//! hangs.
//!
//! What Linux does, and so what [`jbd2::recover`] does:
//! - a bad commit checksum ends the log before that transaction (it and
//!   every later one are dropped; `failed_commit` names it);
//! - a bad descriptor or revoke tail in a transaction whose commit block
//!   follows is corruption: recovery fails before replaying anything;
//! - a bad data-block tag checksum skips that block only: the rest is
//!   replayed, then recovery reports `DataBlocksSkipped`;
//! - a missing commit block (torn transaction) ends the log silently.
//!
//! After a failed recovery, e2fsck marks the log empty anyway; the tests
//! do the same with [`jbd2::discard_log`] before comparing.

mod common;

use std::time::{Duration, Instant};

use common::{data_file, pattern, recover_both, Image, MemoryJournal};
use jbd2::{recover, JournalArea, RecoveryError};

/// Journal positions of the debugfs scenario below (1 KiB blocks):
/// transaction 1 = descriptor 1, data 2-3, commit 4; transaction 2 =
/// revoke 5, commit 6; transaction 3 = descriptor 7, data 8-10, commit 11.
const DESCRIPTOR_3: u64 = 7;
const DATA_3: u64 = 8;
const COMMIT_1: u64 = 4;
const REVOKE_2: u64 = 5;
const COMMIT_3: u64 = 11;

fn scenario() -> (Image, Vec<u64>) {
    let image = Image::make(1024, "32M");
    let blocks = image.free_blocks(4, 3000);
    let data = data_file(&pattern(9, 3 * 1024));
    let script = format!(
        "jo -c\njw -b {},{} {path}\njw -r {}\njw -b {},{},{} {path}\njc\n",
        blocks[0],
        blocks[1],
        blocks[0],
        blocks[1],
        blocks[2],
        blocks[3],
        path = data.0.display(),
    );
    image.debugfs_write(&script);
    for (position, kind) in [
        (1, 1),
        (COMMIT_1, 2),
        (REVOKE_2, 5),
        (6, 2),
        (DESCRIPTOR_3, 1),
        (COMMIT_3, 2),
    ] {
        let block = image.journal_block(position);
        assert_eq!(
            block[..4],
            [0xC0, 0x3B, 0x39, 0x98],
            "journal block {position}"
        );
        assert_eq!(block[7], kind, "type of journal block {position}");
    }
    (image, blocks)
}

fn flip(image: &Image, position: u64, offset: usize) {
    let mut block = image.journal_block(position);
    block[offset] ^= 0x40;
    image.set_journal_block(position, &block);
}


#[test]
fn bad_commit_checksum_ends_the_log_before_that_transaction() {
    let (image, _) = scenario();
    flip(&image, COMMIT_3, 0x100);
    let (_, result) = recover_both(&image);
    let report = result.expect("a bad commit block is the end of the log");
    assert_eq!((report.end_transaction, report.failed_commit), (3, Some(3)));
    assert_eq!(report.transactions_replayed, 2);

    let (image, _) = scenario();
    flip(&image, COMMIT_1, 0x3FF);
    let (_, result) = recover_both(&image);
    let report = result.expect("first commit bad: nothing to replay");
    assert_eq!(
        (
            report.end_transaction,
            report.blocks_replayed,
            report.failed_commit
        ),
        (1, 0, Some(1))
    );
}

#[test]
fn torn_transaction_without_commit_block_is_dropped() {
    let (image, blocks) = scenario();
    let before = image.block(blocks[2]);
    image.set_journal_block(COMMIT_3, &vec![0u8; 1024]);
    let (ours, result) = recover_both(&image);
    let report = result.expect("torn transaction");
    assert_eq!((report.end_transaction, report.failed_commit), (3, None));
    assert_eq!(ours.block(blocks[2]), before, "torn transaction replayed");
}

#[test]
fn bad_descriptor_checksum_fails_recovery() {
    let (image, _) = scenario();
    flip(&image, DESCRIPTOR_3, 0x200);
    let (_, result) = recover_both(&image);
    assert_eq!(
        result,
        Err(RecoveryError::TransactionChecksum { sequence: 3 })
    );
}

#[test]
fn bad_revoke_checksum_fails_recovery() {
    let (image, _) = scenario();
    flip(&image, REVOKE_2, 0x300);
    let (_, result) = recover_both(&image);
    assert_eq!(
        result,
        Err(RecoveryError::TransactionChecksum { sequence: 2 })
    );
}

#[test]
fn descriptor_without_magic_ends_the_log() {
    let (image, _) = scenario();
    flip(&image, DESCRIPTOR_3, 0);
    let (_, result) = recover_both(&image);
    assert_eq!(result.expect("end of log").end_transaction, 3);
}

#[test]
fn bad_data_block_is_skipped_and_reported() {
    let (image, blocks) = scenario();
    flip(&image, DATA_3, 17);
    let (ours, result) = recover_both(&image);
    assert_eq!(
        result,
        Err(RecoveryError::DataBlocksSkipped {
            bad_checksums: 1,
            unreadable: 0
        })
    );
    assert_eq!(
        ours.block(blocks[2]),
        pattern(9, 3 * 1024)[1024..2048],
        "the good block of the same transaction"
    );
}

/// xorshift64 for picking damage.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn damage(journal: &MemoryJournal, random: &mut Random, positions: u64, flips: u32) {
    let mut block = vec![0u8; 1024];
    for _ in 0..flips {
        let position = random.next() % positions;
        journal.read_block(position, &mut block).unwrap();
        let offset = (random.next() % 1024) as usize;
        block[offset] ^= 1 << (random.next() % 8);
        journal.write_block(position, &block).unwrap();
    }
}

#[test]
fn random_damage_never_panics_or_hangs() {
    let (image, _) = scenario();
    let journal = MemoryJournal::from_image(&image);
    let original = journal.bytes.borrow().clone();
    let mut random = Random(0x5EED_1234_ABCD_0001);
    let started = Instant::now();
    for round in 0..2000 {
        // Mostly the used log, sometimes the superblock too.
        let positions = if round % 4 == 0 { 1 } else { 13 };
        let flips = 1 + (random.next() % 8) as u32;
        damage(&journal, &mut random, positions, flips);
        let _ = recover(&journal, &journal);
        let _ = recover(&journal, &journal);
        journal.restore_from(&original, 16);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "2000 damaged recoveries took {:?}",
        started.elapsed()
    );
}

#[test]
fn random_damage_to_the_log_ends_where_e2fsck_ends() {
    let (image, _) = scenario();
    let mut random = Random(0xC0FF_EE00_0000_0042);
    for _ in 0..6 {
        let damaged = image.copy();
        let mut block_random = Random(random.next() | 1);
        let position = 1 + block_random.next() % 12;
        let mut block = damaged.journal_block(position);
        let offset = (block_random.next() % 1024) as usize;
        block[offset] ^= 1 << (block_random.next() % 8);
        damaged.set_journal_block(position, &block);
        let _ = recover_both(&damaged);
    }
}
