//! The writer's contract, on a journal held in memory: what it refuses
//! (open handles, stale handles, oversized transactions, wrong lengths,
//! block numbers too wide, a journal needing recovery) and what a crash
//! in the middle of a commit leaves (nothing of that transaction).

mod common;

use common::{pattern, Image, MemoryJournal};
use jbd2::{recover, CommitTime, Features, Journal, JournalArea, JournalError};

fn memory_journal() -> MemoryJournal {
    MemoryJournal::from_image(&Image::make(1024, "32M"))
}

fn v3() -> Features {
    Features {
        incompat: Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT,
        ..Features::default()
    }
}

#[test]
fn commit_waits_for_every_handle() {
    let journal_area = memory_journal();
    let mut journal = Journal::open_with_features(&journal_area, v3()).unwrap();
    assert_eq!(
        journal.commit(&journal_area, CommitTime::default()),
        Ok(None),
        "nothing running"
    );
    let first = journal.begin();
    let second = journal.begin();
    journal
        .write_block(&first, 5000, &pattern(1, 1024))
        .unwrap();
    journal.end(first).unwrap();
    assert_eq!(
        journal.commit(&journal_area, CommitTime::default()),
        Err(JournalError::HandlesStillOpen(1))
    );
    journal.end(second).unwrap();
    let committed = journal
        .commit(&journal_area, CommitTime::default())
        .unwrap()
        .expect("committed");
    assert_eq!(committed.log_blocks, 3, "descriptor, data, commit");
}

#[test]
fn handles_of_another_transaction_are_refused() {
    let area_a = memory_journal();
    let area_b = memory_journal();
    let mut journal_a = Journal::open_with_features(&area_a, v3()).unwrap();
    let mut journal_b = Journal::open_with_features(&area_b, v3()).unwrap();
    let handle_b = journal_b.begin();
    journal_b
        .write_block(&handle_b, 5000, &pattern(1, 1024))
        .unwrap();
    journal_b.end(handle_b).unwrap();
    journal_b
        .commit(&area_b, CommitTime::default())
        .unwrap()
        .expect("committed");
    let handle_a = journal_a.begin();
    assert_ne!(handle_a.sequence(), journal_b.next_sequence());
    assert_eq!(
        journal_b.write_block(&handle_a, 5001, &pattern(2, 1024)),
        Err(JournalError::StaleHandle)
    );
    assert_eq!(
        journal_b.revoke_block(&handle_a, 5001),
        Err(JournalError::StaleHandle)
    );
    journal_a.end(handle_a).unwrap();
}

#[test]
fn refusals_are_errors_not_panics() {
    let journal_area = memory_journal();
    let plain = Features::default();
    let mut journal = Journal::open_with_features(&journal_area, plain).unwrap();
    let handle = journal.begin();
    assert_eq!(
        journal.write_block(&handle, 1, &[0u8; 100]),
        Err(JournalError::WrongLength {
            expected: 1024,
            actual: 100
        })
    );
    assert_eq!(
        journal.write_block(&handle, 1 << 32, &[0u8; 1024]),
        Err(JournalError::BlockNumberTooLarge(1 << 32))
    );
    let limit = journal.max_transaction_blocks();
    let mut full = None;
    for block in 0..limit {
        if let Err(error) = journal.write_block(&handle, 10_000 + block, &[7u8; 1024]) {
            full = Some(error);
            break;
        }
    }
    assert_eq!(full, Some(JournalError::TransactionFull));
    journal.end(handle).unwrap();
    let committed = journal
        .commit(&journal_area, CommitTime::default())
        .unwrap()
        .expect("committed");
    assert!(u64::from(committed.log_blocks) <= limit);
}

#[test]
fn crash_before_the_commit_block_loses_only_that_transaction() {
    let journal_area = memory_journal();
    let mut journal = Journal::open_with_features(&journal_area, v3()).unwrap();
    let mut positions = Vec::new();
    for round in 0..3u64 {
        let handle = journal.begin();
        journal
            .write_block(&handle, 6000 + round, &pattern(round, 1024))
            .unwrap();
        journal.end(handle).unwrap();
        let committed = journal
            .commit(&journal_area, CommitTime::default())
            .unwrap()
            .unwrap();
        positions.push(u64::from(committed.log_start) + u64::from(committed.log_blocks) - 1);
    }
    drop(journal);
    assert_eq!(
        Journal::open(&journal_area).err(),
        Some(JournalError::NeedsRecovery),
        "a dirty journal must be recovered before use"
    );
    // The last commit block never reached the disk.
    journal_area
        .write_block(positions[2], &[0u8; 1024])
        .unwrap();
    let report = recover(&journal_area, &journal_area).unwrap();
    assert_eq!(
        (report.transactions_replayed, report.blocks_replayed),
        (2, 2)
    );
    assert_eq!(journal_area.fs_writes.get(), 2);
    let reopened = Journal::open(&journal_area).expect("clean after recovery");
    assert_eq!(
        reopened.next_sequence(),
        report.next_sequence.wrapping_add(1)
    );
}
