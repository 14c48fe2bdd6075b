//! Loading a file's whole extent tree into an [`ExtentList`] and storing a
//! list back as the shallowest tree that holds it: up to 4 extents in the
//! inode (depth 0), else full leaf blocks under the root (depth 1), else
//! index blocks between (depth 2); deeper is refused as
//! [`Error::FileTooLarge`].
//!
//! Storing reuses the old tree's blocks in order, allocates what more it
//! needs near the inode, frees what it no longer needs, and records only
//! the nodes whose bytes changed; each block node ends with its crc32c
//! tail under `metadata_csum` (see [`crate::extents`]). `i_blocks` is set
//! from the result. Rebuilding the tree per change costs a pass over the
//! extents, which is what keeps it simple and always well formed.
//! **Must never** follow more than [`MAX_DEPTH`] levels, accept a node that
//! fails the reader's checks, or write a node over fixed metadata.

use alloc::vec::Vec;

use crate::block_device::BlockDevice;
use crate::block_writes::BlockKind;
use crate::bytes::{le16, le32, put_le16, put_le32};
use crate::checksum::crc32c;
use crate::error::{Error, Problem, Structure};
use crate::extent_tree::{Extent, ExtentList, ROOT_ENTRIES};
use crate::extents::{inside, node_checksum, MAGIC, MAX_DEPTH};
use crate::inode::{sectors_fit, Inode, BLOCK_AREA_SIZE};
use crate::superblock::Checksums;
use crate::transaction::Transaction;

const HEADER: usize = 12;
const ENTRY: usize = 12;
const UNWRITTEN_BIAS: u16 = 32768;

/// A file's extents with the blocks of the tree they were loaded from.
#[derive(Clone, Default, Debug)]
pub(crate) struct LoadedTree {
    /// The extents, sorted.
    pub(crate) list: ExtentList,
    /// The old tree's non-root nodes, in order, with their bytes.
    nodes: Vec<(u64, Vec<u8>)>,
}

/// A node's header fields.
struct Header {
    entries: u16,
    depth: u16,
}

