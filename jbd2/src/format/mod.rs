//! The jbd2 on-disk format, one structure per module: features, the
//! journal superblock, block headers, checksums, descriptor tags, commit
//! and revoke blocks, and escaping of data blocks.

pub mod checksums;
pub mod commit_block;
pub mod descriptor;
pub mod escape;
pub mod features;
pub mod header;
pub mod revoke_block;
pub mod superblock;
pub mod tag;
