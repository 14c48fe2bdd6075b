//! ext4 images: `ext4::Ext4::open` on a whole image in memory, then a walk
//! that uses everything the crate accepts (the root resolved, every
//! directory listed down to [`MAX_DEPTH`], every regular file read up to
//! [`FILE_BYTES`] and its first [`MAX_RUNS`] block runs mapped, links read,
//! inodes stat'ed, names looked up and paths resolved), bounded by
//! [`MAX_ENTRIES`] so a damaged image costs what a good one does. What the
//! crate promises about accepted results is checked, and a broken promise
//! panics: names of 1 to 255 bytes without `/` or NUL, reads inside the
//! buffer and `i_size`, runs never empty and inside the file system, a
//! run's block read through the file equal to the device's block (zeros
//! for holes), link targets without NUL as long as `i_size`, inode numbers
//! outside the table refused.
//!
//! Samples are real images made once per process by Debian's `mkfs.ext4 -d`
//! (then `e2fsck -fyD`, which indexes large directories), 256 KiB each:
//! `metadata_csum`, `gdt_csum`, an ext2-style image (block maps) and 4 KiB
//! blocks. Hot ranges are the metadata a walk of the sample reads
//! (superblock, descriptors, the inodes reached, directory, extent, indirect
//! and symlink blocks), never file data. Repair recomputes the superblock,
//! group descriptor and inode checksums, and those of extent nodes and
//! directory leaves one level below an inode. Must not write to the image:
//! it is opened with [`Ext4::open`], which never writes.

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use ext4::features::{incompatible, read_only_compatible};
use ext4::{
    descriptor_block_location, descriptor_checksum, extent_node_checksum, inode_checksum_seed, inode_flags, leaf_checksum, locate_inode, superblock_checksum,
    BlockDevice, Checksums, Error, Ext4, FileType, GroupDescriptor, Inode, InodeNumber, MemoryDisk, Mount, Problem, Resolution, Run, Superblock,
    MAX_NAME_LENGTH, MAX_TARGET_LENGTH, SECTOR_SIZE, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, TAIL_SIZE,
};

use crate::{boundary_value, kind_of, Rng, Target};

/// The ext4 target.
pub struct Ext4Image;

const MKFS: &str = "/usr/sbin/mkfs.ext4";
const E2FSCK: &str = "/usr/sbin/e2fsck";
/// The most directory entries a walk follows.
const MAX_ENTRIES: usize = 200;
/// The deepest directory a walk lists.
const MAX_DEPTH: usize = 8;
/// The most bytes read from one file.
const FILE_BYTES: u64 = 64 * 1024;
/// The most paths a walk resolves from the root.
const MAX_RESOLVES: usize = 24;
/// Where the superblock lies in an image.
const SUPERBLOCK_BYTES: Range<usize> = SUPERBLOCK_OFFSET as usize..SUPERBLOCK_OFFSET as usize + SUPERBLOCK_SIZE;
/// The device an image is opened on: the image, padded with zeros to at
/// least this size (a partition larger than its file system), so that an
/// edit which shortens the image does not always end at the device-size
/// check.
const DEVICE_BYTES: usize = 256 * 1024;
/// The instant every sample's times are set to.
const CLOCK: u64 = 1_000_000_000;
/// The most inodes read by number.
const MAX_STATS: u32 = 64;
/// The most runs of one file whose mapping is checked.
const MAX_RUNS: usize = 8;
/// Bytes per read request.
const CHUNK: usize = 16 * 1024;
/// The most groups and inodes a repair visits (the samples have one group
/// of 64 inodes; a mutated geometry must not make repair slow).
const REPAIR_GROUPS: u32 = 16;
const REPAIR_INODES_PER_GROUP: u32 = 256;

/// A sample image and where its metadata is.
struct Sample {
    bytes: Vec<u8>,
    /// The metadata a walk reads: what mutations aim at.
    hot: Vec<Range<usize>>,
    /// The on-disk bytes of each inode the walk reached.
    inodes: Vec<Range<usize>>,
    /// Directory blocks, extent and indirect blocks.
    blocks: Vec<Range<usize>>,
}

/// `mkfs.ext4` options of each sample: `metadata_csum`, `gdt_csum`, an
/// ext2-style image (block maps, 128-byte inodes), 4 KiB blocks.
const IMAGES: [&[&str]; 4] = [
    &["-b", "1024", "-O", "metadata_csum"],
    &["-b", "1024", "-O", "^metadata_csum,uninit_bg"],
    &["-b", "1024", "-I", "128", "-O", "^extent,^64bit,^flex_bg,^metadata_csum,^huge_file,^dir_nlink,^extra_isize"],
    &["-b", "4096", "-O", "metadata_csum"],
];

fn samples() -> &'static [Sample] {
    static SAMPLES: OnceLock<Vec<Sample>> = OnceLock::new();
    SAMPLES.get_or_init(|| make_images().into_iter().map(analyse).collect())
}

