//! Packing entries into a newc archive (the host side: xtask builds the
//! guest's initramfs with it; the tests build archives to parse).

use alloc::format;
use alloc::vec::Vec;

use crate::{DIRECTORY, REGULAR, SYMLINK};

/// An archive being written.
#[derive(Default)]
pub struct Writer {
    bytes: Vec<u8>,
    next_inode: u32,
}

impl Writer {
    /// An empty archive.
    pub fn new() -> Self {
        Self { bytes: Vec::new(), next_inode: 1 }
    }

    /// Adds a directory (`permissions`: the low 12 mode bits).
    pub fn directory(&mut self, path: &str, permissions: u32) {
        self.entry(path, DIRECTORY | permissions, (0, 0), &[]);
    }

    /// Adds a regular file.
    pub fn file(&mut self, path: &str, permissions: u32, data: &[u8]) {
        self.entry(path, REGULAR | permissions, (0, 0), data);
    }

    /// Adds a symbolic link to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.entry(path, SYMLINK | 0o777, (0, 0), target.as_bytes());
    }

    /// Adds an entry with any mode and device numbers.
    pub fn entry(&mut self, path: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        let inode = self.next_inode;
        self.next_inode += 1;
        let name_size = path.len() + 1;
        let fields = [inode, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, rdev.0, rdev.1, name_size as u32, 0];
        self.bytes.extend_from_slice(b"070701");
        for field in fields {
            self.bytes.extend_from_slice(format!("{field:08X}").as_bytes());
        }
        self.bytes.extend_from_slice(path.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    /// Ends the archive with the trailer and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        self.bytes
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }
}
