//! What `stat(2)` and `statx(2)` hand a program, laid out byte for byte as
//! x86-64 Linux does (`struct stat`, 144 bytes; `struct statx`, 256), and
//! the directory records of `getdents64` (`struct linux_dirent64`).
//!
//! Must never panic: a name too long for the buffer is a `None`.

/// One time stamp: seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Whole seconds.
    pub seconds: u64,
    /// Nanoseconds past them (below 10⁹).
    pub nanoseconds: u32,
}

/// A file's status, as the personality gathered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStatus {
    /// The file system's device numbers (major, minor).
    pub device: (u32, u32),
    /// Inode number.
    pub inode: u64,
    /// Hard links.
    pub links: u32,
    /// Kind and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// A device node's numbers (major, minor).
    pub represented_device: (u32, u32),
    /// Size in bytes.
    pub size: u64,
    /// The preferred I/O size.
    pub block_size: u32,
    /// 512-byte blocks used.
    pub blocks: u64,
    /// Last access.
    pub accessed: Timestamp,
    /// Last change of contents.
    pub modified: Timestamp,
    /// Last change of the inode.
    pub changed: Timestamp,
}

/// Bytes of `struct stat`.
pub const STAT_BYTES: usize = 144;
/// Bytes of `struct statx`.
pub const STATX_BYTES: usize = 256;
/// `STATX_BASIC_STATS`: the fields every file system fills.
pub const STATX_BASIC_STATS: u32 = 0x7ff;

/// Linux's `makedev`: the 64-bit device number of (major, minor).
pub fn makedev((major, minor): (u32, u32)) -> u64 {
    let (major, minor) = (u64::from(major), u64::from(minor));
    ((major & 0xfff) << 8) | (minor & 0xff) | ((minor & !0xff) << 12) | ((major & !0xfff) << 32)
}

fn put(bytes: &mut [u8], at: usize, value: u64, width: usize) {
    bytes[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
}

impl FileStatus {
    /// `struct stat`.
    pub fn stat_bytes(&self) -> [u8; STAT_BYTES] {
        let mut bytes = [0u8; STAT_BYTES];
        let fields: [(usize, u64, usize); 16] = [
            (0, makedev(self.device), 8),
            (8, self.inode, 8),
            (16, u64::from(self.links), 8),
            (24, u64::from(self.mode), 4),
            (28, u64::from(self.uid), 4),
            (32, u64::from(self.gid), 4),
            (40, makedev(self.represented_device), 8),
            (48, self.size, 8),
            (56, u64::from(self.block_size), 8),
            (64, self.blocks, 8),
            (72, self.accessed.seconds, 8),
            (80, u64::from(self.accessed.nanoseconds), 8),
            (88, self.modified.seconds, 8),
            (96, u64::from(self.modified.nanoseconds), 8),
            (104, self.changed.seconds, 8),
            (112, u64::from(self.changed.nanoseconds), 8),
        ];
        for (at, value, width) in fields {
            put(&mut bytes, at, value, width);
        }
        bytes
    }

    /// `struct statx` with the basic fields (no birth time).
    pub fn statx_bytes(&self) -> [u8; STATX_BYTES] {
        let mut bytes = [0u8; STATX_BYTES];
        let fields: [(usize, u64, usize); 13] = [
            (0, u64::from(STATX_BASIC_STATS), 4),
            (4, u64::from(self.block_size), 4),
            (16, u64::from(self.links), 4),
            (20, u64::from(self.uid), 4),
            (24, u64::from(self.gid), 4),
            (28, u64::from(self.mode), 2),
            (32, self.inode, 8),
            (40, self.size, 8),
            (48, self.blocks, 8),
            (128, u64::from(self.represented_device.0), 4),
            (132, u64::from(self.represented_device.1), 4),
            (136, u64::from(self.device.0), 4),
            (140, u64::from(self.device.1), 4),
        ];
        for (at, value, width) in fields {
            put(&mut bytes, at, value, width);
        }
        // stx_atime at 64, stx_ctime at 96, stx_mtime at 112 (stx_btime at 80 stays 0).
        for (at, time) in [(64, self.accessed), (96, self.changed), (112, self.modified)] {
            put(&mut bytes, at, time.seconds, 8);
            put(&mut bytes, at + 8, u64::from(time.nanoseconds), 4);
        }
        bytes
    }
}

/// The two record layouts of directory reads: `getdents`' `linux_dirent`
/// (`d_type` in the record's last byte) and `getdents64`'s
/// `linux_dirent64` (`d_type` before the name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirentFormat {
    /// `struct linux_dirent`: ino, off, reclen, name, NUL, padding, type.
    Dirent,
    /// `struct linux_dirent64`: ino, off, reclen, type, name, NUL, padding.
    Dirent64,
}

