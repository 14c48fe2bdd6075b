//! Changing a regular file's data inside a transaction: writing bytes at an
//! offset (mapped blocks rewritten in place, holes allocated near the
//! neighbouring extent, unwritten blocks turned written, the rest of a new
//! block zero), truncating (shrinking frees whole blocks past the end and
//! zeroes the kept block's tail; growing leaves a hole), and releasing
//! all of a file's blocks when its inode is freed.
//!
//! Holes between the old end and a later write stay holes; the bytes of
//! the old last block past the old end are zeroed first, so they read as
//! zeros as POSIX requires. **Must never** write data to a block that is
//! not mapped to the file or freshly allocated for it, nor over fixed
//! metadata, and never leave written blocks past `i_size` (e2fsck's rule).

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::error::{Error, Structure, Unsupported};
use crate::extent_tree::{ExtentList, Mapping};
use crate::extent_tree_io::LoadedTree;
use crate::features::read_only_compatible;
use crate::inode::{FileType, Inode, InodeNumber};
use crate::mapping::LOGICAL_BLOCK_LIMIT;
use crate::timestamp::Timestamp;
use crate::transaction::Transaction;

/// Largest size with a 2 GiB limit unless `large_file` is set.
const SMALL_FILE_LIMIT: u64 = (1 << 31) - 1;

