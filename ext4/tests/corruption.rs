//! Damaged images never panic, hang or allocate without bound: thousands of
//! deterministic byte flips in the superblock, group descriptors, inode
//! table, extent blocks, directory blocks and every other structure a walk
//! reads, each followed by opening the image and walking every file. With
//! `metadata_csum`, a flip in a checksummed structure must be reported as
//! corruption of that very structure, never accepted.

mod common;

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use common::{make_image, open, read_all, walk_everything, PatchedDisk};
use ext4::{Error, Ext4, InodeNumber, MemoryDisk, Resolution, Run, Structure};

/// xorshift64: deterministic and good enough to pick bytes.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// What a flip inside a target must cause.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Only: no panic, no hang.
    Survival,
    /// `open` fails (unless the flip turned `metadata_csum` off).
    OpenFails,
    /// `open` reports corruption of this structure.
    OpenCorrupt(Structure),
    /// Reading this inode reports its corruption.
    InodeCorrupt(u32),
    /// Reading this directory reports corruption of one of its blocks.
    DirectoryCorrupt(u32),
    /// Reading this file reports corruption of one of its extent blocks.
    ExtentCorrupt(u32),
}

struct Target {
    name: &'static str,
    ranges: Vec<Range<usize>>,
    expect: Expect,
}

fn number(fs: &Ext4<MemoryDisk>, path: &str) -> InodeNumber {
    match fs.resolve(path.as_bytes()).unwrap() {
        Resolution::Found(number) => number,
        other => panic!("{path}: {other:?}"),
    }
}

fn block_range(fs: &Ext4<MemoryDisk>, block: u64) -> Range<usize> {
    let size = fs.superblock().block_size as usize;
    block as usize * size..(block as usize + 1) * size
}

fn physical(fs: &Ext4<MemoryDisk>, inode: InodeNumber, logical: u64) -> u64 {
    match fs.map_block(&fs.inode(inode).unwrap(), logical).unwrap() {
        Run::Data { physical, .. } => physical,
        other => panic!("block {logical} of {inode:?}: {other:?}"),
    }
}

fn le32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

/// The checksummed structures of a `metadata_csum` image with 1 KiB blocks.
fn checksummed_targets(image: &[u8]) -> Vec<Target> {
    let fs = open(image).unwrap();
    let block_size = fs.superblock().block_size as usize;
    let inode_size = usize::from(fs.superblock().inode_size);
    let inode_range = |number: InodeNumber| {
        let location = ext4::locate_inode(fs.superblock(), fs.groups(), number).unwrap();
        let start = location.block as usize * block_size + location.offset;
        start..start + inode_size
    };
    let megabyte = number(&fs, "/megabyte");
    let many = number(&fs, "/many");
    let fragmented = number(&fs, "/fragmented");
    let root_block = physical(&fs, fs.root(), 0);
    let many_root = block_range(&fs, physical(&fs, many, 0));
    let count = usize::from(u16::from_le_bytes([image[many_root.start + 34], image[many_root.start + 35]]));
    let limit = usize::from(u16::from_le_bytes([image[many_root.start + 32], image[many_root.start + 33]]));
    let tail = many_root.start + 32 + 8 * limit;
    let fragmented_root = fs.inode(fragmented).unwrap().block_area;
    let index_node = u64::from(le32(&fragmented_root, 16));
    let leaf = u64::from(le32(image, block_range(&fs, index_node).start + 16));
    let superblock = 1024..2048;
    let first_descriptor = 2 * block_size..2 * block_size + 64;
    vec![
        Target { name: "superblock", ranges: vec![superblock], expect: Expect::OpenFails },
        Target {
            name: "group descriptor 0",
            ranges: vec![first_descriptor],
            expect: Expect::OpenCorrupt(Structure::GroupDescriptor(0)),
        },
        Target {
            name: "inode of /megabyte",
            ranges: vec![inode_range(megabyte)],
            expect: Expect::InodeCorrupt(megabyte.0),
        },
        Target { name: "root inode", ranges: vec![inode_range(fs.root())], expect: Expect::InodeCorrupt(2) },
        Target {
            name: "root directory block",
            ranges: vec![block_range(&fs, root_block)],
            expect: Expect::DirectoryCorrupt(2),
        },
        Target {
            name: "htree root of /many (checksummed part)",
            ranges: vec![many_root.start..many_root.start + 32 + 8 * count, tail..tail + 8],
            expect: Expect::DirectoryCorrupt(many.0),
        },
        Target {
            name: "htree leaf of /many",
            ranges: vec![block_range(&fs, physical(&fs, many, 1))],
            expect: Expect::DirectoryCorrupt(many.0),
        },
        Target {
            name: "extent index node",
            ranges: vec![block_range(&fs, index_node)],
            expect: Expect::ExtentCorrupt(fragmented.0),
        },
        Target {
            name: "extent leaf",
            ranges: vec![block_range(&fs, leaf)],
            expect: Expect::ExtentCorrupt(fragmented.0),
        },
    ]
}

