//! Test-only helpers: real ext4 images made by mkfs.ext4, held in memory,
//! with the journal (inode 8) mapped through `debugfs -R 'stat <8>'`, and
//! the e2fsprogs tools run on copies written to unique temporary files.
#![allow(dead_code)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use jbd2::{discard_log, recover, FileSystemBlocks, IoError, JournalArea, RecoveryError, RecoveryReport};

mod memory_journal;
#[allow(unused_imports)]
pub use memory_journal::MemoryJournal;

static NEXT_FILE: AtomicU32 = AtomicU32::new(0);

/// A file under the temporary directory, removed on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(label: &str) -> TempFile {
        let number = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let name = format!("jbd2-test-{}-{label}-{number}.img", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One run of the journal: `length` journal blocks from `logical` at
/// file-system block `physical`.
#[derive(Clone, Copy, Debug)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
}

/// An ext4 image in memory with its journal mapped.
pub struct Image {
    pub bytes: RefCell<Vec<u8>>,
    pub block_size: u32,
    pub journal: Vec<Extent>,
}

fn run(command: &mut Command) -> (i32, String) {
    let output = command.output().expect("run an e2fsprogs tool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

/// Parses the EXTENTS line of `debugfs -R 'stat <8>'`.
fn parse_extents(stat: &str) -> Vec<Extent> {
    let line = stat
        .lines()
        .skip_while(|line| !line.starts_with("EXTENTS"))
        .nth(1)
        .expect("EXTENTS line");
    let mut extents = Vec::new();
    for part in line.split(", ") {
        let Some((logical, physical)) = part
            .trim()
            .strip_prefix('(')
            .and_then(|rest| rest.split_once("):"))
        else {
            continue;
        };
        if logical.starts_with("ETB") {
            continue;
        }
        let range = |text: &str| -> (u64, u64) {
            match text.split_once('-') {
                Some((start, end)) => (start.parse().unwrap(), end.parse().unwrap()),
                None => (text.parse().unwrap(), text.parse().unwrap()),
            }
        };
        let (logical_start, logical_end) = range(logical);
        let (physical_start, _) = range(physical);
        extents.push(Extent {
            logical: logical_start,
            physical: physical_start,
            length: logical_end - logical_start + 1,
        });
    }
    extents
}

impl Image {
    /// A fresh image from `mkfs.ext4 -q -F -b BLOCK_SIZE IMG SIZE`.
    pub fn make(block_size: u32, size: &str) -> Image {
        let file = TempFile::new("mkfs");
        let (code, text) = run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-b", &block_size.to_string()])
            .arg(&file.0)
            .arg(size));
        assert_eq!(code, 0, "mkfs.ext4: {text}");
        Image::load(&file.0, block_size)
    }

    /// The image in `path`, its journal mapped by debugfs.
    pub fn load(path: &Path, block_size: u32) -> Image {
        let (code, stat) = run(Command::new("debugfs").args(["-R", "stat <8>"]).arg(path));
        assert_eq!(code, 0, "debugfs stat: {stat}");
        let bytes = std::fs::read(path).unwrap();
        Image {
            bytes: RefCell::new(bytes),
            block_size,
            journal: parse_extents(&stat),
        }
    }

    /// A copy with the same journal map.
    pub fn copy(&self) -> Image {
        Image {
            bytes: RefCell::new(self.bytes.borrow().clone()),
            block_size: self.block_size,
            journal: self.journal.clone(),
        }
    }

    /// Writes the image to a fresh temporary file, sparse: runs of zeros
    /// are left as holes (the disk here is slow; images are mostly zero).
    pub fn save(&self) -> TempFile {
        use std::os::unix::fs::FileExt;
        let file = TempFile::new("image");
        let bytes = self.bytes.borrow();
        let output = std::fs::File::create(&file.0).unwrap();
        output.set_len(bytes.len() as u64).unwrap();
        for (index, chunk) in bytes.chunks(65536).enumerate() {
            if chunk.iter().any(|&byte| byte != 0) {
                output.write_all_at(chunk, index as u64 * 65536).unwrap();
            }
        }
        file
    }

    /// Replaces the bytes with those of `file`.
    pub fn reload(&self, file: &TempFile) {
        *self.bytes.borrow_mut() = std::fs::read(&file.0).unwrap();
    }

    /// Runs debugfs -w with `commands` (one per line) on this image.
    pub fn debugfs_write(&self, commands: &str) -> String {
        let image = self.save();
        let script = TempFile::new("script");
        std::fs::write(&script.0, commands).unwrap();
        let (code, text) = run(Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&script.0)
            .arg(&image.0));
        assert_eq!(code, 0, "debugfs: {text}");
        self.reload(&image);
        text
    }

    /// Runs `e2fsck ARGS` on a saved copy, then takes its result back;
    /// returns the exit code and output.
    pub fn e2fsck(&self, args: &[&str]) -> (i32, String) {
        let image = self.save();
        let result = run(Command::new("e2fsck").args(args).arg(&image.0));
        self.reload(&image);
        result
    }

    /// The physical block of journal block `index`.
    pub fn journal_to_fs(&self, index: u64) -> Option<u64> {
        self.journal
            .iter()
            .find(|extent| (extent.logical..extent.logical + extent.length).contains(&index))
            .map(|extent| extent.physical + index - extent.logical)
    }

    pub fn block(&self, number: u64) -> Vec<u8> {
        let size = self.block_size as usize;
        let start = number as usize * size;
        self.bytes.borrow()[start..start + size].to_vec()
    }

    pub fn set_block(&self, number: u64, data: &[u8]) {
        let size = self.block_size as usize;
        let start = number as usize * size;
        self.bytes.borrow_mut()[start..start + size].copy_from_slice(data);
    }

    pub fn journal_block(&self, index: u64) -> Vec<u8> {
        self.block(self.journal_to_fs(index).unwrap())
    }

    pub fn set_journal_block(&self, index: u64, data: &[u8]) {
        self.set_block(self.journal_to_fs(index).unwrap(), data);
    }

    /// Whether the ext4 superblock says the journal needs recovery.
    pub fn needs_recovery(&self) -> bool {
        let bytes = self.bytes.borrow();
        u32::from_le_bytes(bytes[1024 + 0x60..1024 + 0x64].try_into().unwrap()) & 0x4 != 0
    }

    /// Clears ext4's `needs_recovery` flag (and reseals the superblock
    /// checksum): what the ext4 layer does after recovery.
    pub fn clear_needs_recovery(&self) {
        self.set_recovery_flag(0);
    }

    /// Sets ext4's `needs_recovery` flag: what ext4 does while its journal
    /// is in use (a crash leaves it set).
    pub fn set_needs_recovery(&self) {
        self.set_recovery_flag(0x4);
    }

    fn set_recovery_flag(&self, flag: u32) {
        let mut bytes = self.bytes.borrow_mut();
        let superblock = &mut bytes[1024..2048];
        let incompat = u32::from_le_bytes(superblock[0x60..0x64].try_into().unwrap()) & !0x4 | flag;
        superblock[0x60..0x64].copy_from_slice(&incompat.to_le_bytes());
        let checksum = jbd2::crc32c_update(!0, &superblock[..0x3FC]);
        superblock[0x3FC..].copy_from_slice(&checksum.to_le_bytes());
    }

    /// Free blocks from debugfs `ffb COUNT START`.
    pub fn free_blocks(&self, count: u32, start: u64) -> Vec<u64> {
        let image = self.save();
        let (code, text) = run(Command::new("debugfs")
            .args(["-R", &format!("ffb {count} {start}")])
            .arg(&image.0));
        assert_eq!(code, 0, "debugfs ffb: {text}");
        let line = text
            .lines()
            .find(|line| line.starts_with("Free blocks found:"))
            .expect("ffb output");
        line["Free blocks found:".len()..]
            .split_whitespace()
            .map(|word| word.parse().unwrap())
            .collect()
    }

    /// Blocks where two images differ, leaving out the ext4 superblock
    /// (bytes 1024..2048), which e2fsck always updates.
    pub fn differing_blocks(&self, other: &Image) -> Vec<u64> {
        let ours = self.bytes.borrow();
        let theirs = other.bytes.borrow();
        assert_eq!(ours.len(), theirs.len());
        let size = self.block_size as usize;
        let outside_superblock = |start: usize, a: &[u8], b: &[u8]| -> bool {
            // Bytes of this block before 1024 and from 2048 on.
            let cut_low = 1024usize.saturating_sub(start).min(size);
            let cut_high = 2048usize.saturating_sub(start).min(size);
            a[..cut_low] != b[..cut_low] || a[cut_high..] != b[cut_high..]
        };
        ours.chunks(size)
            .zip(theirs.chunks(size))
            .enumerate()
            .filter(|(index, (a, b))| a != b && outside_superblock(index * size, a, b))
            .map(|(index, _)| index as u64)
            .collect()
    }
}

