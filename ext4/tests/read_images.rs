//! Real images made by mkfs.ext4 from a known tree read back exactly:
//! every name, type, mode, owner, size, link count, time and byte, in
//! several layouts (block sizes, checksums, descriptor sizes, extents or
//! block maps, meta_bg).

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{debugfs, make_image, open, read_all, source_tree};
use ext4::{Checksums, Error, Ext4, FileType, Inode, InodeNumber, MemoryDisk, Mount, Resolution};

fn source_type(metadata: &fs::Metadata) -> FileType {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    match () {
        _ if kind.is_symlink() => FileType::Symlink,
        _ if kind.is_dir() => FileType::Directory,
        _ if kind.is_fifo() => FileType::Fifo,
        _ if kind.is_char_device() => FileType::CharacterDevice,
        _ => FileType::Regular,
    }
}

/// Compares the directory `inode` with the source directory `path`, recursively.
fn compare_directory(fs: &Ext4<MemoryDisk>, inode: &Inode, parent: InodeNumber, path: &Path, is_root: bool) {
    let entries = fs.read_dir(inode).unwrap();
    let dot = entries.iter().find(|entry| entry.name == b".").expect("no '.' entry");
    let dot_dot = entries.iter().find(|entry| entry.name == b"..").expect("no '..' entry");
    assert_eq!((dot.inode, dot_dot.inode), (inode.number, parent), "'.' and '..' of {path:?}");
    let in_image: BTreeSet<Vec<u8>> = entries
        .iter()
        .map(|entry| entry.name.clone())
        .filter(|name| name != b"." && name != b".." && !(is_root && name == b"lost+found"))
        .collect();
    let in_source: BTreeSet<Vec<u8>> =
        fs::read_dir(path).unwrap().map(|entry| entry.unwrap().file_name().into_encoded_bytes()).collect();
    assert_eq!(in_image, in_source, "names in {path:?}");
    let mut subdirectories = 0;
    for entry in entries.iter().filter(|entry| in_source.contains(&entry.name)) {
        let source = path.join(std::ffi::OsStr::from_encoded_bytes_unchecked_safe(&entry.name));
        let metadata = fs::symlink_metadata(&source).unwrap();
        let child = fs.inode(entry.inode).unwrap();
        compare_metadata(&child, &metadata, &source);
        if fs.superblock().has_file_types() {
            assert_eq!(entry.file_type, Some(child.file_type), "dirent type of {source:?}");
        }
        match child.file_type {
            FileType::Directory => {
                subdirectories += 1;
                compare_directory(fs, &child, inode.number, &source, false);
            }
            FileType::Regular => {
                assert!(read_all(fs, &child, u64::MAX).unwrap() == fs::read(&source).unwrap(), "contents of {source:?}")
            }
            FileType::Symlink => {
                let target = fs::read_link(&source).unwrap().into_os_string().into_encoded_bytes();
                assert_eq!(fs.read_link(&child).unwrap(), target, "target of {source:?}");
            }
            _ => assert_eq!(fs.read(&child, 0, &mut [0; 8]), Err(Error::NoData)),
        }
    }
    if !is_root {
        assert_eq!(u32::from(inode.links_count), 2 + subdirectories, "link count of directory {path:?}");
    }
}

fn compare_metadata(inode: &Inode, metadata: &fs::Metadata, path: &Path) {
    assert_eq!(inode.file_type, source_type(metadata), "type of {path:?}");
    assert_eq!(u32::from(inode.permissions()), metadata.mode() & 0o7777, "permissions of {path:?}");
    assert_eq!((inode.uid, inode.gid), (metadata.uid(), metadata.gid()), "owner of {path:?}");
    assert_eq!(inode.modification_time.seconds, metadata.mtime(), "mtime of {path:?}");
    if inode.file_type != FileType::Directory {
        assert_eq!(inode.size, metadata.size(), "size of {path:?}");
        assert_eq!(u64::from(inode.links_count), metadata.nlink(), "links of {path:?}");
    }
}

