//! What every walk of the log needs to know about one journal: its
//! superblock, geometry, tag layout and checksums, read and checked once.
//!
//! **Must never** be built from a superblock that failed its checks:
//! [`LogContext::load`] is the only constructor, and both recovery and the
//! writer go through it.

use alloc::vec;
use alloc::vec::Vec;

use crate::error::SuperblockError;
use crate::format::checksums::Checksummer;
use crate::format::descriptor::DescriptorTags;
use crate::format::superblock::JournalSuperblock;
use crate::format::tag::TagLayout;
use crate::log_geometry::LogGeometry;
use crate::storage::{IoError, JournalArea};

/// Why a journal could not be loaded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LoadError {
    Superblock(SuperblockError),
    Io(IoError),
}

/// A journal's checked superblock and what follows from it.
#[derive(Clone, Debug)]
pub(crate) struct LogContext {
    pub superblock: JournalSuperblock,
    pub geometry: LogGeometry,
    pub layout: TagLayout,
    pub checksummer: Checksummer,
    pub block_size: usize,
}

impl LogContext {
    /// Reads and checks the superblock of `area`.
    pub fn load<A: JournalArea>(area: &A) -> Result<LogContext, LoadError> {
        let block_size = area.block_size();
        if !(1024..=65536).contains(&block_size) || !block_size.is_power_of_two() {
            return Err(LoadError::Superblock(
                SuperblockError::UnsupportedBlockSize(block_size),
            ));
        }
        let mut block = vec![0u8; block_size as usize];
        area.read_block(0, &mut block).map_err(LoadError::Io)?;
        let superblock = JournalSuperblock::decode(&block).map_err(LoadError::Superblock)?;
        let geometry = superblock
            .geometry(block_size, area.block_count())
            .map_err(LoadError::Superblock)?;
        Ok(LogContext::from_superblock(superblock, geometry))
    }

    /// The context of an already checked superblock (after its features
    /// changed).
    pub fn from_superblock(superblock: JournalSuperblock, geometry: LogGeometry) -> LogContext {
        let features = superblock.features;
        LogContext {
            layout: TagLayout::new(&features),
            checksummer: Checksummer::new(features.block_checksums(), &superblock.uuid),
            block_size: superblock.block_size as usize,
            superblock,
            geometry,
        }
    }

    /// Bytes of the checksum tail of descriptor and revoke blocks.
    pub fn tail_bytes(&self) -> usize {
        self.superblock.features.tail_bytes()
    }

    /// The tags of descriptor block `block`.
    pub fn tags<'a>(&self, block: &'a [u8]) -> DescriptorTags<'a> {
        DescriptorTags::new(block, self.layout, self.tail_bytes())
    }

    /// How many data blocks follow descriptor `block` (kernel `count_tags`).
    pub fn count_tags(&self, block: &[u8]) -> u64 {
        self.tags(block).count() as u64
    }

    /// Writes `superblock` over the first 1024 bytes of block 0 (keeping
    /// the rest of the block) and flushes.
    pub fn write_superblock<A: JournalArea>(
        &self,
        area: &A,
        superblock: &JournalSuperblock,
    ) -> Result<(), IoError> {
        let mut block = self.block_buffer();
        area.read_block(0, &mut block)?;
        let encoded = superblock.encode();
        let length = encoded.len().min(block.len());
        block[..length].copy_from_slice(&encoded[..length]);
        area.write_block(0, &block)?;
        area.flush()
    }

    /// A zeroed buffer of one block.
    pub fn block_buffer(&self) -> Vec<u8> {
        vec![0u8; self.block_size]
    }
}