impl<D: BlockDevice> Transaction<'_, D> {
    /// Loads `inode`'s whole extent tree, checking every node.
    pub(crate) fn load_extents(&mut self, inode: &Inode) -> Result<LoadedTree, Error> {
        let mut tree = LoadedTree::default();
        let structure = Structure::Inode(inode.number.0);
        let root = inode.block_area;
        let header = header(&root, structure)?;
        if header.depth > MAX_DEPTH {
            return Err(Error::invalid(structure, "extent tree deeper than 5"));
        }
        self.load_node(inode, &root, header, (0, u64::MAX), structure, &mut tree)?;
        Ok(tree)
    }

    fn load_node(
        &mut self,
        inode: &Inode,
        node: &[u8],
        header: Header,
        range: (u64, u64),
        structure: Structure,
        tree: &mut LoadedTree,
    ) -> Result<(), Error> {
        if header.depth == 0 {
            return self.load_leaf(node, header.entries, range, structure, tree);
        }
        for index in 0..usize::from(header.entries) {
            let entry = node.get(HEADER + ENTRY * index..).unwrap_or_default();
            let first = u64::from(le32(entry, 0));
            let next = node.get(HEADER + ENTRY * (index + 1)..).filter(|_| index + 1 < usize::from(header.entries));
            let end = next.map_or(range.1, |next| u64::from(le32(next, 0)));
            let child = u64::from(le32(entry, 4)) | (u64::from(le16(entry, 8)) << 32);
            if first < range.0 || first >= end || end > range.1 {
                return Err(Error::invalid(structure, "index entries out of order"));
            }
            if !inside(self.superblock, child, 1) || self.overlaps_fixed_metadata(child, 1)? {
                return Err(Error::invalid(structure, "index points outside the file system"));
            }
            let child_structure = Structure::ExtentNode { inode: inode.number.0, block: child };
            let bytes = self.read_block(child, child_structure)?;
            let child_header =
                header_of_block(&bytes, inode.checksum_seed, self.superblock.checksums, child_structure)?;
            if child_header.depth + 1 != header.depth || u64::from(le32(&bytes, HEADER)) != first {
                return Err(Error::invalid(child_structure, "extent node disagrees with its index"));
            }
            tree.nodes.push((child, bytes.clone()));
            self.load_node(inode, &bytes, child_header, (first, end), child_structure, tree)?;
        }
        Ok(())
    }

    fn load_leaf(
        &self,
        node: &[u8],
        entries: u16,
        range: (u64, u64),
        structure: Structure,
        tree: &mut LoadedTree,
    ) -> Result<(), Error> {
        for index in 0..usize::from(entries) {
            let entry = node.get(HEADER + ENTRY * index..).unwrap_or_default();
            let raw_length = le16(entry, 4);
            let unwritten = raw_length > UNWRITTEN_BIAS;
            let length = u32::from(if unwritten { raw_length - UNWRITTEN_BIAS } else { raw_length });
            let physical = u64::from(le32(entry, 8)) | (u64::from(le16(entry, 6)) << 32);
            let extent = Extent { logical: le32(entry, 0), length, physical, unwritten };
            let previous_end = tree.list.extents.last().map_or(0, Extent::end);
            let ordered = u64::from(extent.logical) >= previous_end.max(range.0) && extent.end() <= range.1;
            if length == 0 || !ordered || extent.end() > 1 << 32 {
                return Err(Error::invalid(structure, "extents overlap or out of order"));
            }
            if !inside(self.superblock, physical, u64::from(length)) {
                return Err(Error::invalid(structure, "extent outside the file system"));
            }
            tree.list.extents.push(extent);
        }
        Ok(())
    }

    /// Stores `tree` as `inode`'s extent tree and sets its `i_blocks`
    /// (the caller writes the inode).
    pub(crate) fn store_extents(&mut self, inode: &mut Inode, tree: LoadedTree) -> Result<(), Error> {
        let per_node = (self.block_size() - HEADER) / ENTRY;
        let extents = &tree.list.extents;
        let root_entries = usize::from(ROOT_ENTRIES);
        let leaves = extents.len().div_ceil(per_node);
        let (depth, index_nodes) = match extents.len() {
            count if count <= root_entries => (0u16, 0),
            _ if leaves <= root_entries => (1, 0),
            _ if leaves.div_ceil(per_node) <= root_entries => (2, leaves.div_ceil(per_node)),
            _ => return Err(Error::FileTooLarge),
        };
        let node_count = if depth == 0 { 0 } else { leaves + index_nodes };
        let blocks = self.node_blocks(inode, &tree, node_count)?;
        let sectors_per_block = u64::from(self.superblock.block_size / 512);
        let attribute_blocks = u64::from(inode.file_acl != 0);
        let sectors = (tree.list.mapped_blocks() + node_count as u64 + attribute_blocks) * sectors_per_block;
        if !sectors_fit(sectors, self.superblock) {
            return Err(Error::FileTooLarge);
        }
        inode.sectors = sectors;
        let leaf_blocks = blocks.get(index_nodes..).unwrap_or_default();
        let leaf_entries: Vec<(u32, Vec<u8>)> = extents
            .chunks(per_node)
            .map(|chunk| (chunk[0].logical, chunk.iter().flat_map(leaf_entry).collect()))
            .collect();
        let mut level: Vec<(u32, [u8; ENTRY])> = Vec::new();
        for ((first, entries), &block) in leaf_entries.iter().zip(leaf_blocks) {
            self.write_node(inode, &tree, block, 0, entries.chunks(ENTRY))?;
            level.push((*first, index_entry(*first, block)));
        }
        if depth == 2 {
            let mut upper = Vec::new();
            for (chunk, &block) in level.chunks(per_node).zip(blocks.iter()) {
                self.write_node(inode, &tree, block, 1, chunk.iter().map(|(_, entry)| &entry[..]))?;
                upper.push((chunk[0].0, index_entry(chunk[0].0, block)));
            }
            level = upper;
        }
        let mut root = [0u8; BLOCK_AREA_SIZE];
        let root_bytes: Vec<Vec<u8>> = if depth == 0 {
            extents.iter().map(|extent| leaf_entry(extent).to_vec()).collect()
        } else {
            level.iter().map(|(_, entry)| entry.to_vec()).collect()
        };
        fill_node(&mut root, ROOT_ENTRIES, depth, root_bytes.iter().map(Vec::as_slice));
        inode.block_area = root;
        Ok(())
    }

    /// `count` node blocks: the old tree's first, then new ones; frees the rest.
    fn node_blocks(&mut self, inode: &Inode, tree: &LoadedTree, count: usize) -> Result<Vec<u64>, Error> {
        let mut blocks: Vec<u64> = tree.nodes.iter().map(|(block, _)| *block).take(count).collect();
        while blocks.len() < count {
            let goal = blocks.last().map_or_else(|| self.goal_for_inode(inode.number), |block| block + 1);
            let (first, allocated) = self.allocate_blocks(goal, (count - blocks.len()) as u64)?;
            blocks.extend(first..first + allocated);
        }
        for (block, _) in tree.nodes.iter().skip(count) {
            self.free_blocks(*block, 1)?;
        }
        Ok(blocks)
    }

    /// Writes a block node at `block` if its bytes differ from the old ones.
    fn write_node<'e>(
        &mut self,
        inode: &Inode,
        tree: &LoadedTree,
        block: u64,
        depth: u16,
        entries: impl Iterator<Item = &'e [u8]>,
    ) -> Result<(), Error> {
        let structure = Structure::ExtentNode { inode: inode.number.0, block };
        let per_node = ((self.block_size() - HEADER) / ENTRY) as u16;
        let mut bytes = alloc::vec![0u8; self.block_size()];
        fill_node(&mut bytes, per_node, depth, entries);
        if let Checksums::Crc32c { .. } = self.superblock.checksums {
            let tail = HEADER + ENTRY * usize::from(per_node);
            let checksum = crc32c(inode.checksum_seed, bytes.get(..tail).unwrap_or_default());
            put_le32(&mut bytes, tail, checksum);
        }
        if tree.nodes.iter().any(|(old, old_bytes)| *old == block && *old_bytes == bytes) {
            return Ok(());
        }
        self.write_block(block, bytes, BlockKind::Metadata, structure)
    }
}

