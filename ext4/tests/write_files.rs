//! File data written through the crate's API on images made by
//! mkfs.ext4 (1 and 4 KiB blocks, with and without metadata_csum and
//! 64bit): small, large, sparse and fragmented files, appends, overwrites
//! and truncation, checked by `e2fsck -fn`, by reopening with this crate
//! and by `debugfs -R cat`.

mod common;
mod writing;

use common::pattern;
use ext4::{Ext4, InodeNumber, MemoryDisk};
use writing::{assert_fsck_clean, contents, debugfs_bytes, fresh, image_of, resolve, Clock, LAYOUTS, ROOT_OWNER};

/// A file and what it should hold.
struct Expected {
    path: &'static str,
    number: InodeNumber,
    bytes: Vec<u8>,
}

fn write_model(fs: &mut Ext4<MemoryDisk>, expected: &mut Expected, offset: usize, data: &[u8], clock: &mut Clock) {
    assert_eq!(fs.write(expected.number, offset as u64, data, clock.tick()).unwrap(), data.len());
    if expected.bytes.len() < offset + data.len() {
        expected.bytes.resize(offset + data.len(), 0);
    }
    expected.bytes[offset..offset + data.len()].copy_from_slice(data);
}

fn truncate_model(fs: &mut Ext4<MemoryDisk>, expected: &mut Expected, size: usize, clock: &mut Clock) {
    fs.truncate(expected.number, size as u64, clock.tick()).unwrap();
    expected.bytes.resize(size, 0);
}

fn check_files(image: &[u8], files: &[Expected], context: &str) {
    assert_fsck_clean(image, context);
    let fs = Ext4::open(MemoryDisk::new(image.to_vec())).unwrap();
    for file in files {
        let number = resolve(&fs, file.path);
        let inode = fs.inode(number).unwrap();
        assert_eq!(inode.size, file.bytes.len() as u64, "{context}: size of {}", file.path);
        assert!(contents(&fs, number) == file.bytes, "{context}: contents of {} (reopened)", file.path);
        let by_debugfs = debugfs_bytes(image, &format!("cat {}", file.path));
        assert!(by_debugfs == file.bytes, "{context}: debugfs cat {} gave {} bytes", file.path, by_debugfs.len());
    }
}

#[test]
fn files_written_appended_overwritten_and_truncated_read_back_everywhere() {
    for &(block_size, features) in LAYOUTS {
        let context = format!("{block_size}-byte blocks, {features}");
        let mut fs = fresh(block_size, 16, features);
        let mut clock = Clock(0);
        let root = fs.root();
        let mut files = Vec::new();
        for (path, seed) in [("/small", 1), ("/large", 2), ("/sparse", 3), ("/shrunk", 4), ("/grown", 5)] {
            let number = fs.create(root, &path.as_bytes()[1..], 0o644, ROOT_OWNER, clock.tick()).unwrap();
            let mut file = Expected { path, number, bytes: Vec::new() };
            match path {
                "/small" => write_model(&mut fs, &mut file, 0, b"hello\n", &mut clock),
                "/large" => {
                    write_model(&mut fs, &mut file, 0, &pattern(seed, 3 << 20), &mut clock);
                    write_model(&mut fs, &mut file, 3 << 20, &pattern(seed + 10, 12345), &mut clock);
                    write_model(&mut fs, &mut file, 1_000_000, &pattern(seed + 20, 70_000), &mut clock);
                }
                "/sparse" => {
                    write_model(&mut fs, &mut file, 5000, &pattern(seed, 100), &mut clock);
                    write_model(&mut fs, &mut file, 2 << 20, &pattern(seed + 1, 9000), &mut clock);
                    write_model(&mut fs, &mut file, 100_000, &pattern(seed + 2, 1), &mut clock);
                }
                "/shrunk" => {
                    write_model(&mut fs, &mut file, 0, &pattern(seed, 500_000), &mut clock);
                    truncate_model(&mut fs, &mut file, 123_457, &mut clock);
                    truncate_model(&mut fs, &mut file, 200_000, &mut clock);
                    write_model(&mut fs, &mut file, 300_000, b"tail", &mut clock);
                }
                _ => {
                    write_model(&mut fs, &mut file, 0, b"start", &mut clock);
                    truncate_model(&mut fs, &mut file, 1 << 20, &mut clock);
                    write_model(&mut fs, &mut file, 10, b"inside", &mut clock);
                }
            }
            assert!(contents(&fs, number) == file.bytes, "{context}: {path} before reopening");
            files.push(file);
        }
        check_files(&image_of(fs), &files, &context);
    }
}

#[test]
fn a_fragmented_file_grows_its_extent_tree_into_blocks_and_back() {
    for &(block_size, features) in LAYOUTS {
        let context = format!("{block_size}-byte blocks, {features}");
        let mut fs = fresh(block_size, 16, features);
        let mut clock = Clock(0);
        let root = fs.root();
        let number = fs.create(root, b"fragmented", 0o600, ROOT_OWNER, clock.tick()).unwrap();
        let mut file = Expected { path: "/fragmented", number, bytes: Vec::new() };
        let block = block_size as usize;
        // Every other block: one extent each, 400 of them (depth 2 with 1 KiB blocks).
        for index in 0..400 {
            write_model(&mut fs, &mut file, 2 * index * block + 7, &pattern(index as u32, 100), &mut clock);
        }
        let image = image_of(fs);
        let extents = writing::debugfs_request(&image, "ex /fragmented");
        let depth = if block_size == 1024 { "2/ 2" } else { "1/ 1" };
        assert!(extents.contains(depth), "{context}: expected a tree of depth {depth}:\n{extents}");
        check_files(&image, &[file], &context);
        let mut fs = Ext4::open(MemoryDisk::new(image)).unwrap();
        let mut file = Expected { path: "/fragmented", number, bytes: contents(&fs, number) };
        truncate_model(&mut fs, &mut file, 5 * block + 3, &mut clock);
        let image = image_of(fs);
        let extents = writing::debugfs_request(&image, "ex /fragmented");
        assert!(extents.contains("0/ 0") && !extents.contains("1/ 1"), "{context}: not back in the inode:\n{extents}");
        check_files(&image, &[file], &format!("{context}, truncated"));
    }
}

