//! What a disk saw, in order: the writes and flushes crash states are cut
//! from (whether recorded by a test's disk or by QEMU's `blklogwrites`),
//! and the mutation that loses the flushes around each journal commit.
//!
//! Writes are kept in units of [`UNIT`] bytes (two sectors), the largest
//! piece this model lets a disk write atomically: a longer write may
//! reach the platter in part, in any order, until a flush.

/// Bytes a disk writes atomically in this model.
pub const UNIT: usize = 1024;

/// One request the disk saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// `bytes` (at most [`UNIT`]) written at `sector`.
    Write { sector: u64, bytes: Vec<u8> },
    /// Every write before this is durable.
    Flush,
    /// A flush the file system asked for that the disk never performed
    /// (the mutation check; kept so event indices do not move).
    LostFlush,
}

/// Whether `bytes` starts a jbd2 commit block (magic, block type 2).
pub fn is_commit_block(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == [0xC0, 0x3B, 0x39, 0x98] && bytes[4..8] == [0, 0, 0, 2]
}

/// Which flushes around a commit block a mutation loses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AroundCommit {
    /// The flush right before the commit block (ordering lost).
    Before,
    /// The flush right after it (durability lost).
    After,
}

/// The mutation "a flush next to each commit block is dropped": each
/// flush directly before (or after) a commit block's write becomes a
/// [`Event::LostFlush`]. Returns how many were lost.
pub fn lose_flushes(events: &mut [Event], which: AroundCommit) -> usize {
    let mut lost = 0;
    for index in 0..events.len() {
        let neighbour = match which {
            AroundCommit::Before => events.get(index + 1),
            AroundCommit::After => index.checked_sub(1).and_then(|before| events.get(before)),
        };
        let next_to_commit = matches!(neighbour, Some(Event::Write { bytes, .. }) if is_commit_block(bytes));
        if matches!(events[index], Event::Flush) && next_to_commit {
            events[index] = Event::LostFlush;
            lost += 1;
        }
    }
    lost
}

/// Whether `bytes` starts a jbd2 superblock (v1 or v2) saying the log is
/// empty (`s_start = 0`): the next transaction starts at the log's start.
fn is_empty_log_superblock(bytes: &[u8]) -> bool {
    bytes.len() >= 0x20
        && bytes[..4] == [0xC0, 0x3B, 0x39, 0x98]
        && matches!(bytes[4..8], [0, 0, 0, 3] | [0, 0, 0, 4])
        && bytes[0x1C..0x20] == [0, 0, 0, 0]
}

/// How many times a commit block was written at a lower sector than the
/// one before without the log being emptied in between: the circular log
/// wrapped.
pub fn log_wraps(events: &[Event]) -> usize {
    let mut last_commit = None;
    let mut wraps = 0;
    for event in events {
        let Event::Write { sector, bytes } = event else { continue };
        if is_empty_log_superblock(bytes) {
            last_commit = None;
        } else if is_commit_block(bytes) {
            wraps += usize::from(last_commit.is_some_and(|last| *sector < last));
            last_commit = Some(*sector);
        }
    }
    wraps
}
