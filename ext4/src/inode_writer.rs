//! Inodes inside a transaction: read through the operation's pending
//! blocks, written back into their inode table block, and made new.
//!
//! A new inode is built whole (`s_inode_size` zero bytes, then its fields),
//! so it never inherits what an unzeroed table held: mode, owner, all four
//! times with nanoseconds from the caller's clock, a generation, the
//! `i_extra_isize` the superblock wants, an empty extent root for files,
//! directories and slow symlinks, and its checksum. **Must never** write
//! outside the inode's own bytes of its table block.

use alloc::vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::bytes::{put_le16, put_le32};
use crate::error::{Error, Structure};
use crate::extent_tree::empty_root;
use crate::inode::{checksum_seed, flags, FileType, Inode, InodeNumber, BLOCK_AREA_SIZE};
use crate::inode_table::locate_in_group;
use crate::superblock::{Superblock, GOOD_OLD_INODE_SIZE};
use crate::timestamp::Timestamp;
use crate::transaction::Transaction;

/// The extra inode bytes Linux asks for when the superblock names none.
const DEFAULT_EXTRA_SIZE: u16 = 32;

/// Who owns a new inode and what it is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct NewInode {
    /// Type and permission bits.
    pub(crate) mode: u16,
    /// Owner.
    pub(crate) uid: u32,
    /// Group.
    pub(crate) gid: u32,
    /// Creation time, also its access, change and modification time.
    pub(crate) now: Timestamp,
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// Reads inode `number` as this operation sees it.
    pub(crate) fn read_inode(&mut self, number: InodeNumber) -> Result<Inode, Error> {
        let (block, offset) = self.inode_location(number)?;
        let bytes = self.read_block(block, Structure::Inode(number.0))?;
        let end = offset + usize::from(self.superblock.inode_size);
        let slice = bytes.get(offset..end).ok_or(Error::invalid(Structure::Inode(number.0), "outside its block"))?;
        Inode::parse(slice, number, self.superblock)
    }

    /// Writes `inode` back (fields encoded, checksum recomputed).
    pub(crate) fn write_inode(&mut self, inode: &Inode) -> Result<(), Error> {
        let structure = Structure::Inode(inode.number.0);
        let (block, offset) = self.inode_location(inode.number)?;
        let encoded = inode.encode(self.superblock);
        let mut bytes = self.read_block(block, structure)?;
        let target =
            bytes.get_mut(offset..offset + encoded.len()).ok_or(Error::invalid(structure, "outside its block"))?;
        target.copy_from_slice(&encoded);
        self.write_block(block, bytes, BlockKind::Metadata, structure)
    }

    fn inode_location(&self, number: InodeNumber) -> Result<(u64, usize), Error> {
        if number.0 == 0 || number.0 > self.superblock.inodes_count {
            return Err(Error::InodeOutOfRange(number.0));
        }
        let group = (number.0 - 1) / self.superblock.inodes_per_group.max(1);
        let location = locate_in_group(self.superblock, &self.group(group)?, number)?;
        Ok((location.block, location.offset))
    }
}

/// A fresh in-use inode `number` (link count 1, size 0, no blocks).
pub(crate) fn new_inode(superblock: &Superblock, number: InodeNumber, fields: NewInode, generation: u32) -> Inode {
    let size = usize::from(superblock.inode_size);
    let mut bytes = vec![0u8; size];
    let room = superblock.inode_size.saturating_sub(GOOD_OLD_INODE_SIZE);
    let wanted = superblock.want_extra_isize.max(superblock.min_extra_isize);
    let extra_size = if wanted == 0 { DEFAULT_EXTRA_SIZE } else { wanted }.min(room) & !3;
    put_le16(&mut bytes, 0x80, extra_size);
    put_le32(&mut bytes, 0x64, generation);
    let file_type = FileType::from_mode(fields.mode).unwrap_or(FileType::Regular);
    let uses_extents =
        superblock.has_extents() && matches!(file_type, FileType::Regular | FileType::Directory | FileType::Symlink);
    let mut block_area = [0u8; BLOCK_AREA_SIZE];
    if uses_extents {
        block_area = empty_root();
    }
    Inode {
        number,
        file_type,
        mode: fields.mode,
        uid: fields.uid,
        gid: fields.gid,
        size: 0,
        links_count: 1,
        sectors: 0,
        flags: if uses_extents { flags::EXTENTS } else { 0 },
        access_time: fields.now,
        change_time: fields.now,
        modification_time: fields.now,
        creation_time: (extra_size >= 24).then_some(fields.now),
        deletion_time: 0,
        generation,
        file_acl: 0,
        block_area,
        extra_size: if size > usize::from(GOOD_OLD_INODE_SIZE) { extra_size } else { 0 },
        checksum_seed: checksum_seed(superblock, number, generation),
        bytes,
    }
}