/// Deterministic file contents.
fn pattern(seed: u8, length: usize) -> Vec<u8> {
    (0..length).map(|index| (index as u8).wrapping_mul(31).wrapping_add(seed).wrapping_add((index >> 8) as u8)).collect()
}

/// A small tree with every kind of file: sizes of 0 to 20,000 bytes, a
/// sparse file of twelve extents, one with data at 300 KiB and 70 MiB, a
/// subdirectory two deep, fast and slow
/// symbolic links, a FIFO and a directory of 100 names (hard links to one
/// empty file, so they cost no inodes).
fn build_tree(root: &Path) -> std::io::Result<()> {
    use std::fs;
    use std::io::{Seek, SeekFrom, Write};
    fs::create_dir_all(root.join("sub/deeper"))?;
    fs::create_dir_all(root.join("many"))?;
    for (seed, (name, length)) in [("empty", 0), ("one", 1), ("small", 3000), ("medium", 20_000)].into_iter().enumerate() {
        fs::write(root.join(name), pattern(seed as u8, length))?;
    }
    let mut sparse = fs::File::create(root.join("sparse"))?;
    for chunk in 0..12u64 {
        sparse.seek(SeekFrom::Start(chunk * 8192))?;
        sparse.write_all(&pattern(chunk as u8 + 10, 1024))?;
    }
    // Data behind the block map's double and triple indirect blocks.
    let mut far = fs::File::create(root.join("far"))?;
    for offset in [300 << 10, 70 << 20] {
        far.seek(SeekFrom::Start(offset))?;
        far.write_all(&pattern(offset as u8, 1024))?;
    }
    fs::write(root.join("sub/deeper/file"), b"deep\n")?;
    std::os::unix::fs::symlink("../one", root.join("sub/up"))?;
    std::os::unix::fs::symlink("one", root.join("fast"))?;
    std::os::unix::fs::symlink("x".repeat(100), root.join("long-link"))?;
    fs::write(root.join("many/target"), b"")?;
    for index in 100..200 {
        fs::hard_link(root.join("many/target"), root.join(format!("many/a-fairly-long-entry-name-{index}")))?;
    }
    // A FIFO if the tool is there (a sample without one is still useful).
    let _ = Command::new("mkfifo").arg(root.join("fifo")).output();
    Ok(())
}

fn run_tool(command: &mut Command, accepted: &[i32]) {
    let output = command.output().unwrap_or_else(|error| panic!("cannot run {command:?} ({error}): install e2fsprogs with `apt-get install e2fsprogs`"));
    let code = output.status.code().unwrap_or(-1);
    assert!(accepted.contains(&code), "{command:?} exited with {code}: {}", String::from_utf8_lossy(&output.stderr));
}

