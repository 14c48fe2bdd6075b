//! A disk that logs every write and flush in order, over an image in
//! memory: the raw material crash states are cut from.
//!
//! Writes are logged in units of [`UNIT`] bytes (two sectors), the
//! largest piece this model lets a disk write atomically: a longer write
//! may reach the platter in part, in any order, until a flush.

use std::cell::RefCell;
use std::rc::Rc;

use ext4::{BlockDevice, IoError, MemoryDisk};

/// Bytes a disk writes atomically in this model.
pub const UNIT: usize = 1024;

/// One request the disk saw.
#[derive(Clone, Debug)]
pub enum Event {
    /// `bytes` (at most [`UNIT`]) written at `sector`.
    Write { sector: u64, bytes: Vec<u8> },
    /// Every write before this is durable.
    Flush,
    /// A flush the file system asked for that the disk never performed
    /// (the mutation check; kept so event indices do not move).
    LostFlush,
}

/// The image as the file system sees it, and the log of requests.
pub struct Recording {
    pub initial: Vec<u8>,
    pub disk: MemoryDisk,
    pub events: Vec<Event>,
}

/// The file system's device: requests go to the shared recording.
pub struct RecordingDisk {
    pub recording: Rc<RefCell<Recording>>,
}

impl RecordingDisk {
    /// A disk holding `image`, and the handle the test keeps on its log.
    pub fn new(image: Vec<u8>) -> (RecordingDisk, Rc<RefCell<Recording>>) {
        let recording =
            Rc::new(RefCell::new(Recording { initial: image.clone(), disk: MemoryDisk::new(image), events: Vec::new() }));
        (RecordingDisk { recording: recording.clone() }, recording)
    }
}

impl BlockDevice for RecordingDisk {
    fn sector_count(&self) -> u64 {
        self.recording.borrow().disk.sector_count()
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        self.recording.borrow().disk.read_sectors(first_sector, buffer)
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        let mut recording = self.recording.borrow_mut();
        recording.disk.write_sectors(first_sector, data)?;
        for (index, piece) in data.chunks(UNIT).enumerate() {
            let sector = first_sector + (index * UNIT / ext4::SECTOR_SIZE) as u64;
            recording.events.push(Event::Write { sector, bytes: piece.to_vec() });
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        self.recording.borrow_mut().events.push(Event::Flush);
        Ok(())
    }
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