#[test]
fn filling_the_file_system_reports_no_space_and_changes_nothing() {
    let mut fs = fresh(1024, 4, "metadata_csum,64bit");
    let mut clock = Clock(0);
    let root = fs.root();
    let number = fs.create(root, b"big", 0o644, ROOT_OWNER, clock.tick()).unwrap();
    let free_before = fs.statistics().free_blocks;
    let error = fs.write(number, 0, &vec![7u8; 8 << 20], clock.tick()).unwrap_err();
    assert_eq!(error.errno(), ext4::errno::ENOSPC, "{error}");
    assert_eq!(fs.statistics().free_blocks, free_before, "a failed write allocated blocks");
    let chunk = vec![9u8; 64 << 10];
    let mut written = 0u64;
    while fs.write(number, written, &chunk, clock.tick()).is_ok() {
        written += chunk.len() as u64;
    }
    assert!(written > 0);
    let files = [Expected { path: "/big", number, bytes: vec![9u8; written as usize] }];
    check_files(&image_of(fs), &files, "full file system");
}

#[test]
fn a_read_only_mount_refuses_every_write_with_erofs() {
    let image = common::make_image(1024, 16, &["-O", "quota"]);
    let mut fs = Ext4::open(MemoryDisk::new(image)).unwrap();
    assert!(matches!(fs.mount(), ext4::Mount::ReadOnly(_)));
    let mut clock = Clock(0);
    let root = fs.root();
    let error = fs.create(root, b"nope", 0o644, ROOT_OWNER, clock.tick()).unwrap_err();
    assert_eq!(error.errno(), ext4::errno::EROFS);
    let one = resolve(&fs, "/one");
    assert_eq!(fs.write(one, 0, b"x", clock.tick()).unwrap_err().errno(), ext4::errno::EROFS);
    assert_eq!(fs.unlink(root, b"one", clock.tick()).unwrap_err().errno(), ext4::errno::EROFS);
}

/// A memory disk that records the first sector of every write, in order.
struct RecordingDisk {
    disk: MemoryDisk,
    writes: std::cell::RefCell<Vec<u64>>,
}

impl ext4::BlockDevice for RecordingDisk {
    fn sector_count(&self) -> u64 {
        self.disk.sector_count()
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), ext4::IoError> {
        self.disk.read_sectors(first_sector, buffer)
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), ext4::IoError> {
        self.writes.borrow_mut().push(first_sector);
        self.disk.write_sectors(first_sector, data)
    }

    fn flush(&self) -> Result<(), ext4::IoError> {
        Ok(())
    }
}

#[test]
fn data_blocks_reach_the_disk_before_the_metadata_that_points_at_them() {
    let image = image_of(fresh(1024, 16, "metadata_csum,64bit"));
    let recording = RecordingDisk { disk: MemoryDisk::new(image), writes: Default::default() };
    let mut fs = Ext4::open(recording).unwrap();
    let mut clock = Clock(0);
    let root = fs.root();
    let file = fs.create(root, b"ordered", 0o644, ROOT_OWNER, clock.tick()).unwrap();
    fs.device().writes.borrow_mut().clear();
    fs.write(file, 0, &pattern(1, 20_000), clock.tick()).unwrap();
    let inode = fs.inode(file).unwrap();
    let data_blocks: Vec<u64> = (0..20)
        .map(|logical| match fs.map_block(&inode, logical).unwrap() {
            ext4::Run::Data { physical, .. } => physical,
            other => panic!("block {logical}: {other:?}"),
        })
        .collect();
    let order: Vec<u64> = fs.device().writes.borrow().iter().map(|sector| sector / 2).collect();
    let first_metadata = order.iter().position(|block| !data_blocks.contains(block)).unwrap();
    assert!(
        order[first_metadata..].iter().all(|block| !data_blocks.contains(block)),
        "data written after metadata: {order:?} (data {data_blocks:?})"
    );
    assert_eq!(first_metadata, data_blocks.len(), "each data block written once, first: {order:?}");
}

/// A file whose one extent runs across groups that hold no superblock
/// backup (sparse_super: groups 2, 4, …) is freed whole: those groups have
/// no fixed metadata at their start for the run to overlap. (The kernel's
/// mount found this: removing a large file failed with EUCLEAN.)
#[test]
fn a_run_across_groups_without_a_superblock_backup_is_freed() {
    for &(block_size, features) in LAYOUTS {
        let context = format!("{block_size}-byte blocks, {features}");
        let mut fs = fresh(block_size, 16, features);
        let mut clock = Clock(0);
        let root = fs.root();
        let number = fs.create(root, b"wide", 0o644, ROOT_OWNER, clock.tick()).unwrap();
        let data = pattern(9, 6 << 20);
        assert_eq!(fs.write(number, 0, &data, clock.tick()).unwrap(), data.len(), "{context}");
        fs.unlink(root, b"wide", clock.tick()).unwrap_or_else(|error| panic!("{context}: unlink: {error:?}"));
        assert_fsck_clean(&image_of(fs), &context);
    }
}