/// The sample images, made in a fresh temporary directory. The UUID, hash
/// seed and clock are fixed and inode times normalised, so a seed replays
/// the same inputs in every process.
fn make_images() -> Vec<Vec<u8>> {
    assert!(Path::new(MKFS).exists(), "{MKFS} is missing: install e2fsprogs with `apt-get install e2fsprogs`");
    static MADE: AtomicU32 = AtomicU32::new(0);
    let unique = MADE.fetch_add(1, Ordering::Relaxed);
    let directory = std::env::temp_dir().join(format!("parser-fuzz-ext4-{}-{unique}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    let tree = directory.join("tree");
    build_tree(&tree).expect("the temporary directory is writable");
    let image_path = directory.join("image");
    let images = IMAGES
        .iter()
        .map(|options| {
            let mut mkfs = Command::new(MKFS);
            mkfs.env("E2FSPROGS_FAKE_TIME", "1000000000");
            mkfs.args(["-q", "-F", "-N", "64", "-U", "6c616d69-6e61-4000-8000-000000000000"]);
            mkfs.args(["-E", "lazy_itable_init=0,hash_seed=6c616d69-6e61-4000-8000-000000000001"]);
            mkfs.args(*options).arg("-d").arg(&tree).arg(&image_path).arg("256K");
            run_tool(&mut mkfs, &[0]);
            if Path::new(E2FSCK).exists() {
                run_tool(Command::new(E2FSCK).env("E2FSPROGS_FAKE_TIME", "1000000000").arg("-fyD").arg(&image_path), &[0, 1]);
            }
            let mut image = std::fs::read(&image_path).expect("mkfs.ext4 wrote the image");
            normalise_times(&mut image);
            image
        })
        .collect();
    let _ = std::fs::remove_dir_all(&directory);
    images
}

fn le16(bytes: &[u8], at: usize) -> u16 {
    bytes.get(at..at + 2).map_or(0, |field| u16::from_le_bytes([field[0], field[1]]))
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |field| u32::from_le_bytes(field.try_into().unwrap()))
}

/// Writes the low `width` bytes of `value` at `at`, little-endian (what
/// does not fit in `bytes` is dropped).
fn put_le(bytes: &mut [u8], at: usize, width: usize, value: u64) {
    for index in 0..width {
        if let Some(byte) = bytes.get_mut(at + index) {
            *byte = (value >> (8 * index)) as u8;
        }
    }
}

/// The superblock's and every used inode's times set to one instant, then
/// checksums repaired: `mkfs -d` copies the source tree's times, which
/// differ per process, and e2fsck stamps its own clock.
fn normalise_times(image: &mut [u8]) {
    let Some(superblock) = checked_superblock(image) else { return };
    let start = SUPERBLOCK_OFFSET as usize;
    // s_mtime, s_wtime, s_lastcheck, s_mkfs_time; then the four high bytes.
    for time in [0x2C, 0x30, 0x40, 0x108] {
        put_le(image, start + time, 4, CLOCK);
    }
    put_le(image, start + 0x274, 4, 0);
    let size = usize::from(superblock.inode_size);
    for (_, inode) in inode_slots(image, &superblock, &descriptors(image, &superblock)) {
        if image[inode.clone()].iter().any(|&byte| byte != 0) {
            for time in [0x8, 0xC, 0x10, 0x84, 0x88, 0x8C, 0x90, 0x94].into_iter().filter(|&at| at + 4 <= size) {
                put_le(&mut image[inode.clone()], time, 4, CLOCK);
            }
        }
    }
    repair_checksums(image);
}

/// The superblock of `image` as the crate parses it, if it does.
fn checked_superblock(image: &[u8]) -> Option<Superblock> {
    let start = SUPERBLOCK_OFFSET as usize;
    let bytes: &[u8; SUPERBLOCK_SIZE] = image.get(start..start + SUPERBLOCK_SIZE)?.try_into().ok()?;
    Superblock::parse(bytes).ok()
}

/// Each group's descriptor bytes (as located by the crate's own rule), at
/// most [`REPAIR_GROUPS`] of them.
fn descriptors(image: &[u8], superblock: &Superblock) -> Vec<(u32, Range<usize>)> {
    let meta_bg = superblock.incompatible_features & incompatible::META_BG != 0;
    let size = usize::from(superblock.descriptor_size);
    let per_block = superblock.descriptors_per_block();
    let groups = superblock.group_count().min(REPAIR_GROUPS);
    let block_size = superblock.block_size as u64;
    (0..groups)
        .filter_map(|group| {
            let location = descriptor_block_location(superblock, group / per_block.max(1), meta_bg);
            let start = usize::try_from(location.checked_mul(block_size)?).ok()? + (group % per_block.max(1)) as usize * size;
            (start + size <= image.len()).then_some((group, start..start + size))
        })
        .collect()
}

/// Each inode slot of the first groups: its number and bytes.
fn inode_slots(image: &[u8], superblock: &Superblock, descriptors: &[(u32, Range<usize>)]) -> Vec<(u32, Range<usize>)> {
    let size = usize::from(superblock.inode_size);
    let per_group = superblock.inodes_per_group;
    let mut slots = Vec::new();
    for (group, range) in descriptors {
        let table = GroupDescriptor::parse(&image[range.clone()]).inode_table;
        let Some(start) = table.checked_mul(u64::from(superblock.block_size)).and_then(|start| usize::try_from(start).ok()) else { continue };
        for slot in 0..per_group.min(REPAIR_INODES_PER_GROUP) {
            let Some(number) = group.checked_mul(per_group).and_then(|first| first.checked_add(slot + 1)) else { break };
            let at = start + slot as usize * size;
            if at + size > image.len() {
                break;
            }
            slots.push((number, at..at + size));
        }
    }
    slots
}

/// Recomputes the checksums the crate checks first: the superblock's,
/// then (with a superblock that parses) every descriptor's and every
/// inode's of the first groups.
fn repair_checksums(image: &mut [u8]) {
    let start = SUPERBLOCK_OFFSET as usize;
    let Some(bytes) = image.get_mut(start..start + SUPERBLOCK_SIZE) else { return };
    if le32(bytes, 0x64) & read_only_compatible::METADATA_CSUM != 0 {
        let checksum = superblock_checksum((&*bytes).try_into().unwrap());
        put_le(bytes, 0x3FC, 4, u64::from(checksum));
    }
    let Some(superblock) = checked_superblock(image) else { return };
    let descriptors = descriptors(image, &superblock);
    for (group, range) in &descriptors {
        if let Some(checksum) = descriptor_checksum(&superblock, *group, &image[range.clone()]) {
            put_le(&mut image[range.clone()], 0x1E, 2, u64::from(checksum));
        }
    }
    if let Checksums::Crc32c { .. } = superblock.checksums {
        for (number, range) in inode_slots(image, &superblock, &descriptors) {
            repair_tree_blocks(image, &superblock, number, range.clone());
            repair_inode(&mut image[range], &superblock, number);
        }
    }
}

/// The block `number` of `image`, if it lies inside.
fn block_bytes(image_length: usize, number: u64, block_size: usize) -> Option<Range<usize>> {
    let start = usize::try_from(number).ok()?.checked_mul(block_size)?;
    (start.checked_add(block_size)? <= image_length).then_some(start..start + block_size)
}

/// The child blocks an extent index node points to (bounded by the
/// node's size, whatever its header claims).
fn index_children(node: &[u8]) -> Vec<u64> {
    let entries = usize::from(le16(node, 2)).min(node.len().saturating_sub(12) / 12);
    (0..entries)
        .map(|index| {
            let entry = 12 + 12 * index;
            u64::from(le32(node, entry + 4)) | (u64::from(le16(node, entry + 8)) << 32)
        })
        .collect()
}

/// The runs `(physical, length)` of an extent leaf node (bounded by the
/// node's size, whatever its header claims).
fn leaf_extents(node: &[u8]) -> Vec<(u64, u64)> {
    let entries = usize::from(le16(node, 2)).min(node.len().saturating_sub(12) / 12);
    (0..entries)
        .map(|index| {
            let entry = 12 + 12 * index;
            let length = u64::from(le16(node, entry + 4));
            let length = if length > 32768 { length - 32768 } else { length };
            (u64::from(le32(node, entry + 8)) | (u64::from(le16(node, entry + 6)) << 32), length)
        })
        .collect()
}

/// With `metadata_csum`: the checksums of the extent nodes one level below
/// inode `number`'s root and, for a directory, of its leaf blocks (those
/// ending in the checksum tail record).
fn repair_tree_blocks(image: &mut [u8], superblock: &Superblock, number: u32, inode: Range<usize>) {
    let bytes = &image[inode];
    if bytes.len() < 0x68 || le32(bytes, 0x20) & inode_flags::EXTENTS == 0 {
        return;
    }
    let seed = inode_checksum_seed(superblock, InodeNumber(number), le32(bytes, 0x64));
    let directory = le16(bytes, 0) & 0xF000 == 0x4000;
    let root = bytes[0x28..0x64].to_vec();
    let block_size = superblock.block_size as usize;
    let mut runs = Vec::new();
    if le16(&root, 6) == 0 {
        runs = leaf_extents(&root);
    } else {
        for child in index_children(&root) {
            let Some(range) = block_bytes(image.len(), child, block_size) else { continue };
            let node = &mut image[range];
            if let Some((computed, _)) = extent_node_checksum(node, seed) {
                let tail = 12 + 12 * usize::from(le16(node, 4));
                put_le(node, tail, 4, u64::from(computed));
            }
            if le16(node, 6) == 0 {
                runs.extend(leaf_extents(node));
            }
        }
    }
    if !directory {
        return;
    }
    let blocks = runs.into_iter().flat_map(|(physical, length)| (0..length.min(32)).map(move |step| physical.wrapping_add(step)));
    for block in blocks.take(64) {
        let Some(range) = block_bytes(image.len(), block, block_size) else { continue };
        let leaf = &mut image[range];
        let tail = leaf.len() - TAIL_SIZE;
        let is_tail = le32(leaf, tail) == 0 && le16(leaf, tail + 4) == TAIL_SIZE as u16 && le16(leaf, tail + 6) == 0xDE00;
        if is_tail {
            let checksum = leaf_checksum(&leaf[..tail], seed);
            put_le(leaf, tail + 8, 4, u64::from(checksum));
        }
    }
}

/// The `metadata_csum` inode checksum (the crate's rule in `inode.rs`):
/// crc32c from the inode's seed over its bytes with `i_checksum_lo` and,
/// when `i_extra_isize` covers it, `i_checksum_hi` read as zeros.
fn repair_inode(inode: &mut [u8], superblock: &Superblock, number: u32) {
    if inode.len() < 128 || inode.iter().all(|&byte| byte == 0) {
        return;
    }
    let seed = inode_checksum_seed(superblock, InodeNumber(number), le32(inode, 0x64));
    let high = inode.len() > 128 && 0x84 <= 128 + usize::from(le16(inode, 0x80));
    let mut crc = ext4::checksum::crc32c(seed, &inode[..0x7C]);
    crc = ext4::checksum::crc32c(crc, &[0, 0]);
    crc = ext4::checksum::crc32c(crc, &inode[0x7E..0x82.min(inode.len())]);
    if inode.len() > 128 {
        let rest = if high {
            crc = ext4::checksum::crc32c(crc, &[0, 0]);
            0x84
        } else {
            0x82
        };
        crc = ext4::checksum::crc32c(crc, &inode[rest..]);
    }
    put_le(inode, 0x7C, 2, u64::from(crc));
    if high {
        put_le(inode, 0x82, 2, u64::from(crc >> 16));
    }
}

/// Where a sample's metadata is, found by walking it with the crate.
fn analyse(bytes: Vec<u8>) -> Sample {
    let fs = Ext4::open(MemoryDisk::new(bytes.clone())).expect("a sample image opens");
    let block_size = fs.superblock().block_size as usize;
    let block = |number: u64| number as usize * block_size..(number as usize + 1) * block_size;
    let mut sample = Sample { bytes, hot: vec![SUPERBLOCK_BYTES], inodes: Vec::new(), blocks: Vec::new() };
    let meta_bg = fs.superblock().incompatible_features & incompatible::META_BG != 0;
    for table_block in 0..fs.superblock().descriptor_block_count() {
        sample.hot.push(block(descriptor_block_location(fs.superblock(), table_block, meta_bg)));
    }
    let mut seen = HashSet::new();
    let mut pending = vec![fs.root()];
    while let Some(number) = pending.pop() {
        if !seen.insert(number) {
            continue;
        }
        let inode = fs.inode(number).expect("a sample's inodes read");
        let location = locate_inode(fs.superblock(), fs.groups(), number).expect("a sample's inodes are located");
        let start = block(location.block).start + location.offset;
        sample.inodes.push(start..start + usize::from(fs.superblock().inode_size));
        for tree_block in mapping_blocks(&inode) {
            sample.blocks.push(block(tree_block));
        }
        let has_blocks = inode.file_type == FileType::Directory || (inode.file_type == FileType::Symlink && inode.sectors > 0);
        let blocks = inode.size.div_ceil(block_size as u64);
        let mut logical = 0;
        while has_blocks && logical < blocks {
            let run = fs.map_block(&inode, logical).expect("a sample's blocks map");
            if let Run::Data { physical, length } = run {
                (physical..physical + length.min(blocks - logical)).for_each(|data| sample.blocks.push(block(data)));
            }
            logical += run.length();
        }
        if inode.file_type == FileType::Directory {
            pending.extend(fs.read_dir(&inode).expect("a sample's directories read").iter().map(|entry| entry.inode));
        }
    }
    sample.hot.extend(sample.inodes.iter().cloned());
    sample.hot.extend(sample.blocks.iter().cloned());
    sample.hot.sort_by_key(|range| range.start);
    sample.hot.dedup();
    sample
}

/// The extent tree's non-root nodes below `inode`'s root (one level is all
/// the samples have), or a block map's indirect blocks.
fn mapping_blocks(inode: &Inode) -> Vec<u64> {
    let area = &inode.block_area;
    if inode.flags & inode_flags::EXTENTS == 0 {
        return (12..15).map(|slot| u64::from(le32(area, slot * 4))).filter(|&block| block != 0).collect();
    }
    if le16(area, 6) == 0 {
        return Vec::new();
    }
    index_children(area)
}

/// The sample `input` was most likely made from: the one of about its
/// length whose superblock differs from it in the fewest bytes.
fn closest_sample(input: &[u8]) -> Option<&'static Sample> {
    let input_superblock = input.get(SUPERBLOCK_BYTES).unwrap_or_default();
    let differing = |sample: &&Sample| sample.bytes[SUPERBLOCK_BYTES].iter().zip(input_superblock).filter(|(left, right)| left != right).count();
    samples().iter().filter(|sample| sample.bytes.len().abs_diff(input.len()) <= 4096).min_by_key(differing)
}

