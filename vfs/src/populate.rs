//! Filling the tree from a newc initramfs: directories are made as paths
//! need them, files borrow the archive's bytes, later entries replace
//! earlier ones (as Linux's unpacker does).

use crate::inode::{FileKind, InodeNumber, Timestamp};
use crate::{Errno, Tmpfs};

/// Why an archive could not be unpacked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum UnpackError {
    /// The archive is malformed.
    Archive(initramfs::CpioError),
    /// The tree refused an entry (its index in the archive and why).
    Entry(usize, Errno),
}

impl Tmpfs {
    /// Unpacks `archive` into the tree; returns how many entries it made.
    pub fn unpack(&mut self, archive: &'static [u8], now: Timestamp) -> Result<usize, UnpackError> {
        let mut made = 0;
        for (index, entry) in initramfs::entries(archive).enumerate() {
            let entry = entry.map_err(UnpackError::Archive)?;
            let path = entry.name.trim_start_matches("./").trim_start_matches('/');
            if path.is_empty() || path == "." {
                continue;
            }
            self.unpack_one(path.as_bytes(), entry, now).map_err(|errno| UnpackError::Entry(index, errno))?;
            made += 1;
        }
        Ok(made)
    }

    fn unpack_one(&mut self, path: &[u8], entry: initramfs::Entry<'static>, now: Timestamp) -> Result<(), Errno> {
        let (directory, name) = self.make_parents(path, now)?;
        let permissions = entry.mode & 0o7777;
        let kind = entry.mode & initramfs::TYPE_MASK;
        if let Some(existing) = self.child(directory, name) {
            if kind == initramfs::DIRECTORY && self.kind(existing)? == FileKind::Directory {
                return self.set_permissions(existing, permissions, now);
            }
            match self.kind(existing)? {
                FileKind::Directory => self.rmdir(directory, name, now)?,
                _ => self.unlink(directory, name, now)?,
            }
        }
        match kind {
            initramfs::DIRECTORY => self.create(directory, name, FileKind::Directory, permissions, now).map(drop),
            initramfs::REGULAR => self.create_borrowed(directory, name, permissions, entry.data, now).map(drop),
            initramfs::SYMLINK => self.symlink(directory, name, entry.data, now).map(drop),
            initramfs::CHAR_DEVICE => {
                self.create(directory, name, FileKind::CharDevice(entry.rdev.0, entry.rdev.1), permissions, now).map(drop)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// The directory that holds `path`'s last component, making missing
    /// directories (mode 0755) on the way, and that component.
    fn make_parents<'p>(&mut self, path: &'p [u8], now: Timestamp) -> Result<(InodeNumber, &'p [u8]), Errno> {
        let mut directory = self.root();
        let mut components = path.split(|byte| *byte == b'/').filter(|part| !part.is_empty()).peekable();
        while let Some(component) = components.next() {
            if components.peek().is_none() {
                return Ok((directory, component));
            }
            directory = match self.child(directory, component) {
                Some(existing) if self.kind(existing)? == FileKind::Directory => existing,
                Some(_) => return Err(Errno::ENOTDIR),
                None => self.create(directory, component, FileKind::Directory, 0o755, now)?,
            };
        }
        Err(Errno::EINVAL)
    }
}
