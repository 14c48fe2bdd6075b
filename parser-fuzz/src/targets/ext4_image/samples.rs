//! The sample images: real ext4 images made once per process by Debian's
//! `mkfs.ext4 -d` (then `e2fsck -fyD`, which indexes large directories),
//! 256 KiB each: `metadata_csum`, `gdt_csum`, an ext2-style image (block
//! maps) and 4 KiB blocks, from a small tree with every kind of file. The
//! UUID, hash seed and clock are fixed and inode times normalised, so every
//! process makes the same bytes. Must not make images that differ between
//! processes, nor leave its temporary directory behind.

use std::ops::Range;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use ext4::SUPERBLOCK_OFFSET;

use super::hot_ranges::analyse;
use super::layout::{checked_superblock, descriptors, inode_slots, put_le};
use super::repair::repair_checksums;

const MKFS: &str = "/usr/sbin/mkfs.ext4";
const E2FSCK: &str = "/usr/sbin/e2fsck";
/// The instant every sample's times are set to.
const CLOCK: u64 = 1_000_000_000;

/// A sample image and where its metadata is.
pub(super) struct Sample {
    pub(super) bytes: Vec<u8>,
    /// The metadata a walk reads: what mutations aim at.
    pub(super) hot: Vec<Range<usize>>,
    /// The on-disk bytes of each inode the walk reached.
    pub(super) inodes: Vec<Range<usize>>,
    /// Directory blocks, extent and indirect blocks.
    pub(super) blocks: Vec<Range<usize>>,
}

/// `mkfs.ext4` options of each sample: `metadata_csum`, `gdt_csum`, an
/// ext2-style image (block maps, 128-byte inodes), 4 KiB blocks.
const IMAGES: [&[&str]; 4] = [
    &["-b", "1024", "-O", "metadata_csum"],
    &["-b", "1024", "-O", "^metadata_csum,uninit_bg"],
    &["-b", "1024", "-I", "128", "-O", "^extent,^64bit,^flex_bg,^metadata_csum,^huge_file,^dir_nlink,^extra_isize"],
    &["-b", "4096", "-O", "metadata_csum"],
];

pub(super) fn samples() -> &'static [Sample] {
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
pub(super) fn make_images() -> Vec<Vec<u8>> {
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
