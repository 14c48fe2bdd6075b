//! ext4 images: `ext4::Ext4::open` on a whole image in memory, then a walk
//! that uses everything the crate accepts (the root resolved, every
//! directory listed down to [`MAX_DEPTH`], every regular file read up to
//! [`FILE_BYTES`] and its first [`MAX_RUNS`] block runs mapped, links read,
//! inodes stat'ed, names looked up and paths resolved), bounded by
//! [`MAX_ENTRIES`] so a damaged image costs what a good one does. What the
//! crate promises about accepted results is checked, and a broken promise
//! panics: names of 1 to 255 bytes without `/` or NUL, reads inside the
//! buffer and `i_size`, runs never empty and inside the file system, a
//! run's block read through the file equal to the device's block (zeros
//! for holes), link targets without NUL as long as `i_size`, inode numbers
//! outside the table refused.
//!
//! Samples are real images made by `mkfs.ext4` (`samples`); hot ranges are
//! the metadata a walk of the sample reads, never file data (`hot_ranges`);
//! mutations set the fields `fields` picks, which `layout` locates; repair
//! recomputes the checksums (`repair`). Must not write to the image: it is
//! opened with [`Ext4::open`], which never writes.

mod fields;
mod hot_ranges;
mod labels;
mod layout;
mod repair;
mod samples;

use std::collections::HashSet;
use std::ops::Range;

use ext4::{
    BlockDevice, Checksums, Error, Ext4, FileType, Inode, InodeNumber, MemoryDisk, Mount, Resolution, Run, MAX_NAME_LENGTH, MAX_TARGET_LENGTH, SECTOR_SIZE,
};

use crate::{boundary_value, Rng, Target};
use fields::pick_field;
use hot_ranges::closest_sample;
use labels::{bucket, error_label};
use layout::{le32, put_le};
use repair::repair_checksums;
use samples::samples;

/// The ext4 target.
pub struct Ext4Image;

/// The most directory entries a walk follows.
const MAX_ENTRIES: usize = 200;
/// The deepest directory a walk lists.
const MAX_DEPTH: usize = 8;
/// The most bytes read from one file.
const FILE_BYTES: u64 = 64 * 1024;
/// The most paths a walk resolves from the root.
const MAX_RESOLVES: usize = 24;
/// The device an image is opened on: the image, padded with zeros to at
/// least this size (a partition larger than its file system), so that an
/// edit which shortens the image does not always end at the device-size
/// check.
const DEVICE_BYTES: usize = 256 * 1024;
/// The most inodes read by number.
const MAX_STATS: u32 = 64;
/// The most runs of one file whose mapping is checked.
const MAX_RUNS: usize = 8;
/// Bytes per read request.
const CHUNK: usize = 16 * 1024;

/// One walk of an opened image.
struct Walk<'a> {
    fs: &'a Ext4<MemoryDisk>,
    seen: HashSet<InodeNumber>,
    entries: usize,
    resolves: usize,
    first_error: Option<Error>,
    buffer: Vec<u8>,
    /// One block as read through a file, and as on the device.
    through_file: Vec<u8>,
    on_device: Vec<u8>,
}

