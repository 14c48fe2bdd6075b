//! A directory's blocks as a writer sees them: each block read through the
//! transaction and checked by its role (leaf with its checksum tail, htree
//! root or node with theirs), its records listed, and a changed leaf
//! sealed again with a fresh tail.
//!
//! htree directories: adding a name would have to go into the leaf its
//! hash selects, which needs the legacy, half-MD4 and TEA hashes this crate
//! does not have yet. So before adding a name (or changing "..", which the
//! root's checksum covers), [`Transaction::remove_index`] turns the
//! directory into a linear one, as Linux itself does when it finds an index
//! it cannot use: `INDEX_FL` cleared, and under `metadata_csum` the root
//! and interior nodes rewritten as empty leaves with tails. e2fsck accepts
//! the result; `e2fsck -fD` rebuilds the index. Removing a name keeps the
//! index valid and leaves it alone. **Must never** return a block that
//! failed its checks, or a record that runs past its region.

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::bytes::{byte, le16, le32, put, put_le16, put_le32};
use crate::directory::{for_each_entry, leaf_checksum, leaf_records, record_length, TAIL_FILE_TYPE, TAIL_SIZE};
use crate::error::{Error, Structure, Unsupported};
use crate::extent_tree::Mapping;
use crate::extent_tree_io::LoadedTree;
use crate::htree::{block_role, check_index, BlockRole};
use crate::inode::{flags, FileType, Inode};
use crate::superblock::Checksums;
use crate::transaction::Transaction;

/// One record of a directory block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Record {
    /// Byte offset in the block.
    pub(crate) offset: usize,
    /// `rec_len`, in bytes.
    pub(crate) length: usize,
    /// The inode (0: unused space).
    pub(crate) inode: u32,
    /// `name_len`.
    pub(crate) name_length: usize,
}

/// A checked directory block.
pub(crate) struct DirectoryBlock {
    /// Where it is on disk.
    pub(crate) physical: u64,
    /// Its bytes.
    pub(crate) bytes: Vec<u8>,
    /// Its role in the directory.
    pub(crate) role: BlockRole,
    /// The part holding records: all of it, or all but the tail.
    pub(crate) records_end: usize,
}

impl DirectoryBlock {
    /// The records, in order (none for an index node).
    pub(crate) fn records(&self) -> Vec<Record> {
        let mut records = Vec::new();
        let mut offset = 0;
        let end = if self.role == BlockRole::IndexNode { 0 } else { self.records_end };
        while offset < end {
            let record = self.bytes.get(offset..end).unwrap_or_default();
            let length = record_length(le16(record, 4), self.bytes.len() as u32);
            if length == 0 {
                break; // cannot happen after the checks; never loop forever
            }
            let name_length = usize::from(byte(record, 6));
            records.push(Record { offset, length, inode: le32(record, 0), name_length });
            offset += length;
        }
        records
    }

    /// The name of `record`.
    pub(crate) fn name(&self, record: &Record) -> &[u8] {
        let start = record.offset + crate::directory::HEADER;
        self.bytes.get(start..start + record.name_length).unwrap_or_default()
    }
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// The directory's extent tree and block count, refusing non-directories
    /// and block-mapped directories.
    pub(crate) fn directory_tree(&mut self, directory: &Inode) -> Result<(LoadedTree, u32), Error> {
        if directory.file_type != FileType::Directory {
            return Err(Error::NotADirectory);
        }
        if !directory.uses_extents() {
            return Err(Error::Unsupported(Unsupported::BlockMapWrite));
        }
        let block_size = self.block_size() as u64;
        let blocks = directory.size / block_size;
        if !directory.size.is_multiple_of(block_size) || blocks > self.superblock.blocks_count {
            return Err(Error::invalid(Structure::Inode(directory.number.0), "directory size not whole blocks"));
        }
        Ok((self.load_extents(directory)?, blocks as u32))
    }