impl<D: BlockDevice> Transaction<'_, D> {
    /// Writes `data` at `offset` of regular file `number`; returns its length.
    pub(crate) fn write_file(
        &mut self,
        number: InodeNumber,
        offset: u64,
        data: &[u8],
        now: Timestamp,
    ) -> Result<usize, Error> {
        let mut inode = self.read_inode(number)?;
        self.check_writable_file(&inode)?;
        let end = offset.checked_add(data.len() as u64).ok_or(Error::FileTooLarge)?;
        if end > self.largest_file() {
            return Err(Error::FileTooLarge);
        }
        let mut tree = self.load_extents(&inode)?;
        if offset > inode.size {
            self.zero_tail(&inode, &tree.list, inode.size)?;
        }
        let block_size = self.block_size() as u64;
        let mut position = offset;
        while position < end {
            let logical = (position / block_size) as u32;
            let piece_start = (position - offset) as usize;
            let written = match tree.list.find(logical) {
                Mapping::Written { physical } => {
                    let within = (position % block_size) as usize;
                    let piece = (block_size as usize - within).min((end - position) as usize);
                    let bytes = data.get(piece_start..piece_start + piece).unwrap_or_default();
                    self.write_data(&inode, physical, within, bytes, BlockOrigin::Mapped)?;
                    piece as u64
                }
                Mapping::Unwritten { physical } => {
                    if self.overlaps_fixed_metadata(physical, 1)? {
                        return Err(Error::invalid(Structure::Inode(number.0), "file data over fixed metadata"));
                    }
                    self.fill_new_block(&inode, physical, position, offset, data)?;
                    tree.list.remove(u64::from(logical), u64::from(logical) + 1);
                    tree.list.insert(logical, 1, physical);
                    block_size - position % block_size
                }
                Mapping::Hole { next } => {
                    let last = (end - 1) / block_size + 1;
                    let hole_end = next.map_or(last, |next| u64::from(next).min(last));
                    self.fill_hole(&inode, &mut tree, logical, hole_end, (position, offset), data)?
                }
            };
            position = position.saturating_add(written).min(end);
        }
        self.store_extents(&mut inode, tree)?;
        inode.size = inode.size.max(end);
        self.finish_data_change(&mut inode, now)?;
        Ok(data.len())
    }

    /// Sets regular file `number`'s size to `size`.
    pub(crate) fn truncate_file(&mut self, number: InodeNumber, size: u64, now: Timestamp) -> Result<(), Error> {
        let mut inode = self.read_inode(number)?;
        self.check_writable_file(&inode)?;
        if size > self.largest_file() {
            return Err(Error::FileTooLarge);
        }
        let mut tree = self.load_extents(&inode)?;
        if size < inode.size {
            let first_gone = size.div_ceil(self.block_size() as u64);
            for (first, count) in tree.list.remove(first_gone, LOGICAL_BLOCK_LIMIT) {
                self.free_blocks(first, count)?;
            }
            self.zero_tail(&inode, &tree.list, size)?;
        } else if size > inode.size {
            self.zero_tail(&inode, &tree.list, inode.size)?;
        }
        self.store_extents(&mut inode, tree)?;
        inode.size = size;
        self.finish_data_change(&mut inode, now)
    }

    /// Frees every block of `inode` (data and extent nodes) and empties its
    /// tree; a fast symlink or special file owns none.
    pub(crate) fn release_blocks(&mut self, inode: &mut Inode) -> Result<(), Error> {
        if !inode.uses_extents() {
            if inode.sectors != 0 && inode.file_acl == 0 {
                return Err(Error::Unsupported(Unsupported::BlockMapWrite));
            }
            return Ok(());
        }
        let mut tree = self.load_extents(inode)?;
        for (first, count) in tree.list.remove(0, LOGICAL_BLOCK_LIMIT) {
            self.free_blocks(first, count)?;
        }
        self.store_extents(inode, tree)
    }

    /// Maps a new block holding `bytes` at `logical` of `inode`'s tree.
    pub(crate) fn append_block(
        &mut self,
        inode: &Inode,
        tree: &mut LoadedTree,
        logical: u32,
        bytes: Vec<u8>,
        kind: BlockKind,
    ) -> Result<u64, Error> {
        let goal = tree.list.goal(logical).unwrap_or_else(|| self.goal_for_inode(inode.number));
        let (physical, _) = self.allocate_blocks(goal, 1)?;
        self.write_block(physical, bytes, kind, Structure::Inode(inode.number.0))?;
        tree.list.insert(logical, 1, physical);
        Ok(physical)
    }

    fn check_writable_file(&self, inode: &Inode) -> Result<(), Error> {
        match inode.file_type {
            FileType::Regular => {}
            FileType::Directory => return Err(Error::IsADirectory),
            _ => return Err(Error::InvalidArgument("not a regular file")),
        }
        if !inode.uses_extents() {
            return Err(Error::Unsupported(Unsupported::BlockMapWrite));
        }
        Ok(())
    }

    /// The largest size an extent-mapped file may have.
    fn largest_file(&self) -> u64 {
        (LOGICAL_BLOCK_LIMIT - 1) * self.block_size() as u64
    }

    /// Times, `large_file` and the inode itself after a data change.
    fn finish_data_change(&mut self, inode: &mut Inode, now: Timestamp) -> Result<(), Error> {
        if inode.size > SMALL_FILE_LIMIT {
            self.add_read_only_features(read_only_compatible::LARGE_FILE);
        }
        inode.modification_time = now;
        inode.change_time = now;
        self.write_inode(inode)
    }

    /// Allocates and fills blocks for the hole `logical..hole_end` as far as
    /// one allocation reaches; returns the bytes of the file it covered
    /// from `position`.
    fn fill_hole(
        &mut self,
        inode: &Inode,
        tree: &mut LoadedTree,
        logical: u32,
        hole_end: u64,
        (position, offset): (u64, u64),
        data: &[u8],
    ) -> Result<u64, Error> {
        let block_size = self.block_size() as u64;
        let wanted = hole_end.saturating_sub(u64::from(logical)).max(1);
        let goal = tree.list.goal(logical).unwrap_or_else(|| self.goal_for_inode(inode.number));
        let (first, count) = self.allocate_blocks(goal, wanted)?;
        let mut cursor = position;
        for step in 0..count {
            let block_start = (u64::from(logical) + step) * block_size;
            self.fill_new_block(inode, first + step, cursor.max(block_start), offset, data)?;
            cursor = block_start + block_size;
        }
        tree.list.insert(logical, count as u32, first);
        Ok(cursor - position)
    }

    /// Writes the block at `physical` whose file position holds `position`:
    /// zeros, with the part of `data` (which starts at file offset `offset`)
    /// that falls in it.
    fn fill_new_block(
        &mut self,
        inode: &Inode,
        physical: u64,
        position: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<(), Error> {
        let block_size = self.block_size() as u64;
        let within = (position % block_size) as usize;
        let start = (position - offset) as usize;
        let piece = (block_size as usize - within).min(data.len().saturating_sub(start));
        let bytes = data.get(start..start + piece).unwrap_or_default();
        self.write_data(inode, physical, within, bytes, BlockOrigin::Fresh)
    }

    /// Puts `bytes` at `within` of data block `physical`.
    fn write_data(
        &mut self,
        inode: &Inode,
        physical: u64,
        within: usize,
        bytes: &[u8],
        origin: BlockOrigin,
    ) -> Result<(), Error> {
        let structure = Structure::Inode(inode.number.0);
        // Fresh blocks passed the allocator's own check; mapped ones come
        // from the image and may point anywhere.
        if origin == BlockOrigin::Mapped && self.overlaps_fixed_metadata(physical, 1)? {
            return Err(Error::invalid(structure, "file data over fixed metadata"));
        }
        let block_size = self.block_size();
        let mut block = match origin {
            _ if within == 0 && bytes.len() == block_size => Vec::new(),
            BlockOrigin::Fresh => alloc::vec![0u8; block_size],
            BlockOrigin::Mapped => self.read_block(physical, structure)?,
        };
        if block.is_empty() {
            block = bytes.to_vec();
        } else if let Some(target) = block.get_mut(within..within + bytes.len()) {
            target.copy_from_slice(bytes);
        }
        self.write_block(physical, block, BlockKind::Data, structure)
    }

    /// Zeroes the bytes of the block holding `size` from `size` on, if that
    /// block is written.
    fn zero_tail(&mut self, inode: &Inode, list: &ExtentList, size: u64) -> Result<(), Error> {
        let block_size = self.block_size() as u64;
        let within = (size % block_size) as usize;
        let logical = size / block_size;
        if within == 0 || logical >= LOGICAL_BLOCK_LIMIT {
            return Ok(());
        }
        if let Mapping::Written { physical } = list.find(logical as u32) {
            let zeros = alloc::vec![0u8; block_size as usize - within];
            self.write_data(inode, physical, within, &zeros, BlockOrigin::Mapped)?;
        }
        Ok(())
    }
}

/// Whether a data block already holds the file's bytes (read before a
/// partial write) or was just allocated (starts as zeros).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BlockOrigin {
    /// Mapped before this write.
    Mapped,
    /// Allocated by this write (or unwritten until now).
    Fresh,
}
