//! Reading directories: every block of the directory in order, each
//! checked by its role (leaf, htree root, htree node) and checksum, and the
//! used entries handed to a visitor; `read_dir` and `lookup` are visitors.
//!
//! Holes and unwritten runs in a directory are skipped, as Linux's
//! `ext4_readdir` does. The work is bounded by the blocks actually mapped,
//! and a directory may not claim more bytes than the file system has.
//! **Must never** hand a visitor an entry from a block that failed its
//! checks.

use alloc::vec;
use alloc::vec::Vec;
use core::ops::ControlFlow;

use crate::block_device::BlockDevice;
use crate::directory::{for_each_entry, leaf_records, Entry, MAX_NAME_LENGTH, TAIL_SIZE};
use crate::error::{Error, Structure};
use crate::filesystem::Ext4;
use crate::htree::{block_role, check_index, BlockRole};
use crate::inode::{FileType, Inode, InodeNumber};
use crate::superblock::Checksums;
use crate::mapping::Run;

/// A directory entry, owned.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DirectoryEntry {
    /// The inode the name refers to.
    pub inode: InodeNumber,
    /// The type recorded in the entry (`None` if unknown or not recorded).
    pub file_type: Option<FileType>,
    /// The name.
    pub name: Vec<u8>,
}

impl<D: BlockDevice> Ext4<D> {
    /// Calls `visit` with each entry of `directory` (including "." and
    /// ".."), in on-disk order, until it breaks.
    pub fn visit_directory(
        &self,
        directory: &Inode,
        visit: &mut dyn FnMut(Entry<'_>) -> ControlFlow<()>,
    ) -> Result<(), Error> {
        if directory.file_type != FileType::Directory {
            return Err(Error::NotADirectory);
        }
        let block_size = u64::from(self.superblock.block_size);
        let largest = self.superblock.blocks_count.saturating_mul(block_size);
        if directory.size > largest {
            return Err(Error::invalid(Structure::Inode(directory.number.0), "directory larger than the file system"));
        }
        let blocks = directory.size.div_ceil(block_size);
        let mut block = vec![0u8; block_size as usize];
        let mut logical = 0u64;
        while logical < blocks {
            let run = self.map_block(directory, logical)?;
            let Run::Data { physical, length } = run else {
                logical = logical.saturating_add(run.length());
                continue;
            };
            for step in 0..length.min(blocks - logical) {
                let structure = Structure::DirectoryBlock { inode: directory.number.0, logical_block: logical as u32 };
                self.disk.read_blocks(physical + step, &mut block, structure)?;
                // This file system's own journaled image needs no checksum check.
                let sealed = self.disk.is_journaled(physical + step);
                if self.visit_block(directory, &block, logical as u32, sealed, visit)?.is_break() {
                    return Ok(());
                }
                logical += 1;
            }
        }
        Ok(())
    }

    fn visit_block(
        &self,
        directory: &Inode,
        block: &[u8],
        logical_block: u32,
        sealed: bool,
        visit: &mut dyn FnMut(Entry<'_>) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, Error> {
        let structure = Structure::DirectoryBlock { inode: directory.number.0, logical_block };
        let seed = directory.checksum_seed;
        let role = block_role(block, &self.superblock, directory.is_htree(), logical_block);
        if !sealed {
            check_index(block, role, &self.superblock, seed, structure)?;
        }
        let records = match role {
            BlockRole::IndexNode => return Ok(ControlFlow::Continue(())),
            BlockRole::IndexRoot => block,
            BlockRole::Leaf if !sealed => leaf_records(block, &self.superblock, seed, structure)?,
            BlockRole::Leaf => match self.superblock.checksums {
                Checksums::Crc32c { .. } => block.get(..block.len().saturating_sub(TAIL_SIZE)).unwrap_or_default(),
                _ => block,
            },
        };
        for_each_entry(records, &self.superblock, structure, visit)
    }

    /// All entries of `directory`, including "." and "..".
    pub fn read_dir(&self, directory: &Inode) -> Result<Vec<DirectoryEntry>, Error> {
        let mut entries = Vec::new();
        self.visit_directory(directory, &mut |entry| {
            let name = entry.name.to_vec();
            entries.push(DirectoryEntry { inode: entry.inode, file_type: entry.file_type, name });
            ControlFlow::Continue(())
        })?;
        Ok(entries)
    }

    /// The inode `name` refers to in `directory`, if any (a linear scan).
    pub fn lookup(&self, directory: &Inode, name: &[u8]) -> Result<Option<InodeNumber>, Error> {
        if name.len() > MAX_NAME_LENGTH {
            return Err(Error::NameTooLong);
        }
        let mut found = None;
        self.visit_directory(directory, &mut |entry| {
            if entry.name == name {
                found = Some(entry.inode);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })?;
        Ok(found)
    }
}