/// The label of an error: its kind, and for a corruption the structure
/// and the check that failed (a fixed text, so labels stay few).
fn error_label(error: &Error) -> String {
    match error {
        Error::Corrupted(corruption) => {
            let problem = match corruption.problem {
                Problem::Invalid(what) => what.to_string(),
                other => kind_of(&other),
            };
            format!("{} {problem}", kind_of(&corruption.structure))
        }
        Error::Unsupported(unsupported) => format!("Unsupported {}", kind_of(unsupported)),
        other => kind_of(other),
    }
}

/// A count as its power of two (0, 1, 2, 4, 8, …).
fn bucket(count: usize) -> usize {
    count.checked_ilog2().map_or(0, |log| 1 << log)
}

/// One walk of an opened image.
struct Walk<'a> {
    fs: &'a Ext4<MemoryDisk>,
    seen: HashSet<InodeNumber>,
    entries: usize,
    resolves: usize,
    first_error: Option<Error>,
    buffer: Vec<u8>,
    /// One block as read through a file, and as on the device.
    through_file: Vec<u8>,
    on_device: Vec<u8>,
}

impl Walk<'_> {
    fn note<T>(&mut self, result: Result<T, Error>) -> Option<T> {
        result.map_err(|error| self.first_error.get_or_insert(error)).ok()
    }

    /// Lists `directory` and visits each entry (not "." and "..").
    fn directory(&mut self, directory: &Inode, path: &[u8], depth: usize) {
        let Some(entries) = self.note(self.fs.read_dir(directory)) else { return };
        let inodes_count = self.fs.superblock().inodes_count;
        for entry in &entries {
            let name = &entry.name;
            assert!(!name.is_empty() && name.len() <= MAX_NAME_LENGTH, "a name of {} bytes was accepted", name.len());
            assert!(!name.iter().any(|&byte| byte == 0 || byte == b'/'), "a name with NUL or '/' was accepted: {name:?}");
            assert!(entry.inode.0 != 0 && entry.inode.0 <= inodes_count, "an entry's inode is out of range: {entry:?}");
        }
        if let Some(first) = entries.iter().find(|entry| entry.name != b"." && entry.name != b"..") {
            let found = self.note(self.fs.lookup(directory, &first.name));
            assert!(found.is_none_or(|found| found.is_some()), "lookup missed a name read_dir listed: {first:?}");
        }
        for entry in entries {
            if entry.name == b"." || entry.name == b".." {
                continue;
            }
            if self.entries >= MAX_ENTRIES {
                return;
            }
            self.entries += 1;
            let mut child_path = path.to_vec();
            child_path.push(b'/');
            child_path.extend_from_slice(&entry.name);
            self.visit(entry.inode, &child_path, depth + 1);
        }
    }

    /// Stats inode `number` (reached by `path`) and reads what it holds.
    fn visit(&mut self, number: InodeNumber, path: &[u8], depth: usize) {
        if !path.is_empty() && self.resolves < MAX_RESOLVES {
            self.resolves += 1;
            let resolved = self.note(self.fs.resolve(path));
            if let Some(Resolution::Symlink { rest, .. }) = resolved {
                assert!(rest <= path.len(), "a symlink's rest lies past the path");
            }
        }
        if !self.seen.insert(number) {
            return;
        }
        let Some(inode) = self.note(self.fs.inode(number)) else { return };
        check_inode(&inode, number);
        match inode.file_type {
            FileType::Directory if depth < MAX_DEPTH => {
                self.runs(&inode);
                self.directory(&inode, path, depth);
            }
            FileType::Directory => {}
            FileType::Regular => {
                self.runs(&inode);
                self.file(&inode);
            }
            FileType::Symlink => self.link(&inode),
            _ => {
                let mut byte = [0u8; 1];
                assert!(self.fs.read(&inode, 0, &mut byte).is_err(), "a {:?} had data", inode.file_type);
            }
        }
    }

    /// Reads up to [`FILE_BYTES`] of a regular file, checking each read
    /// stays inside the buffer and `i_size`.
    fn file(&mut self, inode: &Inode) {
        let mut offset = 0u64;
        let mut buffer = std::mem::take(&mut self.buffer);
        while offset < FILE_BYTES {
            let Some(count) = self.note(self.fs.read(inode, offset, &mut buffer)) else { break };
            assert!(count <= buffer.len(), "read returned {count} bytes into {}", buffer.len());
            assert!(offset + count as u64 <= inode.size, "read past i_size {}: {count} at {offset}", inode.size);
            if count == 0 {
                assert!(offset >= inode.size, "a read inside the file returned nothing");
                break;
            }
            offset += count as u64;
        }
        self.buffer = buffer;
        let mut byte = [0u8; 1];
        let far = self.note(self.fs.read(inode, u64::MAX, &mut byte));
        assert!(far.is_none_or(|count| count == 0), "a read at the largest offset returned data");
    }

    /// Maps `inode`'s blocks run by run (at most [`MAX_RUNS`]), checking
    /// each run is not empty and lies inside the file system, and that the
    /// run's first block read through the file is the device's block there
    /// (zeros for a hole or an unwritten run).
    fn runs(&mut self, inode: &Inode) {
        let superblock = self.fs.superblock();
        let block_size = u64::from(superblock.block_size);
        let blocks = inode.size.div_ceil(block_size);
        let mut logical = 0u64;
        for _ in 0..MAX_RUNS {
            if logical >= blocks {
                return;
            }
            let Some(run) = self.note(self.fs.map_block(inode, logical)) else { return };
            assert!(run.length() > 0, "an empty run at block {logical}");
            self.on_device.fill(0);
            if let Run::Data { physical, length } = run {
                let end = physical.checked_add(length);
                let inside = physical > u64::from(superblock.first_data_block) && end.is_some_and(|end| end <= superblock.blocks_count);
                assert!(inside, "a run outside the file system: {run:?}");
                let sector = physical * (block_size / SECTOR_SIZE as u64);
                self.fs.device().read_sectors(sector, &mut self.on_device).expect("a block inside the file system reads");
            }
            let read = self.fs.read(inode, logical * block_size, &mut self.through_file);
            if let Some(count) = self.note(read) {
                assert!(self.through_file[..count] == self.on_device[..count], "block {logical} reads other bytes than its {run:?}");
            }
            logical = logical.saturating_add(run.length());
        }
    }

    fn link(&mut self, inode: &Inode) {
        let Some(target) = self.note(self.fs.read_link(inode)) else { return };
        assert!(!target.is_empty() && target.len() as u64 <= MAX_TARGET_LENGTH, "a link target of {} bytes", target.len());
        assert!(!target.contains(&0), "a link target with NUL");
        assert_eq!(target.len() as u64, inode.size, "a link target disagrees with i_size");
    }
}