impl DirentFormat {
    /// Bytes one record for a name of `name_length` bytes takes (padded to 8).
    pub fn record_length(self, name_length: usize) -> usize {
        match self {
            DirentFormat::Dirent => (18 + name_length + 2).next_multiple_of(8),
            DirentFormat::Dirent64 => (19 + name_length + 1).next_multiple_of(8),
        }
    }

    /// Writes a record at the start of `out`: `inode`, the offset of the
    /// next entry, the `DT_*` kind and `name`. `None` (nothing written)
    /// when `out` is too short.
    pub fn write(self, out: &mut [u8], inode: u64, next_offset: u64, kind: u8, name: &[u8]) -> Option<usize> {
        let length = self.record_length(name.len());
        let record = out.get_mut(..length)?;
        // The NUL and the padding after the name (the rest is written below).
        let name_end = match self {
            DirentFormat::Dirent => 18 + name.len(),
            DirentFormat::Dirent64 => 19 + name.len(),
        };
        record[name_end..].fill(0);
        record[0..8].copy_from_slice(&inode.to_le_bytes());
        record[8..16].copy_from_slice(&next_offset.to_le_bytes());
        record[16..18].copy_from_slice(&u16::try_from(length).ok()?.to_le_bytes());
        match self {
            DirentFormat::Dirent => {
                record[18..18 + name.len()].copy_from_slice(name);
                record[length - 1] = kind;
            }
            DirentFormat::Dirent64 => {
                record[18] = kind;
                record[19..19 + name.len()].copy_from_slice(name);
            }
        }
        Some(length)
    }

