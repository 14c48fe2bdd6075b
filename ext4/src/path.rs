//! Resolving absolute paths one component at a time, without following
//! symbolic links: an intermediate link is reported back with where the
//! rest of the path starts, so the caller (the VFS, which knows the
//! process's root and the link-count limit) decides how to continue.
//!
//! "." is skipped and ".." is looked up like any name (every directory
//! holds it; the root's points to itself). **Must never** read more than
//! one directory per path component.

use crate::block_device::BlockDevice;
use crate::directory::MAX_NAME_LENGTH;
use crate::error::Error;
use crate::filesystem::Ext4;
use crate::inode::{FileType, InodeNumber};

/// Where a path led.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Resolution {
    /// The inode the whole path names (a final symbolic link is not followed).
    Found(InodeNumber),
    /// A symbolic link in the middle of the path.
    Symlink {
        /// The link.
        link: InodeNumber,
        /// Byte offset in the path where the components after the link start.
        rest: usize,
    },
}

impl<D: BlockDevice> Ext4<D> {
    /// Resolves the absolute `path` from the root.
    pub fn resolve(&self, path: &[u8]) -> Result<Resolution, Error> {
        if path.first() != Some(&b'/') {
            return Err(Error::NotAbsolute);
        }
        let mut current = self.root();
        let mut offset = 0;
        for component in path.split(|&byte| byte == b'/') {
            offset += component.len() + 1;
            if component.is_empty() || component == b"." {
                continue;
            }
            if component.len() > MAX_NAME_LENGTH {
                return Err(Error::NameTooLong);
            }
            let directory = self.inode(current)?;
            match directory.file_type {
                FileType::Directory => {}
                FileType::Symlink => {
                    let rest = (offset - component.len() - 1).min(path.len());
                    return Ok(Resolution::Symlink { link: current, rest });
                }
                _ => return Err(Error::NotADirectory),
            }
            current = self.lookup(&directory, component)?.ok_or(Error::NotFound)?;
        }
        Ok(Resolution::Found(current))
    }
}
