//! Names changed through the crate's API on images made by mkfs.ext4:
//! many files (several directory blocks), nested mkdir and rmdir, renames
//! within and across directories, hard links, unlink, short and long
//! symbolic links, an htree directory changed, and the errors POSIX names;
//! checked by `e2fsck -fn`, by reopening and by `debugfs -R ls`.

mod common;
mod writing;

use ext4::{errno, AttributeChanges, Ext4, FileType, InodeNumber, MemoryDisk, Timestamp};
use writing::{assert_fsck_clean, contents, debugfs_request, fresh, image_of, resolve, Clock, LAYOUTS, ROOT_OWNER};

fn names(fs: &Ext4<MemoryDisk>, directory: InodeNumber) -> Vec<String> {
    let inode = fs.inode(directory).unwrap();
    let mut names: Vec<String> =
        fs.read_dir(&inode).unwrap().into_iter().map(|entry| String::from_utf8(entry.name).unwrap()).collect();
    names.sort();
    names
}

#[test]
fn a_tree_of_names_built_and_rearranged_is_accepted_by_e2fsck() {
    for &(block_size, features) in LAYOUTS {
        let context = format!("{block_size}-byte blocks, {features}");
        let mut fs = fresh(block_size, 16, features);
        let mut clock = Clock(0);
        let root = fs.root();
        let many = fs.mkdir(root, b"many", 0o755, ROOT_OWNER, clock.tick()).unwrap();
        for index in 0..300 {
            let name = format!("file-with-a-longish-name-{index:04}");
            let file = fs.create(many, name.as_bytes(), 0o644, ROOT_OWNER, clock.tick()).unwrap();
            fs.write(file, 0, name.as_bytes(), clock.tick()).unwrap();
        }
        assert!(fs.inode(many).unwrap().size > u64::from(block_size) * 2, "{context}: directory did not grow");
        for index in (0..300).step_by(3) {
            fs.unlink(many, format!("file-with-a-longish-name-{index:04}").as_bytes(), clock.tick()).unwrap();
        }
        // Nested directories, then some removed again.
        let mut parent = root;
        for depth in 0..6 {
            parent = fs.mkdir(parent, format!("level{depth}").as_bytes(), 0o750, ROOT_OWNER, clock.tick()).unwrap();
        }
        let deep = fs.create(parent, b"deep.txt", 0o644, ROOT_OWNER, clock.tick()).unwrap();
        fs.write(deep, 0, b"deep\n", clock.tick()).unwrap();
        let level4 = resolve(&fs, "/level0/level1/level2/level3/level4");
        let error = fs.rmdir(level4, b"level5", clock.tick()).unwrap_err();
        assert_eq!(error.errno(), errno::ENOTEMPTY, "{context}");
        fs.unlink(parent, b"deep.txt", clock.tick()).unwrap();
        fs.rmdir(level4, b"level5", clock.tick()).unwrap();
        // Renames: a file within a directory, a file and a directory across.
        fs.rename(many, b"file-with-a-longish-name-0001", many, b"renamed", clock.tick()).unwrap();
        fs.rename(many, b"file-with-a-longish-name-0002", root, b"moved-up", clock.tick()).unwrap();
        let level2 = resolve(&fs, "/level0/level1/level2");
        fs.rename(level2, b"level3", root, b"level3-moved", clock.tick()).unwrap();
        fs.rename(many, b"file-with-a-longish-name-0004", root, b"moved-up", clock.tick()).unwrap();
        // Hard links, symlinks.
        let target = resolve(&fs, "/many/renamed");
        fs.link(target, root, b"hard", clock.tick()).unwrap();
        fs.link(target, level2, b"hard-too", clock.tick()).unwrap();
        fs.unlink(many, b"renamed", clock.tick()).unwrap();
        fs.symlink(root, b"short-link", b"many/file-with-a-longish-name-0005", ROOT_OWNER, clock.tick()).unwrap();
        let long_target = "segment/".repeat(100);
        fs.symlink(level2, b"long-link", long_target.as_bytes(), ROOT_OWNER, clock.tick()).unwrap();
        fs.symlink(root, b"doomed-link", "x".repeat(80).as_bytes(), ROOT_OWNER, clock.tick()).unwrap();
        fs.unlink(root, b"doomed-link", clock.tick()).unwrap();
        let image = image_of(fs);
        assert_fsck_clean(&image, &context);

        let fs = Ext4::open(MemoryDisk::new(image.clone())).unwrap();
        let many = resolve(&fs, "/many");
        let remaining: Vec<String> = names(&fs, many);
        assert_eq!(remaining.len(), 2 + 300 - 100 - 3, "{context}: {remaining:?}");
        assert_eq!(contents(&fs, resolve(&fs, "/moved-up")), b"file-with-a-longish-name-0004", "{context}");
        let hard = fs.inode(resolve(&fs, "/hard")).unwrap();
        assert_eq!((hard.links_count, contents(&fs, hard.number)), (2, b"file-with-a-longish-name-0001".to_vec()));
        let long = fs.inode(resolve(&fs, "/level0/level1/level2/long-link")).unwrap();
        assert_eq!(fs.read_link(&long).unwrap(), long_target.as_bytes(), "{context}");
        let short = fs.inode(resolve(&fs, "/short-link")).unwrap();
        assert_eq!(fs.read_link(&short).unwrap(), b"many/file-with-a-longish-name-0005");
        let moved = fs.inode(resolve(&fs, "/level3-moved")).unwrap();
        let dot_dot = fs.lookup(&moved, b"..").unwrap();
        assert_eq!(dot_dot, Some(fs.root()), "{context}: '..' of a moved directory");
        assert_eq!(names(&fs, resolve(&fs, "/level3-moved/level4")), [".", ".."]);
        let root_inode = fs.inode(fs.root()).unwrap();
        assert_eq!(root_inode.links_count, 6, "{context}: root links (., .., lost+found, many, level0, level3-moved)");
        assert_eq!(fs.inode(level2).unwrap().links_count, 2, "{context}: level2 lost its subdirectory");

        let listing = debugfs_request(&image, "ls -l /level0/level1/level2");
        assert!(listing.contains("long-link") && listing.contains("hard-too"), "{context}: {listing}");
        let listing = debugfs_request(&image, "ls -l /");
        for name in ["many", "moved-up", "hard", "short-link", "level3-moved"] {
            assert!(listing.contains(name), "{context}: {name} missing from debugfs ls:\n{listing}");
        }
        assert!(!listing.contains("doomed-link"), "{context}: {listing}");
    }
}