/// What [`Ext4::inode`] promises about an inode it returns.
fn check_inode(inode: &Inode, number: InodeNumber) {
    assert_eq!(inode.number, number, "inode() returned another inode");
    assert_eq!(FileType::from_mode(inode.mode), Some(inode.file_type), "the type disagrees with i_mode");
    assert!(inode.links_count > 0, "a free inode was returned");
    assert!(inode.size <= i64::MAX as u64, "i_size above 2^63 was accepted");
    let _ = (inode.permissions(), inode.is_htree(), inode.uses_extents(), inode.uid, inode.gid);
    let _ = (inode.access_time, inode.change_time, inode.modification_time, inode.creation_time);
}

/// Reads the first [`MAX_STATS`] inodes whether a directory names them or
/// not, and numbers no file system has (they must be out of range).
fn stat_inodes(fs: &Ext4<MemoryDisk>) {
    let count = fs.superblock().inodes_count;
    for number in 1..=count.min(MAX_STATS) {
        if let Ok(inode) = fs.inode(InodeNumber(number)) {
            check_inode(&inode, InodeNumber(number));
        }
    }
    for number in [0, count.saturating_add(1), u32::MAX].into_iter().filter(|&number| number == 0 || number > count) {
        assert!(matches!(fs.inode(InodeNumber(number)), Err(Error::InodeOutOfRange(_))), "inode {number} is out of range");
    }
}