impl Walk<'_> {
    fn note<T>(&mut self, result: Result<T, Error>) -> Option<T> {
        result.map_err(|error| self.first_error.get_or_insert(error)).ok()
    }

    /// Lists `directory` and visits each entry (not "." and "..").
    fn directory(&mut self, directory: &Inode, path: &[u8], depth: usize) {
        let Some(entries) = self.note(self.fs.read_dir(directory)) else { return };
        let inodes_count = self.fs.superblock().inodes_count;
        for entry in &entries {
            let name = &entry.name;
            assert!(!name.is_empty() && name.len() <= MAX_NAME_LENGTH, "a name of {} bytes was accepted", name.len());
            assert!(!name.iter().any(|&byte| byte == 0 || byte == b'/'), "a name with NUL or '/' was accepted: {name:?}");
            assert!(entry.inode.0 != 0 && entry.inode.0 <= inodes_count, "an entry's inode is out of range: {entry:?}");
        }
        if let Some(first) = entries.iter().find(|entry| entry.name != b"." && entry.name != b"..") {
            let found = self.note(self.fs.lookup(directory, &first.name));
            assert!(found.is_none_or(|found| found.is_some()), "lookup missed a name read_dir listed: {first:?}");
        }
        for entry in entries {
            if entry.name == b"." || entry.name == b".." {
                continue;
            }
            if self.entries >= MAX_ENTRIES {
                return;
            }
            self.entries += 1;
            let mut child_path = path.to_vec();
            child_path.push(b'/');
            child_path.extend_from_slice(&entry.name);
            self.visit(entry.inode, &child_path, depth + 1);
        }
    }

    /// Stats inode `number` (reached by `path`) and reads what it holds.
    fn visit(&mut self, number: InodeNumber, path: &[u8], depth: usize) {
        if !path.is_empty() && self.resolves < MAX_RESOLVES {
            self.resolves += 1;
            let resolved = self.note(self.fs.resolve(path));
            if let Some(Resolution::Symlink { rest, .. }) = resolved {
                assert!(rest <= path.len(), "a symlink's rest lies past the path");
            }
        }
        if !self.seen.insert(number) {
            return;
        }
        let Some(inode) = self.note(self.fs.inode(number)) else { return };
        check_inode(&inode, number);
        match inode.file_type {
            FileType::Directory if depth < MAX_DEPTH => {
                self.runs(&inode);
                self.directory(&inode, path, depth);
            }
            FileType::Directory => {}
            FileType::Regular => {
                self.runs(&inode);
                self.file(&inode);
            }
            FileType::Symlink => self.link(&inode),
            _ => {
                let mut byte = [0u8; 1];
                assert!(self.fs.read(&inode, 0, &mut byte).is_err(), "a {:?} had data", inode.file_type);
            }
        }
    }

    /// Reads up to [`FILE_BYTES`] of a regular file, checking each read
    /// stays inside the buffer and `i_size`.
    fn file(&mut self, inode: &Inode) {
        let mut offset = 0u64;
        let mut buffer = std::mem::take(&mut self.buffer);
        while offset < FILE_BYTES {
            let Some(count) = self.note(self.fs.read(inode, offset, &mut buffer)) else { break };
            assert!(count <= buffer.len(), "read returned {count} bytes into {}", buffer.len());
            assert!(offset + count as u64 <= inode.size, "read past i_size {}: {count} at {offset}", inode.size);
            if count == 0 {
                assert!(offset >= inode.size, "a read inside the file returned nothing");
                break;
            }
            offset += count as u64;
        }
        self.buffer = buffer;
        let mut byte = [0u8; 1];
        let far = self.note(self.fs.read(inode, u64::MAX, &mut byte));
        assert!(far.is_none_or(|count| count == 0), "a read at the largest offset returned data");
    }

    /// Maps `inode`'s blocks run by run (at most [`MAX_RUNS`]), checking
    /// each run is not empty and lies inside the file system, and that the
    /// run's first block read through the file is the device's block there
    /// (zeros for a hole or an unwritten run).
    fn runs(&mut self, inode: &Inode) {
        let superblock = self.fs.superblock();
        let block_size = u64::from(superblock.block_size);
        let blocks = inode.size.div_ceil(block_size);
        let mut logical = 0u64;
        for _ in 0..MAX_RUNS {
            if logical >= blocks {
                return;
            }
            let Some(run) = self.note(self.fs.map_block(inode, logical)) else { return };
            assert!(run.length() > 0, "an empty run at block {logical}");
            self.on_device.fill(0);
            if let Run::Data { physical, length } = run {
                let end = physical.checked_add(length);
                let inside = physical > u64::from(superblock.first_data_block) && end.is_some_and(|end| end <= superblock.blocks_count);
                assert!(inside, "a run outside the file system: {run:?}");
                let sector = physical * (block_size / SECTOR_SIZE as u64);
                self.fs.device().read_sectors(sector, &mut self.on_device).expect("a block inside the file system reads");
            }
            let read = self.fs.read(inode, logical * block_size, &mut self.through_file);
            if let Some(count) = self.note(read) {
                assert!(self.through_file[..count] == self.on_device[..count], "block {logical} reads other bytes than its {run:?}");
            }
            logical = logical.saturating_add(run.length());
        }
    }

    fn link(&mut self, inode: &Inode) {
        let Some(target) = self.note(self.fs.read_link(inode)) else { return };
        assert!(!target.is_empty() && target.len() as u64 <= MAX_TARGET_LENGTH, "a link target of {} bytes", target.len());
        assert!(!target.contains(&0), "a link target with NUL");
        assert_eq!(target.len() as u64, inode.size, "a link target disagrees with i_size");
    }
}

/// What [`Ext4::inode`] promises about an inode it returns.
fn check_inode(inode: &Inode, number: InodeNumber) {
    assert_eq!(inode.number, number, "inode() returned another inode");
    assert_eq!(FileType::from_mode(inode.mode), Some(inode.file_type), "the type disagrees with i_mode");
    assert!(inode.links_count > 0, "a free inode was returned");
    assert!(inode.size <= i64::MAX as u64, "i_size above 2^63 was accepted");
    let _ = (inode.permissions(), inode.is_htree(), inode.uses_extents(), inode.uid, inode.gid);
    let _ = (inode.access_time, inode.change_time, inode.modification_time, inode.creation_time);
}

/// Reads the first [`MAX_STATS`] inodes whether a directory names them or
/// not, and numbers no file system has (they must be out of range).
fn stat_inodes(fs: &Ext4<MemoryDisk>) {
    let count = fs.superblock().inodes_count;
    for number in 1..=count.min(MAX_STATS) {
        if let Ok(inode) = fs.inode(InodeNumber(number)) {
            check_inode(&inode, InodeNumber(number));
        }
    }
    for number in [0, count.saturating_add(1), u32::MAX].into_iter().filter(|&number| number == 0 || number > count) {
        assert!(matches!(fs.inode(InodeNumber(number)), Err(Error::InodeOutOfRange(_))), "inode {number} is out of range");
    }
}