    /// Logical block `logical` of `directory`, checked; `None` for a hole.
    pub(crate) fn directory_block(
        &mut self,
        directory: &Inode,
        tree: &LoadedTree,
        logical: u32,
    ) -> Result<Option<DirectoryBlock>, Error> {
        let Mapping::Written { physical } = tree.list.find(logical) else { return Ok(None) };
        let structure = Structure::DirectoryBlock { inode: directory.number.0, logical_block: logical };
        let needs_check = self.needs_check(physical);
        let bytes = self.read_block(physical, structure)?;
        let superblock = self.superblock;
        let seed = directory.checksum_seed;
        let role = block_role(&bytes, superblock, directory.is_htree(), logical);
        if !needs_check {
            // Checked already (or written here): only where the records end.
            let records_end = match (role, superblock.checksums) {
                (BlockRole::Leaf, Checksums::Crc32c { .. }) => bytes.len().saturating_sub(TAIL_SIZE),
                _ => bytes.len(),
            };
            return Ok(Some(DirectoryBlock { physical, bytes, role, records_end }));
        }
        check_index(&bytes, role, superblock, seed, structure)?;
        let records_end = match role {
            BlockRole::Leaf => leaf_records(&bytes, superblock, seed, structure)?.len(),
            BlockRole::IndexRoot | BlockRole::IndexNode => bytes.len(),
        };
        if role != BlockRole::IndexNode {
            let records = bytes.get(..records_end).unwrap_or_default();
            // Checks every record (Linux `__ext4_check_dir_entry`) and name.
            let _all_visited =
                for_each_entry(records, superblock, structure, &mut |_| core::ops::ControlFlow::Continue(()))?;
        }
        self.mark_checked(physical);
        Ok(Some(DirectoryBlock { physical, bytes, role, records_end }))
    }

    /// Records a changed leaf block of `directory`, its tail resealed.
    pub(crate) fn write_directory_block(
        &mut self,
        directory: &Inode,
        logical: u32,
        mut block: DirectoryBlock,
    ) -> Result<(), Error> {
        self.seal_leaf(&mut block.bytes, directory.checksum_seed);
        let structure = Structure::DirectoryBlock { inode: directory.number.0, logical_block: logical };
        self.write_block(block.physical, block.bytes, BlockKind::Metadata, structure)
    }

    /// Writes the checksum tail of a leaf block under `metadata_csum`.
    pub(crate) fn seal_leaf(&self, bytes: &mut [u8], seed: u32) {
        let Checksums::Crc32c { .. } = self.superblock.checksums else { return };
        let Some(split) = bytes.len().checked_sub(TAIL_SIZE) else { return };
        put_le32(bytes, split, 0);
        put_le16(bytes, split + 4, TAIL_SIZE as u16);
        put(bytes, split + 6, &[0, TAIL_FILE_TYPE]);
        let checksum = leaf_checksum(bytes.get(..split).unwrap_or_default(), seed);
        put_le32(bytes, split + 8, checksum);
    }

    /// Bytes of a leaf block available to records.
    pub(crate) fn leaf_space(&self) -> usize {
        match self.superblock.checksums {
            Checksums::Crc32c { .. } => self.block_size() - TAIL_SIZE,
            _ => self.block_size(),
        }
    }

    /// Turns an htree `directory` into a linear one (see the module
    /// comment); the caller writes the inode.
    pub(crate) fn remove_index(&mut self, directory: &mut Inode) -> Result<(), Error> {
        if !directory.is_htree() {
            return Ok(());
        }
        let (tree, blocks) = self.directory_tree(directory)?;
        if matches!(self.superblock.checksums, Checksums::Crc32c { .. }) {
            for logical in 0..blocks {
                let Some(mut block) = self.directory_block(directory, &tree, logical)? else { continue };
                let last_record = match block.role {
                    BlockRole::Leaf => continue,
                    BlockRole::IndexRoot => 12,
                    BlockRole::IndexNode => 0,
                };
                let length = self.leaf_space() - last_record;
                put_record_length(&mut block.bytes, last_record, length);
                block.role = BlockRole::Leaf;
                self.write_directory_block(directory, logical, block)?;
            }
        }
        directory.flags &= !flags::INDEX;
        Ok(())
    }
}

/// Stores `length` as the `rec_len` of the record at `offset` (Linux
/// `ext4_rec_len_to_disk`: 64 KiB blocks keep bits 16 and 17 in the low two).
pub(crate) fn put_record_length(bytes: &mut [u8], offset: usize, length: usize) {
    let stored = if length < 1 << 16 {
        length as u16
    } else if length == 1 << 16 {
        u16::MAX
    } else {
        ((length & 0xFFFC) | ((length >> 16) & 3)) as u16
    };
    put_le16(bytes, offset + 4, stored);
}

/// The dirent type code of `file_type` (0 without the `filetype` feature).
pub(crate) fn type_code(file_type: FileType, has_file_types: bool) -> u8 {
    if !has_file_types {
        return 0;
    }
    match file_type {
        FileType::Regular => 1,
        FileType::Directory => 2,
        FileType::CharacterDevice => 3,
        FileType::BlockDevice => 4,
        FileType::Fifo => 5,
        FileType::Socket => 6,
        FileType::Symlink => 7,
    }
}