/// Opens `input` and walks it; the outcome label.
fn open_and_walk(input: &[u8]) -> String {
    let mut device = input.to_vec();
    device.resize(input.len().max(DEVICE_BYTES), 0);
    let fs = match Ext4::open(MemoryDisk::new(device)) {
        Ok(fs) => fs,
        Err(error) => return format!("open:{}", error_label(&error)),
    };
    let statistics = fs.statistics();
    assert_eq!(statistics.block_size, fs.superblock().block_size);
    assert!(fs.groups().iter().count() as u64 <= u64::from(fs.superblock().group_count()), "more descriptors than groups");
    let mount = if fs.mount() == Mount::ReadWrite { "rw" } else { "ro" };
    let checksums = match fs.superblock().checksums {
        Checksums::Crc32c { .. } => "crc32c",
        Checksums::GroupDescriptorCrc16 => "crc16",
        Checksums::None => "no csum",
    };
    let format = format!("{checksums} {}K", fs.superblock().block_size / 1024);
    let block_size = fs.superblock().block_size as usize;
    let mut walk = Walk {
        fs: &fs,
        seen: HashSet::new(),
        entries: 0,
        resolves: 0,
        first_error: None,
        buffer: vec![0; CHUNK],
        through_file: vec![0; block_size],
        on_device: vec![0; block_size],
    };
    match walk.note(fs.resolve(b"/")) {
        Some(Resolution::Found(root)) => assert_eq!(root, fs.root(), "/ resolved to another inode"),
        Some(other) => panic!("/ resolved to {other:?}"),
        None => {}
    }
    walk.visit(fs.root(), b"", 0);
    stat_inodes(&fs);
    match walk.first_error {
        Some(error) => format!("{format}: walk:{} ({} entries)", error_label(&error), bucket(walk.entries)),
        None => format!("{format}: walk ok {} {mount}", bucket(walk.entries)),
    }
}