impl JournalArea for Image {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn block_count(&self) -> u64 {
        self.journal.iter().map(|extent| extent.length).sum()
    }

    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let physical = self.journal_to_fs(index).ok_or(IoError::OutOfRange)?;
        buffer.copy_from_slice(&self.block(physical));
        Ok(())
    }

    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), IoError> {
        let physical = self.journal_to_fs(index).ok_or(IoError::OutOfRange)?;
        self.set_block(physical, data);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

impl FileSystemBlocks for Image {
    fn write_fs_block(&self, block_number: u64, data: &[u8]) -> Result<(), IoError> {
        let blocks = (self.bytes.borrow().len() / self.block_size as usize) as u64;
        if block_number >= blocks {
            return Err(IoError::OutOfRange);
        }
        self.set_block(block_number, data);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

/// Deterministic bytes: xorshift64 from `seed`.
pub fn pattern(seed: u64, length: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Writes `data` to a temporary file for debugfs `jw`.
pub fn data_file(data: &[u8]) -> TempFile {
    let file = TempFile::new("data");
    std::fs::write(&file.0, data).unwrap();
    file
}

/// Runs our recovery on one copy (with e2fsck's discard after a failure)
/// and `e2fsck -fy` on another; they must agree block for block.
pub fn recover_both(image: &Image) -> (Image, Result<RecoveryReport, RecoveryError>) {
    let ours = image.copy();
    let result = recover(&ours, &ours);
    if result.is_err() {
        discard_log(&ours).expect("discard after failed recovery");
    }
    let theirs = image.copy();
    let (code, output) = theirs.e2fsck(&["-fy"]);
    assert!(code <= 1, "e2fsck -fy exit {code}: {output}");
    let differing = ours.differing_blocks(&theirs);
    assert!(
        differing.is_empty(),
        "blocks differing from e2fsck's replay: {differing:?}; ours: {result:?}; e2fsck: {output}"
    );
    (ours, result)
}
