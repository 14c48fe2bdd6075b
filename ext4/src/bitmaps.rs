//! A group's block and inode bitmaps, loaded and stored through a
//! transaction: checked against their `metadata_csum` checksums when read,
//! built from the geometry when the group is `BLOCK_UNINIT` or
//! `INODE_UNINIT`, and stored with the flag cleared and the checksum set.
//!
//! Bitmap checksum (Linux `ext4_block_bitmap_csum_set`,
//! `ext4_inode_bitmap_csum_set`): `crc32c(fs seed, bitmap[..bits / 8])`
//! where `bits` is blocks (or inodes) per group; the low 16 bits go to
//! `bg_*_bitmap_csum_lo`, the high 16 to `_hi` when descriptors are 64
//! bytes. **Must never** hand out a bitmap that failed its check, or an
//! uninitialised one whose free bits disagree with the descriptor's count.

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::checksum::crc32c;
use crate::error::{Error, Problem, Structure};
use crate::group_descriptors::{GroupDescriptor, BLOCK_UNINIT, INODE_UNINIT};
use crate::group_layout::{base_metadata_blocks, blocks_in_group, descriptor_ranges};
use crate::superblock::Checksums;
use crate::transaction::Transaction;

/// Which of a group's two bitmaps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BitmapKind {
    /// One bit per block.
    Blocks,
    /// One bit per inode.
    Inodes,
}

/// Whether bit `index` is set.
pub(crate) fn is_set(bitmap: &[u8], index: u64) -> bool {
    let byte = usize::try_from(index / 8).ok().and_then(|at| bitmap.get(at)).copied().unwrap_or(0xFF);
    byte & (1 << (index % 8)) != 0
}

/// The first clear bit in `from..limit`, skipping full words and bytes
/// (a bit past the bitmap's end counts as set, as in [`is_set`]).
pub(crate) fn first_clear(bitmap: &[u8], from: u64, limit: u64) -> Option<u64> {
    let mut bit = from;
    while bit < limit {
        let at = usize::try_from(bit / 8).ok()?;
        if bit % 64 == 0 && bitmap.get(at..at + 8).is_some_and(|word| word.iter().all(|&byte| byte == 0xFF)) {
            bit += 64;
            continue;
        }
        let byte = *bitmap.get(at)?;
        if bit % 8 == 0 && byte == 0xFF {
            bit += 8;
            continue;
        }
        if byte & (1 << (bit % 8)) == 0 {
            return Some(bit);
        }
        bit += 1;
    }
    None
}