/// Superblock fields worth setting to edge values: offset and width.
#[rustfmt::skip]
const SUPERBLOCK_FIELDS: [(usize, usize); 22] = [
    (0x0, 4), (0x4, 4), (0x8, 4),             // inodes, blocks, reserved blocks
    (0x14, 4), (0x18, 4), (0x1C, 4),          // first data block, log block and cluster size
    (0x20, 4), (0x24, 4), (0x28, 4),          // blocks, clusters and inodes per group
    (0x4C, 4), (0x54, 4), (0x58, 2),          // revision, first inode, inode size
    (0x5C, 4), (0x60, 4), (0x64, 4),          // compat, incompat, ro_compat features
    (0xCE, 2), (0xE0, 4), (0xFE, 2),          // reserved GDT blocks, journal inode, descriptor size
    (0x104, 4), (0x150, 4), (0x15C, 2), (0x174, 1), // first meta_bg, blocks high, min extra isize, groups per flex
];

/// Inode fields: mode, size, links, blocks, flags; the extent header
/// (magic, entries, max, depth) and first entry (first block, length,
/// start high and low); file ACL, size high, extra isize.
#[rustfmt::skip]
const INODE_FIELDS: [(usize, usize); 16] = [
    (0x0, 2), (0x4, 4), (0x1A, 2), (0x1C, 4), (0x20, 4),
    (0x28, 2), (0x2A, 2), (0x2C, 2), (0x2E, 2), (0x34, 4), (0x38, 2), (0x3A, 2), (0x3C, 4),
    (0x68, 4), (0x6C, 4), (0x80, 2),
];