    /// [`write`](Self::write) at the end of `out`, growing it by the
    /// record (no zero-fill first: a directory read appends hundreds of
    /// records). `None` (nothing appended) when memory runs out.
    pub fn append(self, out: &mut alloc::vec::Vec<u8>, inode: u64, next_offset: u64, kind: u8, name: &[u8]) -> Option<usize> {
        let length = self.record_length(name.len());
        let record_length = u16::try_from(length).ok()?;
        // Room for the record and for padding written a word at a time.
        out.try_reserve(length + 16).ok()?;
        let start = out.len();
        out.extend_from_slice(&inode.to_le_bytes());
        out.extend_from_slice(&next_offset.to_le_bytes());
        out.extend_from_slice(&record_length.to_le_bytes());
        if self == DirentFormat::Dirent64 {
            out.push(kind);
        }
        out.extend_from_slice(name);
        // The NUL and the padding, between 1 and 9 bytes: written as 8 or
        // 16 zero bytes, then cut to the record (a fixed-size copy is a
        // few stores; one of variable size a byte loop).
        let padding = length - (out.len() - start);
        if padding <= 8 {
            out.extend_from_slice(&[0u8; 8]);
        } else {
            out.extend_from_slice(&[0u8; 16]);
        }
        out.truncate(start + length);
        if self == DirentFormat::Dirent {
            out[start + length - 1] = kind;
        }
        Some(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(bytes: &[u8], at: usize, width: usize) -> u64 {
        let mut value = [0u8; 8];
        value[..width].copy_from_slice(&bytes[at..at + width]);
        u64::from_le_bytes(value)
    }

    fn sample() -> FileStatus {
        FileStatus {
            device: (0, 1),
            inode: 77,
            links: 2,
            mode: 0o100644,
            uid: 1000,
            gid: 100,
            represented_device: (4, 65),
            size: 12345,
            block_size: 4096,
            blocks: 32,
            accessed: Timestamp { seconds: 1, nanoseconds: 2 },
            modified: Timestamp { seconds: 3, nanoseconds: 4 },
            changed: Timestamp { seconds: 5, nanoseconds: 6 },
        }
    }

    #[test]
    fn stat_fields_sit_where_the_uapi_header_puts_them() {
        // asm/stat.h (x86_64): st_dev 0, st_ino 8, st_nlink 16, st_mode 24,
        // st_uid 28, st_gid 32, st_rdev 40, st_size 48, st_blksize 56,
        // st_blocks 64, st_atime 72 (+80 ns), st_mtime 88, st_ctime 104.
        let bytes = sample().stat_bytes();
        assert_eq!(word(&bytes, 0, 8), 1);
        assert_eq!(word(&bytes, 8, 8), 77);
        assert_eq!(word(&bytes, 16, 8), 2);
        assert_eq!(word(&bytes, 24, 4), 0o100644);
        assert_eq!((word(&bytes, 28, 4), word(&bytes, 32, 4)), (1000, 100));
        assert_eq!(word(&bytes, 40, 8), 0x441, "makedev(4, 65)");
        assert_eq!(word(&bytes, 48, 8), 12345);
        assert_eq!((word(&bytes, 56, 8), word(&bytes, 64, 8)), (4096, 32));
        assert_eq!((word(&bytes, 72, 8), word(&bytes, 80, 8)), (1, 2));
        assert_eq!((word(&bytes, 88, 8), word(&bytes, 96, 8)), (3, 4));
        assert_eq!((word(&bytes, 104, 8), word(&bytes, 112, 8)), (5, 6));
    }

    #[test]
    fn statx_fields_sit_where_the_uapi_header_puts_them() {
        // linux/stat.h: stx_mask 0, stx_blksize 4, stx_nlink 16, stx_uid 20,
        // stx_gid 24, stx_mode 28, stx_ino 32, stx_size 40, stx_blocks 48,
        // stx_atime 64, stx_btime 80, stx_ctime 96, stx_mtime 112,
        // stx_rdev_major 128, stx_rdev_minor 132, stx_dev_major 136, stx_dev_minor 140.
        let bytes = sample().statx_bytes();
        assert_eq!(word(&bytes, 0, 4), 0x7ff);
        assert_eq!(word(&bytes, 4, 4), 4096);
        assert_eq!(word(&bytes, 16, 4), 2);
        assert_eq!(word(&bytes, 28, 2), 0o100644);
        assert_eq!(word(&bytes, 32, 8), 77);
        assert_eq!((word(&bytes, 64, 8), word(&bytes, 72, 4)), (1, 2));
        assert_eq!(word(&bytes, 80, 8), 0, "no birth time");
        assert_eq!((word(&bytes, 96, 8), word(&bytes, 112, 8)), (5, 3));
        assert_eq!((word(&bytes, 128, 4), word(&bytes, 132, 4)), (4, 65));
        assert_eq!((word(&bytes, 136, 4), word(&bytes, 140, 4)), (0, 1));
    }

    #[test]
    fn makedev_matches_glibc() {
        assert_eq!(makedev((0, 0)), 0);
        assert_eq!(makedev((8, 1)), 0x801);
        assert_eq!(makedev((0x1234, 0x56789)), 0x0000_1000_5672_3489);
    }

    #[test]
    fn dirent_records_are_aligned_and_refused_when_they_do_not_fit() {
        let dirent64 = DirentFormat::Dirent64;
        assert_eq!(dirent64.record_length(1), 24);
        assert_eq!(dirent64.record_length(4), 24);
        assert_eq!(dirent64.record_length(5), 32);
        let mut out = [0xffu8; 32];
        assert_eq!(dirent64.write(&mut out, 9, 1, 4, b"abcde"), Some(32));
        assert_eq!(word(&out, 0, 8), 9);
        assert_eq!(word(&out, 8, 8), 1);
        assert_eq!(word(&out, 16, 2), 32);
        assert_eq!(out[18], 4);
        assert_eq!(&out[19..25], b"abcde\0");
        assert_eq!(dirent64.write(&mut out[..31], 9, 1, 4, b"abcde"), None);
    }

    #[test]
    fn an_appended_record_is_the_written_one() {
        for format in [DirentFormat::Dirent, DirentFormat::Dirent64] {
            for name in [&b"a"[..], b"abcd", b"abcde", b"file-0001", &[b'x'; 255]] {
                let mut written = [0xffu8; 288];
                let length = format.write(&mut written, 77, 5, 8, name).unwrap();
                let mut appended = alloc::vec![0xee; 3];
                assert_eq!(format.append(&mut appended, 77, 5, 8, name), Some(length));
                assert_eq!(&appended[3..], &written[..length], "{format:?} {}", name.len());
            }
        }
    }

    #[test]
    fn old_dirent_records_keep_the_type_in_their_last_byte() {
        // linux_dirent: d_ino 0, d_off 8, d_reclen 16, d_name 18, d_type at reclen - 1.
        let dirent = DirentFormat::Dirent;
        assert_eq!(dirent.record_length(4), 24);
        assert_eq!(dirent.record_length(5), 32);
        let mut out = [0xffu8; 24];
        assert_eq!(dirent.write(&mut out, 9, 1, 4, b"abcd"), Some(24));
        assert_eq!(word(&out, 16, 2), 24);
        assert_eq!(&out[18..23], b"abcd\0");
        assert_eq!(out[23], 4);
    }
}
