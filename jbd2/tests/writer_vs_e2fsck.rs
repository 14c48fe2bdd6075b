//! Transactions written by [`jbd2::Journal`] into the journal of a real
//! image, then the machine "crashes" (no checkpoint, `needs_recovery`
//! set): `e2fsck -fy` must replay them to exactly the blocks expected, and
//! our own recovery must leave the same image as e2fsck — proof that the
//! format written is the format Linux reads, for checksum v3, v2, v1 and
//! none, 1 KiB and 4 KiB blocks, escaped blocks, revokes, group commit,
//! and a log that wrapped around after forced checkpoints.

mod common;

use std::collections::BTreeMap;

use common::{pattern, Image};
use jbd2::{recover, CommitTime, Features, Journal, JournalArea, Room};

const V3_64BIT: Features = Features {
    compat: 0,
    incompat: Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT,
    ro_compat: 0,
};

fn time(seconds: u64) -> CommitTime {
    CommitTime {
        seconds: 1_700_000_000 + seconds,
        nanoseconds: 0,
    }
}

/// The image after a crash: e2fsck's replay and ours must agree, and
/// every block in `expected` must hold its data.
fn crash_and_check(image: &Image, expected: &BTreeMap<u64, Vec<u8>>) {
    image.set_needs_recovery();
    let theirs = image.copy();
    let (code, output) = theirs.e2fsck(&["-fy"]);
    assert!(code <= 1, "e2fsck -fy exit {code}: {output}");
    assert!(
        output.contains("recovering journal"),
        "e2fsck did not replay: {output}"
    );
    for (&block, data) in expected {
        assert!(
            theirs.block(block) == *data,
            "e2fsck replay: block {block} does not hold the committed data"
        );
    }
    let (code, output) = theirs.e2fsck(&["-fn"]);
    assert_eq!(code, 0, "e2fsck -fn after e2fsck's replay: {output}");
    let ours = image.copy();
    recover(&ours, &ours).expect("our recovery of our journal");
    let differing = ours.differing_blocks(&theirs);
    assert!(
        differing.is_empty(),
        "our replay differs from e2fsck's in blocks {differing:?}"
    );
}

fn two_transactions(block_size: u32, size: &str, features: Features) {
    let image = Image::make(block_size, size);
    let blocks = image.free_blocks(6, 3000);
    let length = block_size as usize;
    let mut expected = BTreeMap::new();
    let mut journal = Journal::open_with_features(&image, features).expect("open");
    // Group commit: two operations join one transaction.
    let first = journal.begin();
    let second = journal.begin();
    assert_eq!(first.sequence(), second.sequence());
    for (index, &block) in blocks[..3].iter().enumerate() {
        let handle = if index % 2 == 0 { &first } else { &second };
        let data = pattern(block, length);
        journal.write_block(handle, block, &data).unwrap();
        expected.insert(block, data);
    }
    let mut magic = pattern(99, length);
    magic[..4].copy_from_slice(&0xC03B_3998u32.to_be_bytes());
    journal.write_block(&second, blocks[3], &magic).unwrap();
    expected.insert(blocks[3], magic);
    journal.end(first).unwrap();
    journal.end(second).unwrap();
    journal.commit(&image, time(1)).unwrap().expect("committed");
    // Transaction 2 revokes block 0 and rewrites block 1.
    let handle = journal.begin();
    journal.revoke_block(&handle, blocks[0]).unwrap();
    let rewritten = pattern(1000 + blocks[1], length);
    journal.write_block(&handle, blocks[1], &rewritten).unwrap();
    expected.insert(blocks[1], rewritten);
    expected.insert(blocks[0], image.block(blocks[0]));
    journal.end(handle).unwrap();
    journal.commit(&image, time(2)).unwrap().expect("committed");
    drop(journal);
    crash_and_check(&image, &expected);
}

#[test]
fn checksum_v3_transactions_replay_under_e2fsck_1k() {
    two_transactions(1024, "32M", V3_64BIT);
}

#[test]
fn checksum_v3_transactions_replay_under_e2fsck_4k() {
    two_transactions(4096, "64M", V3_64BIT);
}

#[test]
fn checksum_v2_transactions_replay_under_e2fsck() {
    let v2 = Features {
        incompat: Features::INCOMPAT_CSUM_V2,
        ..Features::default()
    };
    two_transactions(1024, "32M", v2);
}

#[test]
fn v1_and_unchecksummed_transactions_replay_under_e2fsck() {
    let v1 = Features {
        compat: Features::COMPAT_CHECKSUM,
        ..Features::default()
    };
    two_transactions(1024, "32M", v1);
    let plain_64bit = Features {
        incompat: Features::INCOMPAT_64BIT,
        ..Features::default()
    };
    two_transactions(4096, "64M", plain_64bit);
}

#[test]
fn wrapped_log_after_forced_checkpoints_replays_under_e2fsck() {
    let image = Image::make(4096, "64M");
    let blocks = image.free_blocks(60, 3000);
    let mut journal = Journal::open_with_features(&image, V3_64BIT).expect("open");
    let capacity = JournalArea::block_count(&image) - 1;
    let mut expected = BTreeMap::new();
    let mut forced = 0;
    let mut straddled = 0;
    let mut logged: u64 = 0;
    let mut round = 0u64;
    // Until the log has wrapped and a checkpoint was forced twice.
    while forced < 2 || straddled < 1 || logged < 2 * capacity {
        round += 1;
        let handle = journal.begin();
        let count = 20 + (round * 7) % 37;
        for index in 0..count {
            let block = blocks[((round + index) % 60) as usize];
            let data = pattern(round * 1000 + block, 4096);
            journal.write_block(&handle, block, &data).unwrap();
            expected.insert(block, data);
        }
        journal.end(handle).unwrap();
        let committed = journal
            .commit(&image, time(round))
            .unwrap()
            .expect("committed");
        logged += u64::from(committed.log_blocks);
        if u64::from(committed.log_start) + u64::from(committed.log_blocks) > capacity + 1 {
            straddled += 1;
        }
        if committed.room == Room::MadeByCheckpoint {
            forced += 1;
        }
    }
    assert!(
        journal.awaiting_checkpoint() > 0,
        "the crash must leave something to replay"
    );
    drop(journal);
    crash_and_check(&image, &expected);
}

#[test]
fn closed_journal_is_clean_with_every_block_home() {
    let image = Image::make(1024, "32M");
    let blocks = image.free_blocks(4, 3000);
    let mut journal = Journal::open_with_features(&image, V3_64BIT).expect("open");
    let handle = journal.begin();
    for &block in &blocks {
        journal
            .write_block(&handle, block, &pattern(block + 7, 1024))
            .unwrap();
    }
    journal.end(handle).unwrap();
    journal.commit(&image, time(1)).unwrap();
    journal.close(&image).expect("close");
    for &block in &blocks {
        assert!(
            image.block(block) == pattern(block + 7, 1024),
            "block {block} not home after close"
        );
    }
    let (code, output) = image.e2fsck(&["-fn"]);
    assert_eq!(code, 0, "e2fsck -fn after close: {output}");
    let report = recover(&image, &image).unwrap();
    assert_eq!(report.blocks_replayed, 0);
}