/// Every structure a walk reads: the superblock and descriptor table, each
/// reachable inode, directory blocks, extent index and leaf blocks,
/// indirect blocks and long symlink blocks; each range is chosen equally
/// often, so small structures get their share of flips.
fn metadata(image: &[u8]) -> Vec<Target> {
    let fs = open(image).unwrap();
    let superblock = fs.superblock();
    let block_size = superblock.block_size as usize;
    let table_start = (superblock.superblock_block() as usize + 1) * block_size;
    let table_length = superblock.group_count() as usize * usize::from(superblock.descriptor_size);
    // The superblock's defined fields (the rest is reserved padding).
    let geometry = vec![1024..1024 + 0x280, 1024 + 0x3FC..2048, table_start..table_start + table_length];
    let mut ranges = Vec::new();
    let mut pending = vec![fs.root()];
    let mut seen = std::collections::HashSet::new();
    while let Some(number) = pending.pop() {
        if !seen.insert(number) {
            continue;
        }
        let inode = fs.inode(number).unwrap();
        let location = ext4::locate_inode(superblock, fs.groups(), number).unwrap();
        let start = location.block as usize * block_size + location.offset;
        ranges.push(start..start + usize::from(superblock.inode_size));
        match inode.file_type {
            ext4::FileType::Directory => {
                pending.extend(fs.read_dir(&inode).unwrap().iter().map(|entry| entry.inode));
                for logical in 0..inode.size / block_size as u64 {
                    ranges.push(block_range(&fs, physical(&fs, number, logical)));
                }
            }
            ext4::FileType::Symlink if inode.sectors > 0 => ranges.push(block_range(&fs, physical(&fs, number, 0))),
            _ => {}
        }
        let mut mapping_blocks = Vec::new();
        if inode.uses_extents() {
            extent_node_blocks(image, block_size, &inode.block_area, &mut mapping_blocks);
        } else if inode.file_type != ext4::FileType::Symlink {
            for (slot, levels) in [(12, 1), (13, 2), (14, 3)] {
                indirect_blocks(image, block_size, le32(&inode.block_area, slot * 4), levels, &mut mapping_blocks);
            }
        }
        ranges.extend(mapping_blocks.into_iter().map(|block| block_range(&fs, block)));
    }
    vec![
        Target { name: "superblock and descriptors", ranges: geometry, expect: Expect::Survival },
        Target { name: "inodes, directories and mapping blocks", ranges, expect: Expect::Survival },
    ]
}

fn extent_node_blocks(image: &[u8], block_size: usize, node: &[u8], blocks: &mut Vec<u64>) {
    let entries = usize::from(u16::from_le_bytes([node[2], node[3]]));
    let depth = u16::from_le_bytes([node[6], node[7]]);
    if depth == 0 {
        return;
    }
    for entry in 0..entries {
        let child = u64::from(le32(node, 12 + 12 * entry + 4));
        blocks.push(child);
        let start = child as usize * block_size;
        extent_node_blocks(image, block_size, &image[start..start + block_size], blocks);
    }
}

fn indirect_blocks(image: &[u8], block_size: usize, block: u32, levels: u32, blocks: &mut Vec<u64>) {
    if block == 0 {
        return;
    }
    blocks.push(u64::from(block));
    if levels > 1 {
        let start = block as usize * block_size;
        for slot in 0..block_size / 4 {
            indirect_blocks(image, block_size, le32(image, start + slot * 4), levels - 1, blocks);
        }
    }
}

/// Flips 1 to 3 bytes inside `ranges`; returns the patches that change something.
fn flips(random: &mut Random, image: &[u8], ranges: &[Range<usize>]) -> Vec<(usize, u8)> {
    let mut patches: Vec<(usize, u8)> = Vec::new();
    for _ in 0..1 + random.below(3) {
        let range = &ranges[random.below(ranges.len())];
        let offset = range.start + random.below(range.len());
        let mask = 1 + random.below(255) as u8;
        let current = patches.iter().find(|(at, _)| *at == offset).map_or(image[offset], |&(_, value)| value);
        patches.retain(|(at, _)| *at != offset);
        patches.push((offset, current ^ mask));
    }
    patches.retain(|&(offset, value)| image[offset] != value);
    patches
}