fn header(node: &[u8], structure: Structure) -> Result<Header, Error> {
    if le16(node, 0) != MAGIC {
        return Err(Error::corrupted(structure, Problem::BadMagic));
    }
    let (entries, max) = (le16(node, 2), le16(node, 4));
    if usize::from(max) > node.len().saturating_sub(HEADER) / ENTRY || entries > max {
        return Err(Error::invalid(structure, "eh_entries or eh_max out of range"));
    }
    Ok(Header { entries, depth: le16(node, 6) })
}

fn header_of_block(node: &[u8], seed: u32, checksums: Checksums, structure: Structure) -> Result<Header, Error> {
    let header = header(node, structure)?;
    if header.entries == 0 {
        return Err(Error::invalid(structure, "empty non-root extent node"));
    }
    if let Checksums::Crc32c { .. } = checksums {
        match node_checksum(node, seed) {
            Some((computed, stored)) if computed == stored => {}
            Some(_) => return Err(Error::corrupted(structure, Problem::ChecksumMismatch)),
            None => return Err(Error::invalid(structure, "no room for the extent tail")),
        }
    }
    Ok(header)
}

fn fill_node<'e>(node: &mut [u8], max: u16, depth: u16, entries: impl Iterator<Item = &'e [u8]>) {
    let mut count = 0u16;
    for (index, entry) in entries.enumerate() {
        crate::bytes::put(node, HEADER + ENTRY * index, entry);
        count += 1;
    }
    put_le16(node, 0, MAGIC);
    put_le16(node, 2, count);
    put_le16(node, 4, max);
    put_le16(node, 6, depth);
}

fn leaf_entry(extent: &Extent) -> [u8; ENTRY] {
    let mut entry = [0u8; ENTRY];
    let bias = if extent.unwritten { UNWRITTEN_BIAS } else { 0 };
    put_le32(&mut entry, 0, extent.logical);
    put_le16(&mut entry, 4, extent.length as u16 + bias);
    put_le16(&mut entry, 6, (extent.physical >> 32) as u16);
    put_le32(&mut entry, 8, extent.physical as u32);
    entry
}

fn index_entry(first: u32, block: u64) -> [u8; ENTRY] {
    let mut entry = [0u8; ENTRY];
    put_le32(&mut entry, 0, first);
    put_le32(&mut entry, 4, block as u32);
    put_le16(&mut entry, 8, (block >> 32) as u16);
    entry
}
