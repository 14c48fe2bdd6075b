//! The newc ("070701") cpio format that Linux initramfs archives use.
//!
//! **Provides** [`entries`]: an iterator over an archive's entries, each a
//! path, a mode (file type and permission bits) and its data, borrowed
//! from the archive; and, with the `writer` feature, `Writer`, which
//! packs entries into an archive.
//!
//! Format (per entry): a 110-byte header of the magic `070701` and
//! thirteen 8-digit hexadecimal fields (ino, mode, uid, gid, nlink, mtime,
//! filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check),
//! the NUL-terminated name padded to a multiple of 4 bytes (counting the
//! header), then the data padded the same way. The entry named
//! `TRAILER!!!` ends the archive.
//!
//! **Must never** panic or read out of bounds on any input: every
//! malformed archive is a [`CpioError`].
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(test, feature = "writer"))]
extern crate alloc;
#[cfg(test)]
extern crate std;

mod parse;
#[cfg(any(test, feature = "writer"))]
mod writer;

pub use parse::{entries, Entries, Entry};
#[cfg(any(test, feature = "writer"))]
pub use writer::Writer;

/// File-type bits of a mode (`S_IFMT`).
pub const TYPE_MASK: u32 = 0o170_000;
/// A regular file.
pub const REGULAR: u32 = 0o100_000;
/// A directory.
pub const DIRECTORY: u32 = 0o040_000;
/// A symbolic link (the data is the target).
pub const SYMLINK: u32 = 0o120_000;
/// A character device.
pub const CHAR_DEVICE: u32 = 0o020_000;

/// Why an archive was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CpioError {
    /// An entry does not start with `070701` at this offset.
    BadMagic(usize),
    /// A header field at this offset is not 8 hexadecimal digits.
    BadNumber(usize),
    /// The archive ends inside the entry that starts at this offset.
    Truncated(usize),
    /// The name of the entry at this offset is empty, lacks its NUL, or is
    /// not UTF-8.
    BadName(usize),
    /// The archive ends without `TRAILER!!!`.
    NoTrailer,
}

#[cfg(test)]
mod tests;