/// `OsStr::from_encoded_bytes_unchecked` without `unsafe`: names here are UTF-8.
trait FromBytes {
    fn from_encoded_bytes_unchecked_safe(bytes: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytes for std::ffi::OsStr {
    fn from_encoded_bytes_unchecked_safe(bytes: &[u8]) -> &std::ffi::OsStr {
        std::ffi::OsStr::new(std::str::from_utf8(bytes).unwrap())
    }
}

fn found(fs: &Ext4<MemoryDisk>, path: &str) -> Inode {
    match fs.resolve(path.as_bytes()) {
        Ok(Resolution::Found(number)) => fs.inode(number).unwrap(),
        other => panic!("resolve({path}) gave {other:?}"),
    }
}

/// Everything the tree holds reads back from `image`; paths resolve.
fn check_image(image: &[u8], expected_checksums: fn(Checksums) -> bool) -> Ext4<MemoryDisk> {
    let fs = open(image).unwrap();
    assert!(expected_checksums(fs.superblock().checksums), "checksums {:?}", fs.superblock().checksums);
    let root = fs.inode(fs.root()).unwrap();
    compare_directory(&fs, &root, fs.root(), source_tree(), true);
    check_paths(&fs);
    check_reads_at_offsets(&fs);
    let statistics = fs.statistics();
    assert_eq!(statistics.free_blocks, fs.superblock().free_blocks_count);
    assert_eq!(statistics.free_inodes, fs.superblock().free_inodes_count);
    assert_eq!(statistics.inodes - statistics.free_inodes, used_inodes(&fs));
    fs
}

/// The reserved inodes below `s_first_ino` (all marked used, some free
/// of links) and the readable ones from there on.
fn used_inodes(fs: &Ext4<MemoryDisk>) -> u32 {
    let first = fs.superblock().first_inode;
    let readable = (first..=fs.superblock().inodes_count).filter(|&number| fs.inode(InodeNumber(number)).is_ok());
    first - 1 + readable.count() as u32
}

fn check_paths(fs: &Ext4<MemoryDisk>) {
    let deep = found(fs, "/a/b/c/d/deep.txt");
    assert_eq!(found(fs, "//a/./b/../b/c/d/deep.txt").number, deep.number);
    assert_eq!(found(fs, "/").number, fs.root());
    assert_eq!(found(fs, "/..").number, fs.root());
    let one = found(fs, "/one");
    assert_eq!(found(fs, "/a/hard-link-to-one").number, one.number);
    assert_eq!(one.links_count, 2);
    let path = b"/link-to-dir/c/d";
    match fs.resolve(path) {
        Ok(Resolution::Symlink { link, rest }) => {
            assert_eq!(link, found(fs, "/link-to-dir").number);
            assert_eq!(&path[rest..], b"c/d");
        }
        other => panic!("resolve through a link gave {other:?}"),
    }
    assert_eq!(fs.resolve(b"/missing"), Err(Error::NotFound));
    assert_eq!(fs.resolve(b"/one/x"), Err(Error::NotADirectory));
    assert_eq!(fs.resolve(b"one"), Err(Error::NotAbsolute));
    assert_eq!(
        fs.resolve(&[b'a'; 300].iter().fold(vec![b'/'], |mut path, &b| {
            path.push(b);
            path
        })),
        Err(Error::NameTooLong)
    );
    assert_eq!(fs.read_link(&one), Err(Error::NotASymlink));
    assert_eq!(fs.lookup(&one, b"x"), Err(Error::NotADirectory));
}

fn check_reads_at_offsets(fs: &Ext4<MemoryDisk>) {
    let source = fs::read(source_tree().join("megabyte")).unwrap();
    let megabyte = found(fs, "/megabyte");
    for (offset, length) in
        [(0usize, 1usize), (1, 4096), (1023, 2), (4095, 8193), (500_000, 70_000), ((1 << 20) - 3, 10)]
    {
        let mut buffer = vec![0xAA; length];
        let count = fs.read(&megabyte, offset as u64, &mut buffer).unwrap();
        let end = (offset + length).min(source.len());
        assert_eq!(count, end - offset, "count at {offset}+{length}");
        assert!(buffer[..count] == source[offset..end], "bytes at {offset}+{length}");
    }
    assert_eq!(fs.read(&megabyte, 1 << 20, &mut [0; 16]), Ok(0));
    assert_eq!(fs.read(&megabyte, u64::MAX, &mut [0; 16]), Ok(0));
    let sparse = found(fs, "/sparse");
    let mut hole = vec![0xAA; 8192];
    assert_eq!(fs.read(&sparse, 500_000, &mut hole), Ok(8192));
    assert!(hole.iter().all(|&byte| byte == 0), "a hole reads as zeros");
}

/// `debugfs stat` agrees with the parsed inodes on the fields it prints.
fn check_against_debugfs(image: &[u8], fs: &Ext4<MemoryDisk>, paths: &[&str]) {
    let requests: Vec<String> = paths.iter().map(|path| format!("stat {path}")).collect();
    let requests: Vec<&str> = requests.iter().map(String::as_str).collect();
    for (path, output) in paths.iter().zip(debugfs(&mut image.to_vec(), &requests)) {
        compare_stat(&found(fs, path), &output, path);
    }
}

fn compare_stat(inode: &Inode, output: &str, path: &str) {
    let field = |name: &str| {
        let start = output.find(name).unwrap_or_else(|| panic!("no {name} in {output}")) + name.len();
        output[start..].split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(field("Size:"), inode.size.to_string(), "{path} size");
    assert_eq!(field("Links:"), inode.links_count.to_string(), "{path} links");
    assert_eq!(field("Blockcount:"), inode.sectors.to_string(), "{path} blocks");
    assert_eq!(field("Generation:"), inode.generation.to_string(), "{path} generation");
    let mtime = field("mtime:");
    let (seconds, extra) = mtime.trim_start_matches("0x").split_once(':').unwrap_or((mtime.as_str(), ""));
    assert_eq!(i64::from_str_radix(seconds, 16).unwrap(), inode.modification_time.seconds & 0xFFFF_FFFF);
    if !extra.is_empty() {
        let extra = u32::from_str_radix(extra, 16).unwrap();
        assert_eq!(extra >> 2, inode.modification_time.nanoseconds, "{path} mtime nanoseconds");
    }
}

fn metadata_csum(checksums: Checksums) -> bool {
    matches!(checksums, Checksums::Crc32c { .. })
}

#[test]
fn one_kib_blocks_with_metadata_csum_read_back_exactly() {
    let image = make_image(1024, 16, &[]);
    let fs = check_image(&image, metadata_csum);
    assert_eq!(fs.mount(), Mount::ReadWrite);
    assert!(found(&fs, "/many").is_htree(), "e2fsck -D indexes a 200-entry directory");
    let fragmented = found(&fs, "/fragmented");
    assert_eq!(u16::from_le_bytes([fragmented.block_area[6], fragmented.block_area[7]]), 2, "extent depth");
    check_against_debugfs(&image, &fs, &["/megabyte", "/fragmented", "/many", "/private", "/long-link", "/sparse"]);
}

#[test]
fn four_kib_blocks_with_metadata_csum_read_back_exactly() {
    let image = make_image(4096, 64, &[]);
    let fs = check_image(&image, metadata_csum);
    assert_eq!(fs.superblock().descriptor_size, 64);
    check_against_debugfs(&image, &fs, &["/megabyte", "/fragmented", "/many", "/fifo"]);
}

#[test]
fn crc16_descriptors_and_32_byte_descriptors_read_back_exactly() {
    let image = make_image(1024, 16, &["-O", "^metadata_csum,^64bit,uninit_bg"]);
    let fs = check_image(&image, |checksums| checksums == Checksums::GroupDescriptorCrc16);
    assert_eq!(fs.superblock().descriptor_size, 32);
}

#[test]
fn block_maps_without_extents_read_back_exactly() {
    let image = make_image(1024, 16, &["-O", "^extent,^64bit"]);
    let fs = check_image(&image, metadata_csum);
    assert!(!found(&fs, "/megabyte").uses_extents(), "double indirect blocks in use");
    check_against_debugfs(&image, &fs, &["/megabyte"]);
}

#[test]
fn ext2_style_small_inodes_read_back_exactly() {
    let features = "^has_journal,^extent,^64bit,^metadata_csum,^flex_bg,^huge_file,^dir_nlink,^extra_isize";
    let image = make_image(2048, 16, &["-I", "128", "-O", features]);
    let fs = check_image(&image, |checksums| checksums == Checksums::None);
    let one = found(&fs, "/one");
    assert_eq!((one.extra_size, one.creation_time), (0, None));
}

#[test]
fn meta_bg_descriptor_blocks_read_back_exactly() {
    let image = make_image(1024, 32, &["-g", "1024", "-O", "meta_bg,^resize_inode"]);
    let fs = check_image(&image, metadata_csum);
    assert!(fs.superblock().group_count() > 16, "more than one descriptor block");
}

#[test]
fn sixty_four_kib_blocks_read_back_exactly() {
    let image = make_image(65536, 64, &[]);
    check_image(&image, metadata_csum);
}

#[test]
fn bigalloc_mounts_read_only_and_reads_back_exactly() {
    let image = make_image(1024, 32, &["-O", "bigalloc", "-C", "16384"]);
    let fs = open(&image).unwrap();
    assert!(matches!(fs.mount(), Mount::ReadOnly(_)), "{:?}", fs.mount());
    let root = fs.inode(fs.root()).unwrap();
    compare_directory(&fs, &root, fs.root(), source_tree(), true);
}

#[test]
fn nanoseconds_and_epoch_bits_of_times_are_decoded() {
    let mut image = make_image(1024, 16, &[]);
    debugfs(&mut image, &["sif /one mtime_extra 0x1D6F3455", "sif /one atime_extra 0x00000004"]);
    let fs = open(&image).unwrap();
    let one = found(&fs, "/one");
    assert_eq!(one.modification_time.nanoseconds, 123_456_789);
    assert_eq!(one.modification_time.seconds >> 32, 1, "epoch bit");
    assert_eq!(one.access_time.nanoseconds, 1);
    check_against_debugfs(&image, &fs, &["/one"]);
}

#[test]
fn encoding_parsed_structures_gives_back_the_bytes_read() {
    let image = make_image(1024, 16, &[]);
    let fs = open(&image).unwrap();
    assert!(fs.superblock().encode()[..] == image[1024..2048]);
    let block_size = fs.superblock().block_size as usize;
    let size = usize::from(fs.superblock().descriptor_size);
    for (group, descriptor) in fs.groups().iter().enumerate() {
        let original = &image[2 * block_size + group * size..2 * block_size + (group + 1) * size];
        assert_eq!(fs.groups().descriptor_bytes(group as u32), Some(original));
        let mut bytes = original.to_vec();
        descriptor.encode(&mut bytes, group as u32, fs.superblock());
        assert_eq!(bytes, original, "descriptor {group}");
    }
    for number in [2, 11, 12, 13] {
        let inode = fs.inode(InodeNumber(number)).unwrap();
        let (start, end) = inode_span(&fs, inode.number);
        assert!(inode.encode(fs.superblock()) == image[start..end], "inode {number}");
    }
}

fn inode_span(fs: &Ext4<MemoryDisk>, number: InodeNumber) -> (usize, usize) {
    let location = ext4::locate_inode(fs.superblock(), fs.groups(), number).unwrap();
    let start = location.block as usize * fs.superblock().block_size as usize + location.offset;
    (start, start + usize::from(fs.superblock().inode_size))
}

#[test]
fn changed_structures_encode_with_checksums_that_verify() {
    let mut image = make_image(1024, 16, &[]);
    let fs = open(&image).unwrap();
    let mut superblock = fs.superblock().clone();
    superblock.mount_count += 1;
    superblock.write_time = 0x1_2345_6789;
    image[1024..2048].copy_from_slice(&superblock.encode());
    let mut descriptor = *fs.groups().get(1).unwrap();
    descriptor.free_blocks_count -= 1;
    let mut bytes = fs.groups().descriptor_bytes(1).unwrap().to_vec();
    descriptor.encode(&mut bytes, 1, fs.superblock());
    let descriptor_one = 2 * 1024 + bytes.len(); // after descriptor 0 in block 2
    image[descriptor_one..descriptor_one + bytes.len()].copy_from_slice(&bytes);
    let mut one = found(&fs, "/one");
    one.modification_time = ext4::Timestamp { seconds: 0x2_0000_0001, nanoseconds: 999_999_999 };
    one.uid = 0x0001_0002;
    let (start, end) = inode_span(&fs, one.number);
    image[start..end].copy_from_slice(&one.encode(fs.superblock()));
    let reopened = open(&image).unwrap();
    assert_eq!(reopened.superblock().mount_count, fs.superblock().mount_count + 1);
    assert_eq!(reopened.superblock().write_time, 0x1_2345_6789);
    assert_eq!(reopened.groups().get(1), Some(&descriptor));
    let reread = reopened.inode(one.number).unwrap();
    assert_eq!((reread.modification_time, reread.uid), (one.modification_time, one.uid));
}

#[test]
fn a_two_level_htree_directory_lists_and_finds_every_name() {
    let tree = common::TempDir::new("huge-directory");
    let directory = tree.0.join("huge");
    fs::create_dir(&directory).unwrap();
    // Three 250-byte names per 1 KiB block: 200 leaves, more than one root holds.
    let names: BTreeSet<Vec<u8>> =
        (0..600).map(|index| format!("{index:04}-{}", "n".repeat(245)).into_bytes()).collect();
    for name in &names {
        fs::write(directory.join(std::str::from_utf8(name).unwrap()), b"").unwrap();
    }
    let image = common::make_image_from(&tree.0, 1024, 16, &[]);
    let fs = open(&image).unwrap();
    let huge = found(&fs, "/huge");
    assert!(huge.is_htree());
    let Ok(ext4::Run::Data { physical, .. }) = fs.map_block(&huge, 0) else { panic!("no root block") };
    assert_eq!(image[physical as usize * 1024 + 30], 1, "indirect levels of the htree root");
    let listed: BTreeSet<Vec<u8>> = fs.read_dir(&huge).unwrap().into_iter().map(|entry| entry.name).collect();
    assert_eq!(listed.len(), names.len() + 2);
    assert!(names.is_subset(&listed));
    for name in names.iter().step_by(59) {
        assert!(fs.lookup(&huge, name).unwrap().is_some(), "lookup {}", String::from_utf8_lossy(name));
    }
    assert_eq!(fs.lookup(&huge, b"absent").unwrap(), None);
}

#[test]
fn small_inodes_with_metadata_csum_keep_only_the_low_checksum_half() {
    let image = make_image(1024, 16, &["-I", "128"]);
    let fs = check_image(&image, metadata_csum);
    assert_eq!(fs.superblock().inode_size, 128);
}
