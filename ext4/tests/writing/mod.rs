//! Shared by the write tests: fresh images from mkfs.ext4, e2fsck and
//! debugfs on the result, and a clock.

#![allow(dead_code)] // each test crate uses a different part

use std::fs;
use std::process::Command;

use crate::common::{make_image_from, TempDir, DEBUGFS, E2FSCK};
use ext4::{Ext4, InodeNumber, MemoryDisk, Owner, Resolution, Timestamp};

/// The layouts the write tests run on: block size and mkfs `-O` options.
pub const LAYOUTS: &[(u32, &str)] = &[
    (1024, "metadata_csum,64bit"),
    (4096, "metadata_csum,64bit"),
    (1024, "^metadata_csum,^64bit"),
    (4096, "^metadata_csum,64bit"),
    (1024, "^metadata_csum,uninit_bg,^64bit"),
];

/// An empty file system of `megabytes` with `block_size` and `features`
/// (flex_bg and the rest of mke2fs's defaults), in groups of 2048 blocks
/// so that small images have many groups, most of them `BLOCK_UNINIT`
/// and `INODE_UNINIT`; opened read-write.
pub fn fresh(block_size: u32, megabytes: u32, features: &str) -> Ext4<MemoryDisk> {
    let tree = TempDir::new("empty-tree");
    let image = make_image_from(&tree.0, block_size, megabytes, &["-O", features, "-g", "2048", "-N", "2048"]);
    Ext4::open(MemoryDisk::new(image)).unwrap()
}

/// The image's bytes (the file system is consumed).
pub fn image_of(fs: Ext4<MemoryDisk>) -> Vec<u8> {
    fs.into_device().into_bytes()
}

/// Runs `e2fsck -fn` on `image` and fails with its output unless it exits 0.
pub fn assert_fsck_clean(image: &[u8], context: &str) {
    let dir = TempDir::new("fsck");
    let path = dir.0.join("image");
    fs::write(&path, image).unwrap();
    let output = Command::new(E2FSCK).arg("-fn").arg(&path).output().unwrap();
    assert!(
        output.status.success(),
        "{context}: e2fsck -fn exited with {:?}:\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs one read-only debugfs request on `image`; returns its raw output.
pub fn debugfs_bytes(image: &[u8], request: &str) -> Vec<u8> {
    let dir = TempDir::new("debugfs-read");
    let path = dir.0.join("image");
    fs::write(&path, image).unwrap();
    Command::new(DEBUGFS).args(["-R", request]).arg(&path).output().unwrap().stdout
}

/// Runs one read-only debugfs request on `image`; returns its output.
pub fn debugfs_request(image: &[u8], request: &str) -> String {
    String::from_utf8_lossy(&debugfs_bytes(image, request)).into_owned()
}

/// A clock that moves 1.5 s per tick, with nanoseconds.
pub struct Clock(pub i64);

impl Clock {
    pub fn tick(&mut self) -> Timestamp {
        self.0 += 1;
        Timestamp { seconds: 1_700_000_000 + self.0 * 3 / 2, nanoseconds: ((self.0 * 123_457) % 1_000_000_000) as u32 }
    }
}

pub const ROOT_OWNER: Owner = Owner { uid: 0, gid: 0 };

/// The inode `path` names.
pub fn resolve(fs: &Ext4<MemoryDisk>, path: &str) -> InodeNumber {
    match fs.resolve(path.as_bytes()).unwrap() {
        Resolution::Found(number) => number,
        other => panic!("{path}: {other:?}"),
    }
}

/// All of file `number`'s bytes.
pub fn contents(fs: &Ext4<MemoryDisk>, number: InodeNumber) -> Vec<u8> {
    let inode = fs.inode(number).unwrap();
    crate::common::read_all(fs, &inode, u64::MAX).unwrap()
}
