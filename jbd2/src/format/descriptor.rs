//! Descriptor blocks: a header, then tags naming the data blocks that
//! follow it in the log, then (v2/v3) a 4-byte checksum tail.
//!
//! Reading follows the kernel's `count_tags` and replay loop exactly: a
//! tag is read while it fits before the tail; a 16-byte UUID follows every
//! tag without `SAME_UUID`; `LAST_TAG` ends the list. Writing puts the
//! UUID after the first tag only, `SAME_UUID` on the others and
//! `LAST_TAG` on the last, as the kernel's commit does. **Must never**
//! loop past the block: the reader's offset only grows and is bounded by
//! the block length.

use alloc::vec;
use alloc::vec::Vec;

use crate::big_endian::put;
use crate::format::checksums::Checksummer;
use crate::format::header::{BlockHeader, BlockType, HEADER_BYTES};
use crate::format::tag::{BlockTag, TagLayout, TAG_LAST, TAG_SAME_UUID};

/// Bytes of the UUID that follows a tag without `SAME_UUID`.
const UUID_BYTES: usize = 16;

/// The tags of one descriptor block, in order.
pub struct DescriptorTags<'a> {
    block: &'a [u8],
    layout: TagLayout,
    end: usize,
    offset: usize,
    finished: bool,
}

impl<'a> DescriptorTags<'a> {
    /// The tags of `block`, whose last `tail_bytes` hold the checksum tail.
    pub fn new(block: &'a [u8], layout: TagLayout, tail_bytes: usize) -> DescriptorTags<'a> {
        DescriptorTags {
            block,
            layout,
            end: block.len().saturating_sub(tail_bytes),
            offset: HEADER_BYTES,
            finished: false,
        }
    }
}

impl Iterator for DescriptorTags<'_> {
    type Item = BlockTag;

    fn next(&mut self) -> Option<BlockTag> {
        let tag_end = self.offset.checked_add(self.layout.bytes())?;
        if self.finished || tag_end > self.end {
            return None;
        }
        let tag = self.layout.decode(&self.block[self.offset..tag_end]);
        self.offset = tag_end;
        if !tag.has(TAG_SAME_UUID) {
            self.offset = self.offset.saturating_add(UUID_BYTES);
        }
        self.finished = tag.has(TAG_LAST);
        Some(tag)
    }
}

/// How many tags one descriptor block of `block_size` bytes holds when
/// written as [`encode_descriptor`] does (UUID after the first tag).
pub fn tags_per_descriptor(block_size: usize, layout: TagLayout, tail_bytes: usize) -> usize {
    let room = block_size.saturating_sub(HEADER_BYTES + UUID_BYTES + tail_bytes);
    room / layout.bytes()
}

/// A descriptor block of transaction `sequence` holding `tags` (at most
/// [`tags_per_descriptor`]; their `SAME_UUID` and `LAST_TAG` flags are
/// set here), sealed with its checksum tail.
pub fn encode_descriptor(
    block_size: usize,
    sequence: u32,
    tags: &[BlockTag],
    layout: TagLayout,
    uuid: &[u8; 16],
    checksummer: &Checksummer,
) -> Vec<u8> {
    let mut block = vec![0u8; block_size];
    BlockHeader {
        block_type: BlockType::Descriptor,
        sequence,
    }
    .encode(&mut block);
    let mut offset = HEADER_BYTES;
    for (index, tag) in tags.iter().enumerate() {
        let mut flags = tag.flags & !(TAG_SAME_UUID | TAG_LAST);
        if index > 0 {
            flags |= TAG_SAME_UUID;
        }
        if index + 1 == tags.len() {
            flags |= TAG_LAST;
        }
        let end = (offset + layout.bytes()).min(block_size);
        layout.encode(&BlockTag { flags, ..*tag }, &mut block[offset..end]);
        offset = end;
        if index == 0 {
            put(&mut block, offset, uuid);
            offset += UUID_BYTES;
        }
    }
    checksummer.seal_tail(&mut block);
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::features::{BlockChecksums, Features};
    use crate::format::tag::TAG_ESCAPED;

    fn v3_layout() -> (Features, TagLayout) {
        let features = Features {
            incompat: Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT,
            ..Features::default()
        };
        (features, TagLayout::new(&features))
    }

    #[test]
    fn full_descriptor_round_trips_through_the_reader() {
        let (features, layout) = v3_layout();
        let checksummer = Checksummer::new(BlockChecksums::Version3, &[7; 16]);
        let capacity = tags_per_descriptor(1024, layout, 4);
        assert_eq!(capacity, 62);
        let tags: Vec<BlockTag> = (0..capacity as u64)
            .map(|index| BlockTag {
                fs_block: 1000 + index,
                flags: TAG_ESCAPED,
                checksum: index as u32,
            })
            .collect();
        let block = encode_descriptor(1024, 9, &tags, layout, &[7; 16], &checksummer);
        assert!(checksummer.tail_is_valid(&block));
        let read: Vec<BlockTag> =
            DescriptorTags::new(&block, layout, features.tail_bytes()).collect();
        assert_eq!(read.len(), capacity);
        for (index, (written, read)) in tags.iter().zip(&read).enumerate() {
            assert_eq!(written.fs_block, read.fs_block);
            assert_eq!(written.checksum, read.checksum);
            assert!(read.has(TAG_ESCAPED));
            assert_eq!(read.has(TAG_SAME_UUID), index > 0);
            assert_eq!(read.has(TAG_LAST), index + 1 == capacity);
        }
    }

    #[test]
    fn reader_stops_at_the_block_end_without_a_last_tag() {
        let (_, layout) = v3_layout();
        let mut block = vec![0u8; 1024];
        BlockHeader {
            block_type: BlockType::Descriptor,
            sequence: 1,
        }
        .encode(&mut block);
        // All flags zero: every tag is followed by a UUID, none is last.
        let count = DescriptorTags::new(&block, layout, 4).count();
        assert_eq!(count, (1024 - 4 - 12 + 16) / 32);
        let all_ones = vec![0xFFu8; 1024];
        assert!(DescriptorTags::new(&all_ones, layout, 4).count() <= 1);
    }
}
