//! Reading a newc archive: header fields are checked, every length is
//! checked against what is left, and iteration ends at the trailer.

use crate::CpioError;

const MAGIC: &[u8; 6] = b"070701";
const HEADER: usize = 110;
const TRAILER: &str = "TRAILER!!!";

/// One archive entry, borrowed from the archive.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Entry<'a> {
    /// The path as stored (usually relative, without a leading `/`).
    pub name: &'a str,
    /// File type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification time (seconds since the epoch).
    pub mtime: u32,
    /// Device numbers for device nodes (`rdevmajor`, `rdevminor`).
    pub rdev: (u32, u32),
    /// The contents (a symbolic link's target).
    pub data: &'a [u8],
}

/// The entries of `archive`, in order; an error ends the iteration.
pub fn entries(archive: &[u8]) -> Entries<'_> {
    Entries { archive, offset: 0, done: false }
}

/// Iterator over an archive's entries (see [`entries`]).
pub struct Entries<'a> {
    archive: &'a [u8],
    offset: usize,
    done: bool,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, CpioError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let parsed = self.parse_one();
        match parsed {
            Ok(Some(entry)) => Some(Ok(entry)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

impl<'a> Entries<'a> {
    /// The entry at the current offset, or `None` at the trailer.
    fn parse_one(&mut self) -> Result<Option<Entry<'a>>, CpioError> {
        let start = self.offset;
        let rest = self.archive.get(start..).unwrap_or_default();
        if rest.is_empty() {
            return Err(CpioError::NoTrailer);
        }
        let header = rest.get(..HEADER).ok_or(CpioError::Truncated(start))?;
        if &header[..6] != MAGIC {
            return Err(CpioError::BadMagic(start));
        }
        let field = |index: usize| -> Result<u32, CpioError> {
            let at = 6 + index * 8;
            hex(&header[at..at + 8]).ok_or(CpioError::BadNumber(start + at))
        };
        let mode = field(1)?;
        let (uid, gid, mtime) = (field(2)?, field(3)?, field(5)?);
        let file_size = field(6)? as usize;
        let rdev = (field(9)?, field(10)?);
        let name_size = field(11)? as usize;
        let name_end = HEADER.checked_add(name_size).ok_or(CpioError::Truncated(start))?;
        let name_bytes = rest.get(HEADER..name_end).ok_or(CpioError::Truncated(start))?;
        let name = match name_bytes.split_last() {
            Some((0, name)) if !name.is_empty() => core::str::from_utf8(name).map_err(|_| CpioError::BadName(start))?,
            _ => return Err(CpioError::BadName(start)),
        };
        let data_start = align4(name_end);
        let data_end = data_start.checked_add(file_size).ok_or(CpioError::Truncated(start))?;
        let data = rest.get(data_start..data_end).ok_or(CpioError::Truncated(start))?;
        self.offset = start + align4(data_end);
        if name == TRAILER {
            return Ok(None);
        }
        Ok(Some(Entry { name, mode, uid, gid, mtime, rdev, data }))
    }
}

fn align4(value: usize) -> usize {
    value.next_multiple_of(4)
}

/// Eight hexadecimal digits.
fn hex(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &digit| {
        let nibble = (digit as char).to_digit(16)?;
        Some(value << 4 | nibble)
    })
}
