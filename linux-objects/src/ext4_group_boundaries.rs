//! A workaround for a bug of the `ext4` crate (which this kernel may not
//! change): freeing an extent that crosses into a block group without a
//! superblock backup is refused as a corruption ("block bitmap of group
//! N: freeing metadata blocks", EUCLEAN), although the image is sound.
//!
//! The crate's `overlaps_fixed_metadata` (`ext4/src/group_layout.rs`)
//! treats every group's superblock-and-descriptors range as metadata, and
//! for a group without a backup that range is empty, `(first block, 0)`;
//! its overlap test `start < end && first < start + length` is then true
//! for any run that strictly contains the group's first block. The
//! allocator allocates within one group, so it never trips over it, but a
//! write that continues a file's last extent into the next group merges
//! the two runs into one extent, and `unlink` or `truncate` of that file
//! then fails whole (nothing is written; e2fsck finds nothing wrong).
//!
//! The workaround: when a free is refused this way, the file is cut at
//! every group boundary its extents cross — truncated down to each
//! crossing, the highest first, so that every piece freed begins at a
//! group's first block and none contains one — and the operation is
//! tried again.

use alloc::vec::Vec;

use ext4::{Corruption, Problem, Run, Structure};
use vfs::Timestamp;

use crate::ext4_mounts::{DiskDevice, Ext4Mount};

/// Whether `error` is the crate's refusal described above.
fn is_boundary_refusal(error: &ext4::Error) -> bool {
    matches!(
        error,
        ext4::Error::Corrupted(Corruption { structure: Structure::BlockBitmap(_), problem: Problem::Invalid("freeing metadata blocks") })
    )
}

impl Ext4Mount {
    /// Runs `operation`, which frees blocks of regular file `victim`
    /// past byte `keep`; refused as above, cuts the file at its group
    /// crossings past `keep` and runs it once more.
    pub(crate) fn freeing<T>(&mut self, victim: ext4::InodeNumber, keep: u64, now: Timestamp, operation: impl Fn(&mut ext4::Ext4<DiskDevice>) -> Result<T, ext4::Error>) -> Result<T, ext4::Error> {
        match operation(&mut self.file_system) {
            Err(error) if is_boundary_refusal(&error) => {
                self.cut_at_group_boundaries(victim, keep, now)?;
                operation(&mut self.file_system)
            }
            outcome => outcome,
        }
    }

    /// Truncates `number` down to each group crossing past byte `keep`,
    /// the highest first.
    fn cut_at_group_boundaries(&mut self, number: ext4::InodeNumber, keep: u64, now: Timestamp) -> Result<(), ext4::Error> {
        let inode = self.file_system.inode(number)?;
        let block_size = u64::from(self.file_system.superblock().block_size);
        let crossings = self.group_crossings(&inode, block_size)?;
        self.forget(&[number.0]);
        for crossing in crossings.into_iter().rev() {
            let size = crossing.saturating_mul(block_size);
            if size < keep {
                break;
            }
            let time = ext4::Timestamp { seconds: now.seconds as i64, nanoseconds: now.nanoseconds };
            self.file_system.truncate(number, size, time)?;
        }
        Ok(())
    }

    /// The logical blocks of `inode` that sit on a group's first block
    /// inside a run of its data (ascending).
    fn group_crossings(&self, inode: &ext4::Inode, block_size: u64) -> Result<Vec<u64>, ext4::Error> {
        let superblock = self.file_system.superblock();
        let first_data = u64::from(superblock.first_data_block);
        let per_group = u64::from(superblock.blocks_per_group.max(1));
        let blocks = inode.size.div_ceil(block_size.max(1));
        let mut crossings = Vec::new();
        let mut logical = 0;
        while logical < blocks {
            let run = self.file_system.map_block(inode, logical)?;
            if let Run::Data { physical, length } = run {
                let group = physical.saturating_sub(first_data) / per_group;
                let mut boundary = first_data.saturating_add((group + 1).saturating_mul(per_group));
                while boundary < physical.saturating_add(length) {
                    crossings.push(logical + (boundary - physical));
                    boundary = boundary.saturating_add(per_group);
                }
            }
            logical = logical.saturating_add(run.length());
        }
        Ok(crossings)
    }
}
