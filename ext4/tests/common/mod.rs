//! Shared by the image tests: a source tree with every kind of file, real
//! images made from it by Debian's `mkfs.ext4 -d` (then `e2fsck -fyD`, which
//! turns large directories into htrees), and a walker that reads everything.

#![allow(dead_code)] // each test crate uses a different part

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use std::sync::Arc;

use ext4::{BlockDevice, Error, Ext4, FileType, IoError, MemoryDisk, SECTOR_SIZE};

pub const MKFS: &str = "/usr/sbin/mkfs.ext4";
pub const E2FSCK: &str = "/usr/sbin/e2fsck";
pub const DEBUGFS: &str = "/usr/sbin/debugfs";

pub use crash_check::{read_all, TempDir};

/// Deterministic file contents: byte `i` of file `seed`.
pub fn pattern(seed: u32, length: usize) -> Vec<u8> {
    (0..length).map(|i| ((i as u32).wrapping_mul(31).wrapping_add(seed * 7 + (i as u32 >> 10)) % 251) as u8).collect()
}

fn run(command: &mut Command, accepted: &[i32]) {
    let output = command.output().unwrap_or_else(|error| {
        panic!("cannot run {command:?} ({error}): install e2fsprogs with `apt-get install e2fsprogs`")
    });
    let code = output.status.code().unwrap_or(-1);
    assert!(
        accepted.contains(&code),
        "{command:?} exited with {code}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub fn require_e2fsprogs() {
    for tool in [MKFS, E2FSCK, DEBUGFS] {
        assert!(Path::new(tool).exists(), "{tool} is missing: install e2fsprogs with `apt-get install e2fsprogs`");
    }
}

/// The source tree every image is made from (built once per test process).
pub fn source_tree() -> &'static Path {
    static TREE: OnceLock<TempDir> = OnceLock::new();
    &TREE
        .get_or_init(|| {
            let dir = TempDir::new("tree");
            build_tree(&dir.0);
            dir
        })
        .0
}

fn build_tree(root: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    for (seed, (name, length)) in
        [("empty", 0), ("one", 1), ("f4095", 4095), ("f4096", 4096), ("f4097", 4097), ("megabyte", 1 << 20)]
            .into_iter()
            .enumerate()
    {
        fs::write(root.join(name), pattern(seed as u32, length)).unwrap();
    }
    let mut sparse = fs::File::create(root.join("sparse")).unwrap();
    sparse.write_all(&pattern(10, 4096)).unwrap();
    sparse.seek(SeekFrom::Start((1 << 20) + 100)).unwrap();
    sparse.write_all(&pattern(11, 5000)).unwrap();
    sparse.set_len(3 << 20).unwrap();
    // Many separate data chunks: a deep extent tree (depth 2 with 1 KiB blocks).
    let mut fragmented = fs::File::create(root.join("fragmented")).unwrap();
    for chunk in 0..500u64 {
        fragmented.seek(SeekFrom::Start(chunk * 8192)).unwrap();
        fragmented.write_all(&pattern(chunk as u32 + 20, 1024)).unwrap();
    }
    drop(fragmented);
    fs::create_dir(root.join("many")).unwrap();
    for index in 0..200 {
        fs::write(root.join(format!("many/entry-with-a-longish-name-{index:04}")), index.to_string()).unwrap();
    }
    fs::create_dir_all(root.join("a/b/c/d")).unwrap();
    fs::write(root.join("a/b/c/d/deep.txt"), b"deep\n").unwrap();
    fs::hard_link(root.join("one"), root.join("a/hard-link-to-one")).unwrap();
    symlink("a/b/c/d/deep.txt", root.join("fast-link")).unwrap();
    symlink("x".repeat(150), root.join("long-link")).unwrap();
    symlink(format!("/{}", "segment/".repeat(100)), root.join("longer-link")).unwrap();
    symlink("a/b", root.join("link-to-dir")).unwrap();
    let private = root.join("private");
    fs::write(&private, b"secret").unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&private, Some(1234), Some(5678)).unwrap();
    run(Command::new("mkfifo").arg(root.join("fifo")), &[0]);
    let old = root.join("a/old");
    fs::write(&old, b"old").unwrap();
    run(Command::new("touch").args(["-d", "1999-12-31 23:59:59"]).arg(&old), &[0]);
}