/// Opens `input` and walks it; the outcome label.
fn open_and_walk(input: &[u8]) -> String {
    let mut device = input.to_vec();
    device.resize(input.len().max(DEVICE_BYTES), 0);
    let fs = match Ext4::open(MemoryDisk::new(device)) {
        Ok(fs) => fs,
        Err(error) => return format!("open:{}", error_label(&error)),
    };
    let statistics = fs.statistics();
    assert_eq!(statistics.block_size, fs.superblock().block_size);
    assert!(fs.groups().iter().count() as u64 <= u64::from(fs.superblock().group_count()), "more descriptors than groups");
    let mount = if fs.mount() == Mount::ReadWrite { "rw" } else { "ro" };
    let checksums = match fs.superblock().checksums {
        Checksums::Crc32c { .. } => "crc32c",
        Checksums::GroupDescriptorCrc16 => "crc16",
        Checksums::None => "no csum",
    };
    let format = format!("{checksums} {}K", fs.superblock().block_size / 1024);
    let block_size = fs.superblock().block_size as usize;
    let mut walk = Walk {
        fs: &fs,
        seen: HashSet::new(),
        entries: 0,
        resolves: 0,
        first_error: None,
        buffer: vec![0; CHUNK],
        through_file: vec![0; block_size],
        on_device: vec![0; block_size],
    };
    match walk.note(fs.resolve(b"/")) {
        Some(Resolution::Found(root)) => assert_eq!(root, fs.root(), "/ resolved to another inode"),
        Some(other) => panic!("/ resolved to {other:?}"),
        None => {}
    }
    walk.visit(fs.root(), b"", 0);
    stat_inodes(&fs);
    match walk.first_error {
        Some(error) => format!("{format}: walk:{} ({} entries)", error_label(&error), bucket(walk.entries)),
        None => format!("{format}: walk ok {} {mount}", bucket(walk.entries)),
    }
}

impl Target for Ext4Image {
    fn name(&self) -> &'static str {
        "ext4"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        samples().iter().map(|sample| sample.bytes.clone()).collect()
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let sample = &samples()[random.below(samples().len())];
        let mut image = sample.bytes.clone();
        for _ in 0..1 + random.below(3) {
            let (at, width) = pick_field(sample, random);
            let feature_word = (0x5C + 1024..=0x64 + 1024).contains(&at);
            let value = if feature_word { u64::from(le32(&image, at) ^ (1 << random.below(32))) } else { boundary_value(random) };
            put_le(&mut image, at, width, value);
        }
        repair_checksums(&mut image);
        image
    }

    fn max_len(&self) -> usize {
        samples().iter().map(|sample| sample.bytes.len()).max().unwrap_or(0)
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        match closest_sample(input) {
            Some(sample) => sample.hot.clone(),
            None => {
                let start = 0..input.len().min(64 * 1024);
                vec![start]
            }
        }
    }

    fn repair(&self, input: &mut Vec<u8>) {
        repair_checksums(input);
    }

    fn run(&self, input: &[u8]) -> String {
        open_and_walk(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ext4::SUPERBLOCK_OFFSET;
    use samples::make_images;

    #[test]
    fn every_sample_opens_and_walks_cleanly() {
        for sample in samples() {
            let label = open_and_walk(&sample.bytes);
            assert!(label.contains(": walk ok"), "{label}");
            assert!(sample.inodes.len() >= 10 && !sample.blocks.is_empty(), "the analysis found little");
            assert_eq!(Ext4Image.hot_ranges(&sample.bytes), sample.hot, "a sample is not its own closest sample");
        }
    }

    #[test]
    fn repair_makes_a_changed_inode_and_superblock_pass_their_checksums() {
        let sample = &samples()[0];
        let mut image = sample.bytes.clone();
        image[SUPERBLOCK_OFFSET as usize + 0x16C] ^= 1; // an unused word of the superblock
        let inode = sample.inodes[1].start;
        image[inode + 0x8] ^= 1; // an access time
        assert!(open_and_walk(&image).starts_with("open:Superblock ChecksumMismatch"), "{}", open_and_walk(&image));
        repair_checksums(&mut image);
        assert!(open_and_walk(&image).contains(": walk ok"), "{}", open_and_walk(&image));
    }

    #[test]
    fn samples_are_the_same_in_every_process() {
        let again = make_images();
        for (made, sample) in again.iter().zip(samples()) {
            let differ: Vec<usize> = (0..made.len()).filter(|&at| made[at] != sample.bytes[at]).take(40).collect();
            assert!(*made == sample.bytes, "two runs of mkfs.ext4 made different images: {differ:?}");
        }
    }
}