fn is_corruption_of<T>(result: &Result<T, Error>, wanted: impl Fn(Structure) -> bool) -> bool {
    matches!(result, Err(Error::Corrupted(corruption)) if wanted(corruption.structure))
}

/// How the cases of one test ended: open failed, walk failed, all read.
#[derive(Default, Debug)]
struct Outcomes {
    open_failed: usize,
    walk_failed: usize,
    walked: usize,
}

fn run_case(base: &Arc<Vec<u8>>, patches: Vec<(usize, u8)>, expect: Expect, label: &str, outcomes: &mut Outcomes) {
    let metadata_csum_off = patches.iter().any(|&(offset, value)| offset == 1024 + 0x65 && value & 0x4 == 0);
    let fs = Ext4::open(PatchedDisk { base: base.clone(), patches: patches.clone() });
    let context = || format!("{label}: patches {patches:?}");
    match expect {
        Expect::Survival => {}
        Expect::OpenFails => assert!(fs.is_err() || metadata_csum_off, "{}: opened", context()),
        Expect::OpenCorrupt(structure) => {
            assert!(is_corruption_of(&fs, |found| found == structure), "{}: {:?}", context(), fs.err())
        }
        Expect::InodeCorrupt(number) => {
            let result = fs.as_ref().map_err(|e| *e).and_then(|fs| fs.inode(InodeNumber(number)));
            assert!(is_corruption_of(&result, |found| found == Structure::Inode(number)), "{}: {result:?}", context());
        }
        Expect::DirectoryCorrupt(number) => {
            let fs = fs.as_ref().unwrap();
            let result = fs.read_dir(&fs.inode(InodeNumber(number)).unwrap());
            let wanted = |found| matches!(found, Structure::DirectoryBlock { inode, .. } if inode == number);
            assert!(is_corruption_of(&result, wanted), "{}: {result:?}", context());
        }
        Expect::ExtentCorrupt(number) => {
            let fs = fs.as_ref().unwrap();
            let result = read_all(fs, &fs.inode(InodeNumber(number)).unwrap(), u64::MAX);
            let wanted = |found| matches!(found, Structure::ExtentNode { inode, .. } if inode == number);
            assert!(is_corruption_of(&result, wanted), "{}: {:?}", context(), result.err());
        }
    }
    match fs.map(|fs| walk_everything(&fs, 64 << 10)) {
        Err(_) => outcomes.open_failed += 1,
        Ok(Err(_)) => outcomes.walk_failed += 1,
        Ok(Ok(_)) => outcomes.walked += 1,
    }
}

fn run_targets(image: Vec<u8>, targets: Vec<Target>, cases_per_target: usize, seed: u64) {
    let base = Arc::new(image);
    let mut random = Random(seed);
    let mut outcomes = Outcomes::default();
    for target in &targets {
        for case in 0..cases_per_target {
            let patches = flips(&mut random, &base, &target.ranges);
            let expect = if patches.is_empty() { Expect::Survival } else { target.expect };
            run_case(&base, patches, expect, &format!("{} case {case}", target.name), &mut outcomes);
        }
    }
    eprintln!("{outcomes:?}");
}

#[test]
fn flips_in_checksummed_structures_are_reported_as_their_corruption() {
    let started = Instant::now();
    let image = make_image(1024, 16, &[]);
    let targets = checksummed_targets(&image);
    run_targets(image, targets, 150, 0x9E37_79B9_7F4A_7C15);
    eprintln!("checksummed targets: {:?}", started.elapsed());
}

#[test]
fn flips_in_any_metadata_of_a_checksummed_image_never_panic() {
    let image = make_image(1024, 16, &[]);
    let targets = metadata(&image);
    run_targets(image, targets, 1500, 0xD1B5_4A32_D192_ED03);
}

#[test]
fn flips_in_any_metadata_of_an_image_without_checksums_never_panic() {
    let features = "^has_journal,^extent,^64bit,^metadata_csum,^flex_bg,^huge_file,^dir_nlink,^extra_isize";
    let image = make_image(2048, 16, &["-I", "128", "-O", features]);
    let targets = metadata(&image);
    run_targets(image, targets, 1500, 0x2545_F491_4F6C_DD1D);
}

#[test]
fn flips_in_any_metadata_of_a_block_map_image_never_panic() {
    let image = make_image(1024, 16, &["-O", "^extent,^64bit,^metadata_csum,uninit_bg"]);
    let targets = metadata(&image);
    run_targets(image, targets, 1500, 0x0123_4567_89AB_CDEF);
}
