//! Reading a file's bytes: runs of mapped blocks are read straight into the
//! caller's buffer, partial blocks through one bounce block, holes and
//! unwritten extents filled with zeros; nothing is read past `i_size`.
//!
//! **Must never** do more work than the buffer's length calls for: each
//! step fills at least one byte, or the whole rest of a block.

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::error::{Error, Structure};
use crate::filesystem::Ext4;
use crate::inode::{FileType, Inode};
use crate::mapping::Run;

/// The most blocks asked of the device in one request.
const MAX_BLOCKS_PER_REQUEST: u64 = 128;

impl<D: BlockDevice> Ext4<D> {
    /// Copies `inode`'s bytes from `offset` into `buffer`, returning how
    /// many were copied (0 at or past the end of the file). Regular files,
    /// directories and symbolic links kept in a block have data.
    pub fn read(&self, inode: &Inode, offset: u64, buffer: &mut [u8]) -> Result<usize, Error> {
        let has_data = match inode.file_type {
            FileType::Regular | FileType::Directory => true,
            FileType::Symlink => !self.is_fast_symlink(inode),
            _ => false,
        };
        if !has_data {
            return Err(Error::NoData);
        }
        let Some(left) = inode.size.checked_sub(offset).filter(|&left| left > 0) else { return Ok(0) };
        let total = usize::try_from(left).map_or(buffer.len(), |left| left.min(buffer.len()));
        let block_size = u64::from(self.superblock.block_size);
        let mut bounce = Vec::new();
        let mut done = 0usize;
        while done < total {
            let position = offset + done as u64;
            let within = position % block_size;
            let run = self.map_block(inode, position / block_size)?;
            let run_bytes = run.length().saturating_mul(block_size).saturating_sub(within);
            let piece = usize::try_from(run_bytes).unwrap_or(usize::MAX).min(total - done);
            let target = buffer.get_mut(done..done + piece).unwrap_or_default();
            let filled = match run {
                Run::Data { physical, .. } => self.read_run(physical, within as usize, target, &mut bounce, inode)?,
                Run::Hole { .. } | Run::Unwritten { .. } => {
                    target.fill(0);
                    target.len()
                }
            };
            if filled == 0 {
                return Err(Error::invalid(Structure::Inode(inode.number.0), "file mapping made no progress"));
            }
            done += filled;
        }
        Ok(total)
    }

    /// Fills the start of `target` from blocks at `physical`, starting
    /// `within` bytes into the first; returns how many bytes it filled.
    fn read_run(
        &self,
        physical: u64,
        within: usize,
        target: &mut [u8],
        bounce: &mut Vec<u8>,
        inode: &Inode,
    ) -> Result<usize, Error> {
        let structure = Structure::Inode(inode.number.0);
        let block_size = self.superblock.block_size as usize;
        let whole_blocks = (target.len() / block_size) as u64;
        if within == 0 && whole_blocks > 0 {
            let blocks = whole_blocks.min(MAX_BLOCKS_PER_REQUEST) as usize;
            let direct = target.get_mut(..blocks * block_size).unwrap_or_default();
            self.disk.read_blocks(physical, direct, structure)?;
            return Ok(direct.len());
        }
        bounce.resize(block_size, 0);
        self.disk.read_blocks(physical, bounce, structure)?;
        let length = (block_size - within).min(target.len());
        let source = bounce.get(within..within + length).unwrap_or_default();
        for (byte, value) in target.iter_mut().zip(source) {
            *byte = *value;
        }
        Ok(source.len())
    }
}