/// Descriptor fields: bitmaps, inode table, flags, unused inodes.
const DESCRIPTOR_FIELDS: [(usize, usize); 5] = [(0x0, 4), (0x4, 4), (0x8, 4), (0x12, 2), (0x1C, 2)];

/// A field of a sample set to an edge value (feature words get one bit
/// flipped instead, so the other features stay): where and how wide.
fn pick_field(sample: &Sample, random: &mut Rng) -> (usize, usize) {
    match random.below(4) {
        0 => {
            let (offset, width) = SUPERBLOCK_FIELDS[random.below(SUPERBLOCK_FIELDS.len())];
            (SUPERBLOCK_OFFSET as usize + offset, width)
        }
        1 if !sample.inodes.is_empty() => {
            let inode = &sample.inodes[random.below(sample.inodes.len())];
            let (offset, width) = INODE_FIELDS[random.below(INODE_FIELDS.len())];
            (inode.start + offset, width)
        }
        2 if !sample.blocks.is_empty() => {
            // A directory record or extent entry field near a block's start.
            let block = &sample.blocks[random.below(sample.blocks.len())];
            (block.start + 4 * random.below(16), [1, 2, 4][random.below(3)])
        }
        _ => {
            let descriptors = checked_superblock(&sample.bytes).map(|superblock| descriptors(&sample.bytes, &superblock));
            let start = descriptors.and_then(|list| list.first().map(|(_, range)| range.start)).unwrap_or(2048);
            let (offset, width) = DESCRIPTOR_FIELDS[random.below(DESCRIPTOR_FIELDS.len())];
            (start + offset, width)
        }
    }
}

impl Target for Ext4Image {
    fn name(&self) -> &'static str {
        "ext4"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        samples().iter().map(|sample| sample.bytes.clone()).collect()
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let sample = &samples()[random.below(samples().len())];
        let mut image = sample.bytes.clone();
        for _ in 0..1 + random.below(3) {
            let (at, width) = pick_field(sample, random);
            let feature_word = (0x5C + 1024..=0x64 + 1024).contains(&at);
            let value = if feature_word { u64::from(le32(&image, at) ^ (1 << random.below(32))) } else { boundary_value(random) };
            put_le(&mut image, at, width, value);
        }
        repair_checksums(&mut image);
        image
    }

    fn max_len(&self) -> usize {
        samples().iter().map(|sample| sample.bytes.len()).max().unwrap_or(0)
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        match closest_sample(input) {
            Some(sample) => sample.hot.clone(),
            None => {
                let start = 0..input.len().min(64 * 1024);
                vec![start]
            }
        }
    }

    fn repair(&self, input: &mut Vec<u8>) {
        repair_checksums(input);
    }

    fn run(&self, input: &[u8]) -> String {
        open_and_walk(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_opens_and_walks_cleanly() {
        for sample in samples() {
            let label = open_and_walk(&sample.bytes);
            assert!(label.contains(": walk ok"), "{label}");
            assert!(sample.inodes.len() >= 10 && !sample.blocks.is_empty(), "the analysis found little");
            assert_eq!(Ext4Image.hot_ranges(&sample.bytes), sample.hot, "a sample is not its own closest sample");
        }
    }

    #[test]
    fn repair_makes_a_changed_inode_and_superblock_pass_their_checksums() {
        let sample = &samples()[0];
        let mut image = sample.bytes.clone();
        image[SUPERBLOCK_OFFSET as usize + 0x16C] ^= 1; // an unused word of the superblock
        let inode = sample.inodes[1].start;
        image[inode + 0x8] ^= 1; // an access time
        assert!(open_and_walk(&image).starts_with("open:Superblock ChecksumMismatch"), "{}", open_and_walk(&image));
        repair_checksums(&mut image);
        assert!(open_and_walk(&image).contains(": walk ok"), "{}", open_and_walk(&image));
    }

    #[test]
    fn samples_are_the_same_in_every_process() {
        let again = make_images();
        for (made, sample) in again.iter().zip(samples()) {
            let differ: Vec<usize> = (0..made.len()).filter(|&at| made[at] != sample.bytes[at]).take(40).collect();
            assert!(*made == sample.bytes, "two runs of mkfs.ext4 made different images: {differ:?}");
        }
    }
}
