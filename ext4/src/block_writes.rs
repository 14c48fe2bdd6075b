//! The blocks one operation changes, collected whole before any reaches
//! the disk: the single path every write of this crate takes.
//!
//! An operation (create, write, rename, …) runs against a
//! `Transaction` that reads through these pending blocks and records
//! each changed block here as a full block image, tagged [`BlockKind::Data`]
//! (file contents) or [`BlockKind::Metadata`] (bitmaps, inode table,
//! extent nodes, directory blocks, group descriptors, superblock). Nothing
//! is written while the operation can still fail, so a failed operation
//! leaves the disk untouched. On success the file system applies the set
//! in one place, `Ext4::commit`: with a journal, the data blocks are
//! written in place and [`BlockWrites::metadata`] joins the running jbd2
//! transaction, with revokes for the [`BlockWrites::released`] blocks the
//! log still holds (see `journaling`); without one, data blocks first,
//! then metadata, each in ascending block order. **Must never** hold two
//! images of one block: the latest image of a block replaces the earlier
//! one.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// What a changed block holds, which decides when it may be written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockKind {
    /// File contents: written in place before any metadata points at it.
    Data,
    /// File-system structure: journalled, once there is a journal.
    Metadata,
}

/// The block images one operation changes, and the blocks it freed.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct BlockWrites {
    blocks: BTreeMap<u64, (BlockKind, Vec<u8>)>,
    released: Vec<(u64, u64)>,
}

impl BlockWrites {
    /// Records `bytes` as the new contents of `block`.
    pub(crate) fn record(&mut self, block: u64, kind: BlockKind, bytes: Vec<u8>) {
        self.blocks.insert(block, (kind, bytes));
    }

    /// The pending image of `block`, if the operation changed it.
    pub(crate) fn get(&self, block: u64) -> Option<&[u8]> {
        self.blocks.get(&block).map(|(_, bytes)| bytes.as_slice())
    }

    /// Notes that `count` blocks from `first` were freed, dropping any
    /// pending image of them: a freed block is never written.
    pub(crate) fn release(&mut self, first: u64, count: u64) {
        let end = first.saturating_add(count);
        let doomed: Vec<u64> = self.blocks.range(first..end).map(|(&block, _)| block).collect();
        for block in doomed {
            self.blocks.remove(&block);
        }
        self.released.push((first, count));
    }

    /// Whether `block` was freed by this operation.
    pub(crate) fn was_released(&self, block: u64) -> bool {
        self.released.iter().any(|&(first, count)| block >= first && block - first < count)
    }

    /// The changed data blocks, in block order.
    pub fn data(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.of_kind(BlockKind::Data)
    }

    /// The changed metadata blocks, in block order.
    pub fn metadata(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.of_kind(BlockKind::Metadata)
    }

    /// Every changed block in the order they must reach the disk: data,
    /// then metadata.
    pub fn in_order(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.data().chain(self.metadata())
    }

    /// The runs of blocks the operation freed, as `(first, count)`.
    pub fn released(&self) -> &[(u64, u64)] {
        &self.released
    }

    /// Whether the operation changed nothing.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.released.is_empty()
    }

    fn of_kind(&self, wanted: BlockKind) -> impl Iterator<Item = (u64, &[u8])> {
        self.blocks.iter().filter(move |(_, (kind, _))| *kind == wanted).map(|(&block, (_, bytes))| (block, &bytes[..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn data_comes_before_metadata_and_freed_blocks_are_dropped() {
        let mut writes = BlockWrites::default();
        writes.record(9, BlockKind::Metadata, vec![1]);
        writes.record(5, BlockKind::Data, vec![2]);
        writes.record(7, BlockKind::Metadata, vec![3]);
        writes.record(7, BlockKind::Metadata, vec![4]);
        let order: Vec<(u64, u8)> = writes.in_order().map(|(block, bytes)| (block, bytes[0])).collect();
        assert_eq!(order, [(5, 2), (7, 4), (9, 1)]);
        writes.release(8, 2);
        assert_eq!(writes.metadata().count(), 1);
        assert_eq!(writes.released(), &[(8, 2)]);
    }
}
