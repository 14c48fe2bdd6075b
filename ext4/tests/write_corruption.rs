//! Writing to damaged images never panics, and never writes outside what
//! it allocated or the structure it updates: hundreds of deterministic
//! byte flips in bitmaps, descriptors, inodes, directory and extent blocks,
//! each followed by a sequence of writing operations (errors expected);
//! and a file whose extent points into the inode table is refused without
//! a single block written.

mod common;
mod writing;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use common::{make_image, pattern};
use ext4::{BlockDevice, Error, Ext4, InodeNumber, IoError, Owner, Resolution, Run, Timestamp, SECTOR_SIZE};

/// A shared image with a few bytes patched and writes kept in an overlay.
struct OverlayDisk {
    base: Arc<Vec<u8>>,
    patches: Vec<(usize, u8)>,
    written: RefCell<BTreeMap<u64, Vec<u8>>>,
}

impl BlockDevice for OverlayDisk {
    fn sector_count(&self) -> u64 {
        (self.base.len() / SECTOR_SIZE) as u64
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let range = ext4::checked_byte_range(first_sector, buffer.len(), self.sector_count())?;
        let start = range.start as usize;
        buffer.copy_from_slice(&self.base[start..range.end as usize]);
        for &(offset, value) in &self.patches {
            if (start..range.end as usize).contains(&offset) {
                buffer[offset - start] = value;
            }
        }
        let written = self.written.borrow();
        for (index, sector) in buffer.chunks_mut(SECTOR_SIZE).enumerate() {
            if let Some(bytes) = written.get(&(first_sector + index as u64)) {
                sector.copy_from_slice(bytes);
            }
        }
        Ok(())
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        ext4::checked_byte_range(first_sector, data.len(), self.sector_count())?;
        let mut written = self.written.borrow_mut();
        for (index, sector) in data.chunks(SECTOR_SIZE).enumerate() {
            written.insert(first_sector + index as u64, sector.to_vec());
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

fn found(fs: &Ext4<OverlayDisk>, path: &str) -> Result<InodeNumber, Error> {
    match fs.resolve(path.as_bytes())? {
        Resolution::Found(number) => Ok(number),
        Resolution::Symlink { .. } => Err(Error::NotFound),
    }
}

/// A sequence of writing operations; every error is acceptable.
fn exercise(fs: &mut Ext4<OverlayDisk>) {
    let now = Timestamp { seconds: 1_700_000_000, nanoseconds: 1 };
    let owner = Owner { uid: 0, gid: 0 };
    let root = fs.root();
    let _ = fs.create(root, b"new-file", 0o644, owner, now).and_then(|file| fs.write(file, 5000, b"data", now));
    for (path, offset, length) in [("/one", 0, 10), ("/megabyte", 1 << 20, 70_000), ("/fragmented", 4096, 9000)] {
        if let Ok(file) = found(fs, path) {
            let _ = fs.write(file, offset, &pattern(7, length), now);
            let _ = fs.truncate(file, offset / 2, now);
        }
    }
    if let Ok(many) = found(fs, "/many") {
        let _ = fs.unlink(many, b"entry-with-a-longish-name-0003", now);
        let _ = fs.create(many, b"another", 0o644, owner, now);
        let _ = fs.rename(many, b"entry-with-a-longish-name-0004", root, b"moved", now);
    }
    let _ = fs.mkdir(root, b"dir", 0o755, owner, now).and_then(|dir| fs.symlink(dir, b"l", &[b'x'; 300], owner, now));
    if let Ok(directory) = found(fs, "/a/b/c/d") {
        let _ = fs.unlink(directory, b"deep.txt", now);
    }
    if let Ok(directory) = found(fs, "/a/b/c") {
        let _ = fs.rmdir(directory, b"d", now);
    }
    if let Ok(a) = found(fs, "/a") {
        let _ = fs.rename(a, b"b", root, b"b-moved", now);
        let _ = fs.unlink(a, b"hard-link-to-one", now);
    }
}

/// The metadata blocks of `image`: descriptors, bitmaps, the first inode
/// table blocks, directory blocks and the extent blocks of /fragmented.
fn metadata_blocks(image: &[u8]) -> Vec<u64> {
    let fs = common::open(image).unwrap();
    let mut blocks = vec![fs.superblock().superblock_block() + 1];
    for group in fs.groups().iter() {
        blocks.extend([group.block_bitmap, group.inode_bitmap, group.inode_table, group.inode_table + 1]);
    }
    for path in ["/", "/many", "/a", "/a/b/c/d", "/fragmented", "/megabyte"] {
        let Resolution::Found(number) = fs.resolve(path.as_bytes()).unwrap() else { panic!("{path}") };
        let inode = fs.inode(number).unwrap();
        if let Run::Data { physical, .. } = fs.map_block(&inode, 0).unwrap() {
            blocks.push(physical);
        }
        let root = inode.block_area;
        if u16::from_le_bytes([root[6], root[7]]) > 0 {
            blocks.push(u64::from(u32::from_le_bytes(root[16..20].try_into().unwrap())));
        }
    }
    blocks
}

#[test]
fn the_exercise_on_an_undamaged_image_is_accepted_by_e2fsck() {
    for options in [&["-O", "metadata_csum"][..], &["-O", "^metadata_csum"][..]] {
        let image = Arc::new(make_image(1024, 16, options));
        let disk = OverlayDisk { base: image.clone(), patches: Vec::new(), written: RefCell::default() };
        let mut fs = Ext4::open(disk).unwrap();
        exercise(&mut fs);
        let disk = fs.into_device();
        let mut result = image.to_vec();
        for (sector, bytes) in disk.written.borrow().iter() {
            let start = *sector as usize * SECTOR_SIZE;
            result[start..start + SECTOR_SIZE].copy_from_slice(bytes);
        }
        assert!(!disk.written.borrow().is_empty());
        writing::assert_fsck_clean(&result, &format!("exercise on {options:?}"));
        let fs = common::open(&result).unwrap();
        assert!(fs.resolve(b"/b-moved/c").is_ok() && fs.resolve(b"/a/b").is_err());
        common::walk_everything(&fs, u64::MAX).unwrap();
    }
}

#[test]
fn writes_on_damaged_images_fail_without_panicking() {
    for options in [&["-O", "metadata_csum"][..], &["-O", "^metadata_csum"][..]] {
        let image = Arc::new(make_image(1024, 16, options));
        let blocks = metadata_blocks(&image);
        let mut random = 0x2545_F491_4F6C_DD1Du64;
        for variant in 0..240 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let block = blocks[variant % blocks.len()] as usize;
            let offset = block * 1024 + (random % 1024) as usize;
            let value = image[offset] ^ (1 << ((random >> 32) % 8)) as u8;
            let disk = OverlayDisk { base: image.clone(), patches: vec![(offset, value)], written: RefCell::default() };
            if let Ok(mut fs) = Ext4::open(disk) {
                exercise(&mut fs);
            }
        }
    }
}

#[test]
fn an_extent_into_the_inode_table_is_refused_and_nothing_is_written() {
    let image = Arc::new(make_image(1024, 16, &["-O", "^metadata_csum"]));
    let fs = common::open(&image).unwrap();
    let Resolution::Found(one) = fs.resolve(b"/one").unwrap() else { panic!() };
    let location = ext4::locate_inode(fs.superblock(), fs.groups(), one).unwrap();
    let inode_table = fs.groups().get(0).unwrap().inode_table + 3;
    // i_block starts at 0x28; its first extent's ee_start_lo at 12 + 8.
    let start_low = location.block as usize * 1024 + location.offset + 0x28 + 20;
    let patches = (0..4).map(|index| (start_low + index, (inode_table as u32).to_le_bytes()[index])).collect();
    let disk = OverlayDisk { base: image.clone(), patches, written: RefCell::default() };
    let mut fs = Ext4::open(disk).unwrap();
    let now = Timestamp { seconds: 1_700_000_000, nanoseconds: 0 };
    let error = fs.write(one, 0, b"scribble", now).unwrap_err();
    assert!(matches!(error, Error::Corrupted(_)), "expected a corruption, got {error:?}");
    assert!(fs.device().written.borrow().is_empty(), "a refused write reached the disk");
    let error = fs.truncate(one, 0, now).unwrap_err();
    assert!(matches!(error, Error::Corrupted(_)), "freeing the inode table: {error:?}");
    assert!(fs.device().written.borrow().is_empty(), "a refused truncate reached the disk");
}
