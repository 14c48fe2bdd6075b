//! Recovery of journals written by debugfs 1.47 (`jo -c`, `jw`, `jc`:
//! checksum v3, 64-bit) must leave the image exactly as `e2fsck -fy`
//! leaves it — every block but the ext4 superblock, which e2fsck always
//! updates — and `e2fsck -fn` must find nothing to fix afterwards.

mod common;

use common::{data_file, pattern, recover_both, Image};
use jbd2::recover;

/// An image with four transactions from debugfs: 1 writes blocks 0 and
/// 1 of `blocks`, 2 revokes block 0, 3 writes blocks 1 (again), 2 and 3
/// (block 3 starts with the jbd2 magic: it must be escaped), 4 writes
/// block 4 but is not committed.
struct Scenario {
    image: Image,
    blocks: Vec<u64>,
    first: Vec<u8>,
    second: Vec<u8>,
}

fn scenario(block_size: u32, size: &str) -> Scenario {
    let image = Image::make(block_size, size);
    let blocks = image.free_blocks(5, 3000);
    let length = block_size as usize;
    let first = pattern(1, 2 * length);
    let mut second = pattern(2, 3 * length);
    second[2 * length..2 * length + 4].copy_from_slice(&0xC03B_3998u32.to_be_bytes());
    let first_file = data_file(&first);
    let second_file = data_file(&second);
    let script = format!(
        "jo -c\njw -b {},{} {}\njw -r {}\njw -b {},{},{} {}\njw -c -b {} {}\njc\n",
        blocks[0],
        blocks[1],
        first_file.0.display(),
        blocks[0],
        blocks[1],
        blocks[2],
        blocks[3],
        second_file.0.display(),
        blocks[4],
        first_file.0.display(),
    );
    image.debugfs_write(&script);
    assert!(image.needs_recovery(), "debugfs left needs_recovery set");
    Scenario {
        image,
        blocks,
        first,
        second,
    }
}


fn assert_clean_after(ours: &Image) {
    ours.clear_needs_recovery();
    let (code, output) = ours.e2fsck(&["-fn"]);
    assert_eq!(code, 0, "e2fsck -fn after our recovery: {output}");
}

fn committed_transactions_replay_like_e2fsck(block_size: u32, size: &str) {
    let Scenario {
        image,
        blocks,
        first,
        second,
    } = scenario(block_size, size);
    let untouched: Vec<Vec<u8>> = blocks.iter().map(|&block| image.block(block)).collect();
    let (ours, result) = recover_both(&image);
    let report = result.expect("recovery succeeds");
    assert_eq!(
        (
            report.first_transaction,
            report.end_transaction,
            report.next_sequence
        ),
        (1, 4, 5)
    );
    assert_eq!(report.transactions_replayed, 3);
    assert_eq!(report.blocks_replayed, 4);
    assert_eq!(report.revoked_blocks_skipped, 1);
    assert_eq!(report.revoke_records, 1);
    let length = block_size as usize;
    assert_eq!(
        ours.block(blocks[0]),
        untouched[0],
        "revoked block replayed"
    );
    assert_eq!(
        ours.block(blocks[1]),
        second[..length],
        "block 1 must hold transaction 3's copy"
    );
    assert_eq!(ours.block(blocks[2]), second[length..2 * length]);
    assert_eq!(
        ours.block(blocks[3]),
        second[2 * length..],
        "escaped block must get its magic back"
    );
    assert_eq!(
        ours.block(blocks[4]),
        untouched[4],
        "uncommitted transaction replayed"
    );
    let _ = first;
    let again = ours.copy();
    let second_run = recover(&again, &again).expect("second recovery");
    assert_eq!(second_run.blocks_replayed, 0);
    assert!(
        again.differing_blocks(&ours).is_empty(),
        "second recovery changed the image"
    );
    assert_clean_after(&ours);
}

#[test]
fn debugfs_transactions_replay_like_e2fsck_1k_blocks() {
    committed_transactions_replay_like_e2fsck(1024, "32M");
}

#[test]
fn debugfs_transactions_replay_like_e2fsck_4k_blocks() {
    committed_transactions_replay_like_e2fsck(4096, "64M");
}

#[test]
fn clean_journal_needs_nothing() {
    let image = Image::make(1024, "32M");
    let before = image.copy();
    let report = recover(&image, &image).expect("clean journal");
    assert_eq!(report.blocks_replayed, 0);
    assert!(image.differing_blocks(&before).is_empty());
}