/// An image of the source tree: `mkfs.ext4 -b block_size -O features`, then
/// `e2fsck -fyD` to index large directories.
pub fn make_image(block_size: u32, megabytes: u32, options: &[&str]) -> Vec<u8> {
    make_image_from(source_tree(), block_size, megabytes, options)
}

/// An image of `tree` (see [`make_image`]).
pub fn make_image_from(tree: &Path, block_size: u32, megabytes: u32, options: &[&str]) -> Vec<u8> {
    require_e2fsprogs();
    let dir = TempDir::new("image");
    let image = dir.0.join("image");
    let mut mkfs = Command::new(MKFS);
    mkfs.args(["-q", "-F", "-E", "lazy_itable_init=0", "-b", &block_size.to_string(), "-d"]);
    mkfs.arg(tree).args(options).arg(&image).arg(format!("{megabytes}M"));
    run(&mut mkfs, &[0]);
    run(Command::new(E2FSCK).arg("-fyD").arg(&image), &[0, 1]);
    fs::read(&image).unwrap()
}

/// Runs each debugfs request on `image` (writable, so `sif` changes it);
/// returns each request's output.
pub fn debugfs(image: &mut Vec<u8>, requests: &[&str]) -> Vec<String> {
    let dir = TempDir::new("debugfs");
    let path = dir.0.join("image");
    fs::write(&path, &*image).unwrap();
    let outputs = requests
        .iter()
        .map(|request| {
            let result = Command::new(DEBUGFS).args(["-w", "-R", request]).arg(&path).output().unwrap();
            String::from_utf8_lossy(&result.stdout).into_owned()
        })
        .collect();
    *image = fs::read(&path).unwrap();
    outputs
}

pub fn open(image: &[u8]) -> Result<Ext4<MemoryDisk>, Error> {
    Ext4::open(MemoryDisk::new(image.to_vec()))
}

/// Visits every reachable inode (each once), reading files (up to `file_limit` bytes),
/// directories and links; returns the first error.
pub fn walk_everything<D: BlockDevice>(fs: &Ext4<D>, file_limit: u64) -> Result<usize, Error> {
    let mut seen = HashSet::new();
    let mut pending = vec![fs.root()];
    while let Some(number) = pending.pop() {
        if !seen.insert(number) {
            continue;
        }
        let inode = fs.inode(number)?;
        match inode.file_type {
            FileType::Directory => {
                for entry in fs.read_dir(&inode)? {
                    pending.push(entry.inode);
                }
            }
            FileType::Regular => {
                read_all(fs, &inode, file_limit)?;
            }
            FileType::Symlink => {
                fs.read_link(&inode)?;
            }
            _ => {}
        }
    }
    Ok(seen.len())
}

/// A read-only disk that shares one image and overlays a few changed
/// bytes, so thousands of damaged variants cost no copies.
pub struct PatchedDisk {
    pub base: Arc<Vec<u8>>,
    pub patches: Vec<(usize, u8)>,
}

impl BlockDevice for PatchedDisk {
    fn sector_count(&self) -> u64 {
        (self.base.len() / SECTOR_SIZE) as u64
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let range = ext4::checked_byte_range(first_sector, buffer.len(), self.sector_count())?;
        let (start, end) = (range.start as usize, range.end as usize);
        buffer.copy_from_slice(&self.base[start..end]);
        for &(offset, value) in &self.patches {
            if (start..end).contains(&offset) {
                buffer[offset - start] = value;
            }
        }
        Ok(())
    }

    fn write_sectors(&self, _first_sector: u64, _data: &[u8]) -> Result<(), IoError> {
        Err(IoError::ReadOnly)
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}