/// Sets (`value`) or clears bit `index` (nothing past the end).
pub(crate) fn assign(bitmap: &mut [u8], index: u64, value: bool) {
    if let Some(byte) = usize::try_from(index / 8).ok().and_then(|at| bitmap.get_mut(at)) {
        let mask = 1u8 << (index % 8);
        *byte = if value { *byte | mask } else { *byte & !mask };
    }
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// Bits that describe something in a group's `kind` bitmap.
    fn bits_per_group(&self, kind: BitmapKind) -> u64 {
        match kind {
            BitmapKind::Blocks => u64::from(self.superblock.blocks_per_group),
            BitmapKind::Inodes => u64::from(self.superblock.inodes_per_group),
        }
    }

    /// The checksum of a `kind` bitmap (`None` without `metadata_csum`).
    fn bitmap_checksum(&self, kind: BitmapKind, bitmap: &[u8]) -> Option<u32> {
        let Checksums::Crc32c { seed } = self.superblock.checksums else { return None };
        let length = usize::try_from(self.bits_per_group(kind).div_ceil(8)).unwrap_or(usize::MAX);
        Some(crc32c(seed, bitmap.get(..length.min(bitmap.len())).unwrap_or_default()))
    }

    /// `group`'s `kind` bitmap and descriptor, built if uninitialised.
    pub(crate) fn load_bitmap(&mut self, group: u32, kind: BitmapKind) -> Result<(GroupDescriptor, Vec<u8>), Error> {
        let descriptor = self.group(group)?;
        let (uninit, location, structure, stored) = match kind {
            BitmapKind::Blocks => {
                (BLOCK_UNINIT, descriptor.block_bitmap, Structure::BlockBitmap(group), descriptor.block_bitmap_checksum)
            }
            BitmapKind::Inodes => {
                (INODE_UNINIT, descriptor.inode_bitmap, Structure::InodeBitmap(group), descriptor.inode_bitmap_checksum)
            }
        };
        if self.superblock.checksums != Checksums::None && descriptor.flags & uninit != 0 {
            let bitmap = match kind {
                BitmapKind::Blocks => self.initial_block_bitmap(group, &descriptor)?,
                BitmapKind::Inodes => self.initial_inode_bitmap(),
            };
            return Ok((descriptor, bitmap));
        }
        let needs_check = self.needs_check(location);
        let bitmap = self.read_block(location, structure)?;
        if !needs_check {
            return Ok((descriptor, bitmap));
        }
        if let Some(computed) = self.bitmap_checksum(kind, &bitmap) {
            let mask = if self.superblock.descriptor_size > 32 { u32::MAX } else { 0xFFFF };
            if computed & mask != stored & mask {
                return Err(Error::corrupted(structure, Problem::ChecksumMismatch));
            }
        }
        self.mark_checked(location);
        Ok((descriptor, bitmap))
    }

    /// Records `bitmap` as `group`'s `kind` bitmap and `descriptor` (its
    /// counts already changed) with the uninit flag cleared and checksum set.
    pub(crate) fn store_bitmap(
        &mut self,
        group: u32,
        kind: BitmapKind,
        mut descriptor: GroupDescriptor,
        bitmap: Vec<u8>,
    ) -> Result<(), Error> {
        let checksum = self.bitmap_checksum(kind, &bitmap);
        let (location, structure) = match kind {
            BitmapKind::Blocks => {
                descriptor.flags &= !BLOCK_UNINIT;
                descriptor.block_bitmap_checksum = checksum.unwrap_or(descriptor.block_bitmap_checksum);
                (descriptor.block_bitmap, Structure::BlockBitmap(group))
            }
            BitmapKind::Inodes => {
                descriptor.flags &= !INODE_UNINIT;
                descriptor.inode_bitmap_checksum = checksum.unwrap_or(descriptor.inode_bitmap_checksum);
                (descriptor.inode_bitmap, Structure::InodeBitmap(group))
            }
        };
        self.write_block(location, bitmap, BlockKind::Metadata, structure)?;
        self.set_group(group, descriptor);
        Ok(())
    }

    /// The block bitmap of a `BLOCK_UNINIT` group: its superblock copy and
    /// descriptor blocks, every group's bitmaps and table that lie in it,
    /// and the bits past its end, set.
    fn initial_block_bitmap(&mut self, group: u32, descriptor: &GroupDescriptor) -> Result<Vec<u8>, Error> {
        let superblock = self.superblock;
        let mut bitmap = alloc::vec![0u8; self.block_size()];
        let first = superblock.group_first_block(group);
        let in_group = blocks_in_group(superblock, group);
        for bit in 0..base_metadata_blocks(superblock, group).min(in_group) {
            assign(&mut bitmap, bit, true);
        }
        for other in 0..superblock.group_count() {
            let other_descriptor = self.group(other)?;
            for (start, count) in descriptor_ranges(superblock, &other_descriptor) {
                for block in start..start.saturating_add(count) {
                    if (first..first + in_group).contains(&block) {
                        assign(&mut bitmap, block - first, true);
                    }
                }
            }
        }
        for bit in in_group..(bitmap.len() as u64 * 8) {
            assign(&mut bitmap, bit, true);
        }
        let free = (0..in_group).filter(|&bit| !is_set(&bitmap, bit)).count() as u64;
        if free != u64::from(descriptor.free_blocks_count) {
            let what = "uninitialised block bitmap disagrees with the free count";
            return Err(Error::invalid(Structure::GroupDescriptor(group), what));
        }
        Ok(bitmap)
    }

    /// The inode bitmap of an `INODE_UNINIT` group: all free, the bits past
    /// `s_inodes_per_group` set.
    fn initial_inode_bitmap(&self) -> Vec<u8> {
        let mut bitmap = alloc::vec![0u8; self.block_size()];
        for bit in u64::from(self.superblock.inodes_per_group)..(bitmap.len() as u64 * 8) {
            assign(&mut bitmap, bit, true);
        }
        bitmap
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_clear_agrees_with_a_bit_by_bit_search() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..400u64 {
            let length = (round % 40) as usize + 1;
            let bitmap: alloc::vec::Vec<u8> = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly full bytes, as a busy group's bitmap is.
                    if state % 5 == 0 { state as u8 } else { 0xFF }
                })
                .collect();
            let bits = length as u64 * 8;
            for from in [0, 1, 7, 8, 63, 64, 65, round % (bits + 1)] {
                for limit in [bits, bits + 9, bits / 2] {
                    let naive = (from..limit).find(|&bit| !is_set(&bitmap, bit));
                    assert_eq!(first_clear(&bitmap, from, limit), naive, "round {round}, {from}..{limit}");
                }
            }
        }
    }

    use super::*;

    #[test]
    fn bits_are_least_significant_first_and_past_the_end_reads_set() {
        let mut bitmap = [0u8; 2];
        assign(&mut bitmap, 9, true);
        assert_eq!(bitmap, [0, 2]);
        assert!(is_set(&bitmap, 9) && !is_set(&bitmap, 8));
        assert!(is_set(&bitmap, 16));
        assign(&mut bitmap, 9, false);
        assign(&mut bitmap, 99, true);
        assert_eq!(bitmap, [0, 0]);
    }
}
