//! Symbolic link targets: a "fast" link keeps its target (under 60 bytes)
//! in `i_block`; a longer one keeps it in its first data block.
//!
//! A link is fast when it owns no blocks besides an extended attribute
//! block (Linux `ext4_inode_is_fast_symlink`). Targets are at most one
//! block and at most 4095 bytes (`PATH_MAX` less the NUL). **Must never**
//! return a target that is empty, holds a NUL, or disagrees with `i_size`.

use alloc::vec;
use alloc::vec::Vec;

use crate::block_device::{BlockDevice, SECTOR_SIZE};
use crate::error::{Error, Structure};
use crate::filesystem::Ext4;
use crate::inode::{FileType, Inode, BLOCK_AREA_SIZE};

/// The longest target (`PATH_MAX - 1`).
pub const MAX_TARGET_LENGTH: u64 = 4095;

impl<D: BlockDevice> Ext4<D> {
    /// The target of the symbolic link `inode`.
    pub fn read_link(&self, inode: &Inode) -> Result<Vec<u8>, Error> {
        if inode.file_type != FileType::Symlink {
            return Err(Error::NotASymlink);
        }
        let structure = Structure::Symlink(inode.number.0);
        let length = inode.size;
        if length == 0 || length > MAX_TARGET_LENGTH || length > u64::from(self.superblock.block_size) {
            return Err(Error::invalid(structure, "target length out of range"));
        }
        let length = length as usize;
        let target = if self.is_fast_symlink(inode) {
            if length >= BLOCK_AREA_SIZE {
                return Err(Error::invalid(structure, "fast symlink length above 59"));
            }
            inode.block_area.get(..length).unwrap_or_default().to_vec()
        } else {
            let mut target = vec![0u8; length];
            if self.read(inode, 0, &mut target)? != length {
                return Err(Error::invalid(structure, "target shorter than i_size"));
            }
            target
        };
        if target.contains(&0) {
            return Err(Error::invalid(structure, "target contains NUL"));
        }
        Ok(target)
    }

    /// Whether the link's target is in `i_block` (it owns no data blocks).
    pub(crate) fn is_fast_symlink(&self, inode: &Inode) -> bool {
        let attribute_sectors =
            if inode.file_acl != 0 { u64::from(self.superblock.block_size) / SECTOR_SIZE as u64 } else { 0 };
        inode.file_type == FileType::Symlink && inode.sectors.saturating_sub(attribute_sectors) == 0
    }
}