#[test]
fn an_htree_directory_loses_its_index_when_a_name_is_added() {
    for options in [&["-O", "metadata_csum"][..], &["-O", "^metadata_csum"][..]] {
        let image = common::make_image(1024, 16, options);
        let mut fs = Ext4::open(MemoryDisk::new(image)).unwrap();
        let many = resolve(&fs, "/many");
        assert!(fs.inode(many).unwrap().is_htree(), "{options:?}: the source image has no htree");
        let mut clock = Clock(0);
        fs.unlink(many, b"entry-with-a-longish-name-0007", clock.tick()).unwrap();
        assert!(fs.inode(many).unwrap().is_htree(), "removing keeps the index");
        let image = image_of(fs);
        assert_fsck_clean(&image, "htree after unlink");
        let mut fs = Ext4::open(MemoryDisk::new(image)).unwrap();
        let file = fs.create(many, b"a-new-name", 0o644, ROOT_OWNER, clock.tick()).unwrap();
        fs.write(file, 0, b"new", clock.tick()).unwrap();
        let root = fs.root();
        fs.rename(many, b"entry-with-a-longish-name-0100", root, b"out-of-many", clock.tick()).unwrap();
        assert!(!fs.inode(many).unwrap().is_htree(), "adding clears the index");
        let image = image_of(fs);
        assert_fsck_clean(&image, &format!("{options:?}: htree after adding"));
        let fs = Ext4::open(MemoryDisk::new(image)).unwrap();
        assert_eq!(names(&fs, many).len(), 2 + 200 - 1 + 1 - 1);
        assert_eq!(contents(&fs, resolve(&fs, "/out-of-many")), b"100");
    }
}

fn errno_of<T: std::fmt::Debug>(result: Result<T, ext4::Error>) -> i32 {
    result.unwrap_err().errno()
}

#[test]
fn posix_errors_are_reported_and_change_nothing() {
    let mut fs = fresh(4096, 16, "metadata_csum,64bit");
    let mut clock = Clock(0);
    let root = fs.root();
    let directory = fs.mkdir(root, b"d", 0o755, ROOT_OWNER, clock.tick()).unwrap();
    let file = fs.create(directory, b"f", 0o644, ROOT_OWNER, clock.tick()).unwrap();
    let statistics = fs.statistics();
    let now = clock.tick();
    assert_eq!(errno_of(fs.create(directory, b"f", 0o644, ROOT_OWNER, now)), errno::EEXIST);
    assert_eq!(errno_of(fs.mkdir(root, b"d", 0o755, ROOT_OWNER, now)), errno::EEXIST);
    assert_eq!(errno_of(fs.create(root, &[b'n'; 256], 0o644, ROOT_OWNER, now)), errno::ENAMETOOLONG);
    assert_eq!(errno_of(fs.rmdir(root, b"d", now)), errno::ENOTEMPTY);
    assert_eq!(errno_of(fs.unlink(root, b"d", now)), errno::EISDIR);
    assert_eq!(errno_of(fs.unlink(root, b"missing", now)), errno::ENOENT);
    assert_eq!(errno_of(fs.rmdir(directory, b"f", now)), errno::ENOTDIR);
    assert_eq!(errno_of(fs.create(file, b"x", 0o644, ROOT_OWNER, now)), errno::ENOTDIR);
    assert_eq!(errno_of(fs.rename(root, b"d", directory, b"inside", now)), errno::EINVAL);
    assert_eq!(errno_of(fs.link(directory, root, b"dir-link", now)), errno::EPERM);
    assert_eq!(errno_of(fs.write(directory, 0, b"x", now)), errno::EISDIR);
    assert_eq!(errno_of(fs.symlink(root, b"l", &[b'x'; 4096], ROOT_OWNER, now)), errno::ENAMETOOLONG);
    assert_eq!(fs.statistics(), statistics, "a failed call changed the counts");
    fs.set_attributes(file, AttributeChanges { permissions: Some(0o600), uid: Some(7), ..Default::default() }, now)
        .unwrap();
    let inode = fs.inode(file).unwrap();
    assert_eq!((inode.permissions(), inode.uid, inode.file_type), (0o600, 7, FileType::Regular));
    assert_eq!(inode.change_time, now);
    let later = Timestamp { seconds: now.seconds + 10, nanoseconds: 5 };
    fs.write(file, 0, b"x", later).unwrap();
    let inode = fs.inode(file).unwrap();
    assert_eq!((inode.modification_time, inode.creation_time.is_some()), (later, true));
    assert!(fs.inode(directory).unwrap().modification_time < later);
    assert_fsck_clean(&image_of(fs), "after refused calls");
}
