//! Changing a directory's entries inside a transaction: finding a name,
//! adding one (into the first leaf with room, splitting a record's slack,
//! else in a new block appended to the directory), removing one (its
//! space merged into the previous record's `rec_len`, or marked unused
//! when it is first in its block), pointing ".." elsewhere, and the first
//! block of a new directory.
//!
//! Each change updates the directory's modification and change times.
//! **Must never** let a record run past its block's record area or the
//! checksum tail, or add a name that is already there.

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::bytes::{put, put_le32};
use crate::directory::{needed_record_length, MAX_NAME_LENGTH};
use crate::directory_blocks::{put_record_length, type_code, Record};
use crate::error::{Error, Structure};
use crate::htree::BlockRole;
use crate::inode::{FileType, Inode, InodeNumber};
use crate::timestamp::Timestamp;
use crate::transaction::Transaction;

/// Where a name was found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Found {
    /// The inode it names.
    pub(crate) inode: InodeNumber,
    logical: u32,
    record: Record,
    previous: Option<Record>,
}

/// Checks a name for a new entry: 1 to 255 bytes, no '/' or NUL, not "." or "..".
pub(crate) fn check_name(name: &[u8]) -> Result<(), Error> {
    if name.len() > MAX_NAME_LENGTH {
        return Err(Error::NameTooLong);
    }
    if name.is_empty() || name == b"." || name == b".." || name.iter().any(|&b| b == b'/' || b == 0) {
        return Err(Error::InvalidArgument("name empty, '.', '..', or holding '/' or NUL"));
    }
    Ok(())
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// Where `name` is in `directory`, if it is there.
    pub(crate) fn find_entry(&mut self, directory: &Inode, name: &[u8]) -> Result<Option<Found>, Error> {
        let (tree, blocks) = self.directory_tree(directory)?;
        for logical in 0..blocks {
            let Some(block) = self.directory_block(directory, &tree, logical)? else { continue };
            let mut previous = None;
            for record in block.records() {
                if record.inode != 0 && block.name(&record) == name {
                    return Ok(Some(Found { inode: InodeNumber(record.inode), logical, record, previous }));
                }
                previous = Some(record);
            }
        }
        Ok(None)
    }

    /// Whether `directory` holds nothing but "." and "..".
    pub(crate) fn is_empty_directory(&mut self, directory: &Inode) -> Result<bool, Error> {
        let (tree, blocks) = self.directory_tree(directory)?;
        for logical in 0..blocks {
            let Some(block) = self.directory_block(directory, &tree, logical)? else { continue };
            let names = block.records().into_iter().filter(|record| record.inode != 0);
            if names.map(|record| block.name(&record).to_vec()).any(|name| name != b"." && name != b"..") {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Adds `name` → `target` (of `file_type`) to directory `number`.
    pub(crate) fn add_entry(
        &mut self,
        number: InodeNumber,
        name: &[u8],
        target: InodeNumber,
        file_type: FileType,
        now: Timestamp,
    ) -> Result<(), Error> {
        check_name(name)?;
        let mut directory = self.read_inode(number)?;
        if self.find_entry(&directory, name)?.is_some() {
            return Err(Error::Exists);
        }
        self.remove_index(&mut directory)?;
        let code = type_code(file_type, self.superblock.has_file_types());
        let needed = needed_record_length(name.len());
        let (mut tree, blocks) = self.directory_tree(&directory)?;
        let mut placed = false;
        for logical in 0..blocks {
            let Some(mut block) = self.directory_block(&directory, &tree, logical)? else { continue };
            let slot = block.records().into_iter().find_map(|record| room_in(&record, needed));
            if let Some((record, used)) = slot {
                if used > 0 {
                    put_record_length(&mut block.bytes, record.offset, used);
                }
                let length = record.length - used;
                write_record(&mut block.bytes, record.offset + used, length, (target, code, name));
                self.write_directory_block(&directory, logical, block)?;
                placed = true;
                break;
            }
        }
        if !placed {
            let mut bytes = alloc::vec![0u8; self.block_size()];
            write_record(&mut bytes, 0, self.leaf_space(), (target, code, name));
            self.seal_leaf(&mut bytes, directory.checksum_seed);
            self.append_block(&directory, &mut tree, blocks, bytes, BlockKind::Metadata)?;
            directory.size += self.block_size() as u64;
            self.store_extents(&mut directory, tree)?;
        }
        directory.modification_time = now;
        directory.change_time = now;
        self.write_inode(&directory)
    }

    /// Removes `name` from directory `number`; returns the inode it named.
    pub(crate) fn remove_entry(
        &mut self,
        number: InodeNumber,
        name: &[u8],
        now: Timestamp,
    ) -> Result<InodeNumber, Error> {
        let mut directory = self.read_inode(number)?;
        if name == b"." || name == b".." {
            return Err(Error::InvalidArgument("cannot remove '.' or '..'"));
        }
        let found = self.find_entry(&directory, name)?.ok_or(Error::NotFound)?;
        let (tree, _) = self.directory_tree(&directory)?;
        let structure = Structure::DirectoryBlock { inode: number.0, logical_block: found.logical };
        let mut block =
            self.directory_block(&directory, &tree, found.logical)?.ok_or(Error::invalid(structure, "hole"))?;
        match found.previous {
            Some(previous) => {
                put_record_length(&mut block.bytes, previous.offset, previous.length + found.record.length)
            }
            None => put_le32(&mut block.bytes, found.record.offset, 0),
        }
        if block.role == BlockRole::Leaf {
            self.write_directory_block(&directory, found.logical, block)?;
        } else {
            return Err(Error::invalid(structure, "a name inside an htree index block"));
        }
        directory.modification_time = now;
        directory.change_time = now;
        self.write_inode(&directory)?;
        Ok(found.inode)
    }

    /// Points directory `number`'s ".." at `parent`.
    pub(crate) fn set_parent_entry(&mut self, number: InodeNumber, parent: InodeNumber) -> Result<(), Error> {
        let mut directory = self.read_inode(number)?;
        if directory.is_htree() {
            self.remove_index(&mut directory)?;
            self.write_inode(&directory)?;
        }
        let (tree, _) = self.directory_tree(&directory)?;
        let structure = Structure::DirectoryBlock { inode: number.0, logical_block: 0 };
        let block = self.directory_block(&directory, &tree, 0)?;
        let mut block = block.ok_or(Error::invalid(structure, "no first block"))?;
        let records = block.records();
        let dot_dot = records.get(1).filter(|record| block.name(record) == b"..");
        let dot_dot = *dot_dot.ok_or(Error::invalid(structure, "'..' is not the second entry"))?;
        put_le32(&mut block.bytes, dot_dot.offset, parent.0);
        self.write_directory_block(&directory, 0, block)
    }

    /// The first block of a new directory `number` in `parent`: "." and "..".
    pub(crate) fn first_directory_block(&self, number: InodeNumber, parent: InodeNumber, seed: u32) -> Vec<u8> {
        let code = type_code(FileType::Directory, self.superblock.has_file_types());
        let mut bytes = alloc::vec![0u8; self.block_size()];
        write_record(&mut bytes, 0, 12, (number, code, b"."));
        write_record(&mut bytes, 12, self.leaf_space() - 12, (parent, code, b".."));
        self.seal_leaf(&mut bytes, seed);
        bytes
    }
}

/// Whether `record` can take a new record of `needed` bytes: `Some` with
/// how many bytes the record keeps (0 when it is unused and given whole).
fn room_in(record: &Record, needed: usize) -> Option<(Record, usize)> {
    if record.inode == 0 {
        return (record.length >= needed).then_some((*record, 0));
    }
    let used = needed_record_length(record.name_length);
    (record.length >= used + needed).then_some((*record, used))
}

/// Writes a record at `offset` of `length` bytes naming `inode`.
fn write_record(bytes: &mut [u8], offset: usize, length: usize, (inode, code, name): (InodeNumber, u8, &[u8])) {
    put_le32(bytes, offset, inode.0);
    put_record_length(bytes, offset, length);
    put(bytes, offset + 6, &[name.len() as u8, code]);
    put(bytes, offset + 8, name);
}
