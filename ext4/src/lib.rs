//! The ext4 on-disk format, for reading and writing, journaled through
//! jbd2.
//!
//! **Provides** [`Ext4`]: open a file system on any [`BlockDevice`]
//! (superblock, group descriptors and feature policy checked up front, the
//! result saying whether it may be written: [`Mount`]; [`Ext4::open_with`]
//! and [`Access::ReadWrite`] replay a journal left in use), then read
//! inodes, directories ([`Ext4::read_dir`], [`Ext4::lookup`]), file bytes
//! ([`Ext4::read`], holes as zeros), link targets ([`Ext4::read_link`]),
//! absolute paths ([`Ext4::resolve`]) and `statfs` numbers; and change it:
//! [`Ext4::create`], [`Ext4::mkdir`], [`Ext4::symlink`], [`Ext4::link`],
//! [`Ext4::unlink`], [`Ext4::rmdir`], [`Ext4::rename`], [`Ext4::write`],
//! [`Ext4::truncate`], [`Ext4::set_attributes`]; make changes durable:
//! [`Ext4::fsync`], [`Ext4::sync`], [`Ext4::checkpoint`],
//! [`Ext4::unmount`]. Each change is one operation whose blocks are
//! collected as [`BlockWrites`]; with a journal (ordered mode) its file
//! data is written in place and its metadata joins the running jbd2
//! transaction, committed per operation or grouped ([`CommitPolicy`]),
//! and written home only at checkpoint. Below that, the formats one
//! module each: [`Superblock`], [`GroupDescriptor`], [`Inode`], extent
//! trees and block maps ([`Run`]), directory blocks, bitmaps, and the
//! crc32c and crc16 checksums.
//!
//! **Relies on** a [`BlockDevice`] that reads and writes whole 512-byte
//! sectors and whose flush makes completed writes durable (virtio-blk in
//! the kernel, [`MemoryDisk`] on the host), on the `jbd2` crate for the
//! journal's format, commit, checkpoint and recovery, and on `alloc`.
//!
//! **Must never** panic, index out of bounds, overflow, loop without bound
//! or allocate beyond what the device's size justifies, whatever the image
//! holds: every malformed structure is an [`Error::Corrupted`] naming the
//! structure and the check, every checksum is verified when the file
//! system has them, and every feature it does not implement either refuses
//! the mount ([`Error::Unsupported`]) or makes it read-only. A write never
//! reaches a block the allocator did not hand out or the structure being
//! updated does not own, a failed operation writes nothing, and a
//! metadata block reaches its home location only after the commit block
//! of its transaction is durable.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

mod bitmaps;
mod block_allocator;
mod block_cache;
mod block_device;
mod block_map;
mod block_writes;
mod bytes;
pub mod checksum;
mod commit;
mod directory;
mod directory_blocks;
mod directory_reader;
mod directory_writer;
mod disk;
mod error;
mod extent_tree;
mod extent_tree_io;
mod extents;
pub mod features;
mod file_data;
mod file_writer;
mod filesystem;
mod freed_blocks;
mod geometry;
mod group_descriptors;
mod group_layout;
mod home_blocks;
mod htree;
mod inode;
mod inode_allocator;
mod inode_table;
mod inode_writer;
mod journal_area;
mod journal_failure;
mod journal_mount;
mod journaling;
mod mapping;
mod memory_disk;
mod namespace;
mod namespace_remove;
mod path;
mod recovery_flag;
mod superblock;
mod symlink;
mod timestamp;
mod transaction;
mod write_api;

pub use block_cache::{BlockCache, CacheStatistics, CachedDevice};
pub use block_device::{checked_byte_range, BlockDevice, IoError, SECTOR_SIZE};
pub use block_writes::{BlockKind, BlockWrites};
pub use directory::{leaf_checksum, needed_record_length, record_length, Entry, MAX_NAME_LENGTH, TAIL_SIZE};
pub use directory_reader::DirectoryEntry;
pub use error::{errno, Corruption, Error, Problem, Structure, Unsupported};
pub use extents::{node_checksum as extent_node_checksum, MAX_DEPTH as MAX_EXTENT_DEPTH};
pub use features::{FeatureNames, FeatureSet, Mount, ReadOnlyReason};
pub use filesystem::{Ext4, Statistics};
pub use group_descriptors::{
    descriptor_block_location, descriptor_checksum, GroupDescriptor, GroupDescriptors, BLOCK_UNINIT, INODE_UNINIT,
    ITABLE_ZEROED,
};
pub use htree::{index_checksum, BlockRole};
pub use inode::{checksum_seed as inode_checksum_seed, flags as inode_flags, FileType, Inode, InodeNumber};
pub use inode_table::{locate as locate_inode, InodeLocation};
pub use journal_failure::JournalFailure;
pub use journal_mount::Access;
pub use journaling::CommitPolicy;
pub use mapping::{Run, LOGICAL_BLOCK_LIMIT};
pub use memory_disk::MemoryDisk;
pub use path::Resolution;
pub use superblock::{
    superblock_checksum, Checksums, Superblock, CHECKSUM_TYPE_CRC32C, MAGIC, STATE_CLEAN, STATE_ERRORS,
    SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE,
};
pub use symlink::MAX_TARGET_LENGTH;
pub use timestamp::Timestamp;
pub use write_api::{AttributeChanges, Owner};
