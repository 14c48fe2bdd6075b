//! A disk that logs every write and flush in order, over an image in
//! memory: the raw material crash states are cut from (`crash_check`'s
//! [`Event`]s, in units of its [`UNIT`]).

use std::cell::RefCell;
use std::rc::Rc;

use crash_check::{Event, UNIT};
use ext4::{BlockDevice, IoError, MemoryDisk};

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

