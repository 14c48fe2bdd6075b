//! Linux's answers for paths, names and contents.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::{Errno, FileKind, Namespace, Timestamp, Tmpfs};

const NOW: Timestamp = Timestamp { seconds: 1_700_000_000, nanoseconds: 0 };

fn tree() -> Namespace {
    let mut fs = Namespace::new(Box::new(Tmpfs::new(NOW)), (0, 1));
    let root = fs.root();
    let bin = fs.create(root, b"bin", FileKind::Directory, 0o755, NOW).unwrap();
    let busybox = fs.create(bin, b"busybox", FileKind::Regular, 0o755, NOW).unwrap();
    fs.write(busybox, 0, b"ELF", NOW).unwrap();
    fs.symlink(bin, b"sh", b"busybox", NOW).unwrap();
    fs.symlink(root, b"loop", b"loop", NOW).unwrap();
    fs.symlink(root, b"dangling", b"/nowhere/at/all", NOW).unwrap();
    fs.create(root, b"tmp", FileKind::Directory, 0o1777, NOW).unwrap();
    fs
}

#[test]
fn paths_resolve_as_on_linux() {
    let fs = tree();
    let root = fs.root();
    let bin = fs.lookup(root, b"/bin", true).unwrap();
    let busybox = fs.lookup(root, b"/bin/busybox", true).unwrap();
    assert_eq!(fs.lookup(root, b"/bin/sh", true), Ok(busybox));
    assert_eq!(fs.lookup(bin, b"sh", true), Ok(busybox));
    assert_eq!(fs.kind(fs.lookup(root, b"/bin/sh", false).unwrap()), Ok(FileKind::Symlink));
    assert_eq!(fs.lookup(root, b"//bin/./../bin//busybox", true), Ok(busybox));
    assert_eq!(fs.lookup(root, b"/..", true), Ok(root));
    assert_eq!(fs.lookup(root, b"/", true), Ok(root));
    assert_eq!(fs.lookup(root, b"", true), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(root, b"/bin/busybox/x", true), Err(Errno::ENOTDIR));
    assert_eq!(fs.lookup(root, b"/bin/busybox/", true), Err(Errno::ENOTDIR));
    assert_eq!(fs.lookup(root, b"/nope/x", true), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(root, b"/loop", true), Err(Errno::ELOOP));
    assert_eq!(fs.lookup(root, b"/dangling", true), Err(Errno::ENOENT));
    let long: Vec<u8> = core::iter::repeat_n(b'a', 256).collect();
    assert_eq!(fs.lookup(root, &long, true), Err(Errno::ENAMETOOLONG));
    let very_long: Vec<u8> = core::iter::repeat_n(b'/', 5000).collect();
    assert_eq!(fs.lookup(root, &very_long, true), Err(Errno::ENAMETOOLONG));
}

#[test]
fn names_come_and_go_with_the_right_errors() {
    let mut fs = tree();
    let root = fs.root();
    let tmp = fs.lookup(root, b"/tmp", true).unwrap();
    let dir = fs.create(tmp, b"d", FileKind::Directory, 0o755, NOW).unwrap();
    assert_eq!(fs.create(tmp, b"d", FileKind::Regular, 0o644, NOW), Err(Errno::EEXIST));
    let file = fs.create(dir, b"f", FileKind::Regular, 0o644, NOW).unwrap();
    assert_eq!(fs.rmdir(tmp, b"d", NOW), Err(Errno::ENOTEMPTY));
    assert_eq!(fs.unlink(tmp, b"d", NOW), Err(Errno::EISDIR));
    assert_eq!(fs.rmdir(dir, b"f", NOW), Err(Errno::ENOTDIR));
    assert_eq!(fs.stat(tmp).unwrap().links, 3, "tmp: itself, its entry, d's ..");
    fs.link(tmp, b"g", file, NOW).unwrap();
    assert_eq!(fs.stat(file).unwrap().links, 2);
    fs.unlink(dir, b"f", NOW).unwrap();
    assert_eq!(fs.lookup(tmp, b"g", true), Ok(file), "the other name keeps it");
    // An open, unlinked file lives until closed.
    fs.opened(file).unwrap();
    fs.unlink(tmp, b"g", NOW).unwrap();
    assert_eq!(fs.write(file, 0, b"still here", NOW), Ok(10));
    fs.closed(file);
    assert_eq!(fs.stat(file), Err(Errno::ENOENT), "gone with its last description");
    fs.rmdir(tmp, b"d", NOW).unwrap();
    assert_eq!(fs.stat(tmp).unwrap().links, 2);
    assert_eq!(fs.rmdir(root, b".", NOW), Err(Errno::EINVAL));
}

#[test]
fn rename_follows_the_rules_of_rename_2() {
    let mut fs = tree();
    let root = fs.root();
    let tmp = fs.lookup(root, b"/tmp", true).unwrap();
    let a = fs.create(tmp, b"a", FileKind::Directory, 0o755, NOW).unwrap();
    let b = fs.create(a, b"b", FileKind::Directory, 0o755, NOW).unwrap();
    let file = fs.create(tmp, b"file", FileKind::Regular, 0o644, NOW).unwrap();
    assert_eq!(fs.rename(tmp, b"a", b, b"inside", NOW), Err(Errno::EINVAL), "into its own subtree");
    assert_eq!(fs.rename(tmp, b"file", tmp, b"a", NOW), Err(Errno::EISDIR));
    assert_eq!(fs.rename(tmp, b"a", tmp, b"file", NOW), Err(Errno::ENOTDIR));
    assert_eq!(fs.rename(tmp, b"missing", tmp, b"x", NOW), Err(Errno::ENOENT));
    fs.rename(a, b"b", tmp, b"b2", NOW).unwrap();
    assert_eq!(fs.lookup(root, b"/tmp/b2/..", true), Ok(tmp), "a moved directory's .. follows it");
    assert_eq!(fs.stat(a).unwrap().links, 2);
    let other = fs.create(tmp, b"other", FileKind::Regular, 0o644, NOW).unwrap();
    fs.rename(tmp, b"file", tmp, b"other", NOW).unwrap();
    assert_eq!(fs.lookup(tmp, b"other", true), Ok(file));
    assert_eq!(fs.stat(other), Err(Errno::ENOENT), "the replaced file is gone");
    fs.rename(tmp, b"other", tmp, b"other", NOW).unwrap();
}

#[test]
fn file_contents_grow_cut_and_read_back() {
    let mut fs = tree();
    let tmp = fs.lookup(fs.root(), b"/tmp", true).unwrap();
    let file = fs.create(tmp, b"f", FileKind::Regular, 0o644, NOW).unwrap();
    fs.write(file, 5, b"hello", NOW).unwrap();
    let mut buffer = [0xAAu8; 16];
    assert_eq!(fs.read(file, 0, &mut buffer), Ok(10));
    assert_eq!(&buffer[..10], b"\0\0\0\0\0hello");
    assert_eq!(fs.read(file, 100, &mut buffer), Ok(0));
    fs.truncate(file, 7, NOW).unwrap();
    assert_eq!(fs.stat(file).unwrap().size, 7);
    assert_eq!(fs.read(tmp, 0, &mut buffer), Err(Errno::EISDIR));
    assert_eq!(fs.write(file, u64::MAX, b"x", NOW), Err(Errno::EFBIG));
    let listing: Vec<Vec<u8>> = fs.list(tmp).unwrap().into_iter().map(|entry| entry.name).collect();
    assert_eq!(listing, [b".".to_vec(), b"..".to_vec(), b"f".to_vec()]);
    for start in 0..=3 {
        let mut visited = Vec::new();
        let end = fs.visit_entries(tmp, start, |name, _, _| {
            visited.push(name.to_vec());
            true
        });
        assert_eq!((end, visited.as_slice()), (Ok(3), &listing[start..]), "from {start}");
    }
    let mut taken = 0;
    assert_eq!(fs.visit_entries(tmp, 0, |_, _, _| { taken += 1; taken <= 2 }), Ok(2), "stops where declined");
}

#[test]
fn an_initramfs_unpacks_with_borrowed_files() {
    let mut writer = initramfs::Writer::new();
    writer.file("bin/busybox", 0o755, b"\x7fELF-busybox");
    writer.symlink("bin/ls", "busybox");
    writer.directory("etc", 0o755);
    writer.file("./etc/motd", 0o644, b"hello\n");
    writer.entry("dev/console", initramfs::CHAR_DEVICE | 0o600, (5, 1), b"");
    let archive: &'static [u8] = std::boxed::Box::leak(writer.finish().into_boxed_slice());
    let mut tmpfs = Tmpfs::new(NOW);
    assert_eq!(tmpfs.unpack(archive, NOW), Ok(5));
    assert_eq!(tmpfs.owned_bytes(), 0, "nothing copied until written");
    let mut fs = Namespace::new(Box::new(tmpfs), (0, 1));
    let root = fs.root();
    let ls = fs.lookup(root, b"/bin/ls", true).unwrap();
    assert_eq!(fs.contents(ls).as_deref(), Ok(&b"\x7fELF-busybox"[..]));
    assert_eq!(fs.stat(ls).unwrap().mode, 0o100_755);
    assert_eq!(fs.stat(fs.lookup(root, b"/dev/console", true).unwrap()).unwrap().device, (5, 1));
    let motd = fs.lookup(root, b"/etc/motd", true).unwrap();
    fs.write(motd, 0, b"J", NOW).unwrap();
    assert_eq!(fs.contents(motd).as_deref(), Ok(&b"Jello\n"[..]));
    let mut broken = archive.to_vec();
    broken[0] = b'X';
    let broken: &'static [u8] = std::boxed::Box::leak(broken.into_boxed_slice());
    assert!(matches!(Tmpfs::new(NOW).unpack(broken, NOW), Err(crate::UnpackError::Archive(_))));
}

#[test]
fn an_overwrite_stays_inside_the_file_and_keeps_its_times() {
    let mut fs = tree();
    let root = fs.root();
    let file = fs.create(root, b"mapped", FileKind::Regular, 0o644, NOW).unwrap();
    fs.write(file, 0, b"hello world", NOW).unwrap();
    let before = fs.stat(file).unwrap();
    fs.overwrite(file, 6, b"there").unwrap();
    let mut bytes = [0u8; 11];
    fs.read(file, 0, &mut bytes).unwrap();
    assert_eq!(&bytes, b"hello there");
    assert_eq!(fs.overwrite(file, 8, b"long"), Err(Errno::EINVAL), "past the end");
    let after = fs.stat(file).unwrap();
    assert_eq!((after.size, after.modified, after.changed), (before.size, before.modified, before.changed));
}

#[test]
fn a_new_owner_clears_set_user_id_as_linux_does() {
    let mut fs = tree();
    let root = fs.root();
    let file = fs.create(root, b"program", FileKind::Regular, 0o6755, NOW).unwrap();
    fs.set_owner(file, Some(1000), None, NOW).unwrap();
    let stat = fs.stat(file).unwrap();
    assert_eq!((stat.uid, stat.gid, stat.mode & 0o7777), (1000, 0, 0o0755), "set-group-ID goes too: group-executable");
    fs.set_owner(file, None, Some(50), NOW).unwrap();
    assert_eq!(fs.stat(file).unwrap().gid, 50);
}

#[test]
fn a_directory_the_caller_may_not_search_stops_the_walk() {
    let fs = tree();
    let root = fs.root();
    let no_search = |stat: &crate::Stat| stat.mode & 0o001 != 0;
    // /bin is 0o755 but the root directory's others bits decide first.
    let root_mode = fs.stat(root).unwrap().mode;
    let expected = if root_mode & 0o001 != 0 { Ok(true) } else { Err(Errno::EACCES) };
    assert_eq!(fs.resolve_as(root, b"/bin/busybox", true, &no_search).map(|found| found.inode.is_some()), expected);
    assert_eq!(fs.resolve_as(root, b"/bin/busybox", true, &|_| false).map(|found| found.inode.is_some()), Err(Errno::EACCES));
    assert!(fs.resolve_as(root, b"/bin/busybox", true, &|_| true).unwrap().inode.is_some());
}

#[test]
fn some_path_of_names_files_and_directories() {
    let mut fs = tree();
    let root = fs.root();
    let busybox = fs.lookup(root, b"/bin/busybox", true).unwrap();
    let bin = fs.lookup(root, b"/bin", true).unwrap();
    assert_eq!(fs.some_path_of(busybox), Ok(b"/bin/busybox".to_vec()));
    assert_eq!(fs.some_path_of(bin), Ok(b"/bin".to_vec()));
    assert_eq!(fs.some_path_of(root), Ok(b"/".to_vec()));
    let tmp = fs.lookup(root, b"/tmp", true).unwrap();
    let file = fs.create(tmp, b"gone", FileKind::Regular, 0o644, NOW).unwrap();
    fs.opened(file).unwrap();
    assert_eq!(fs.some_path_of(file), Ok(b"/tmp/gone".to_vec()));
    fs.unlink(tmp, b"gone", NOW).unwrap();
    assert_eq!(fs.some_path_of(file), Err(Errno::ENOENT), "no name leads to an unlinked file");
}

/// A directory read in pieces (as `getdents` does, each piece resuming at
/// the name the last one stopped at) lists every entry once, in order; a
/// removal or an addition between pieces neither repeats nor skips the
/// entries that stay; a piece that starts elsewhere (a seek) starts there.
#[test]
fn a_directory_read_in_pieces_resumes_where_it_stopped() {
    let mut fs = tree();
    let tmp = fs.lookup(fs.root(), b"/tmp", true).unwrap();
    for index in 0..300 {
        fs.create(tmp, alloc::format!("f{index:03}").as_bytes(), FileKind::Regular, 0o644, NOW).unwrap();
    }
    let whole: Vec<Vec<u8>> = fs.list(tmp).unwrap().into_iter().map(|entry| entry.name).collect();
    let read_in_pieces = |fs: &mut Namespace, size: usize, between: &mut dyn FnMut(&mut Namespace, usize)| {
        let (mut names, mut position) = (Vec::new(), 0);
        loop {
            let mut piece = 0;
            let end = fs.visit_entries(tmp, position, |name, _, _| {
                piece += 1;
                if piece > size {
                    return false;
                }
                names.push(name.to_vec());
                true
            });
            let end = end.unwrap();
            if end == position {
                return names;
            }
            position = end;
            between(fs, position);
        }
    };
    assert_eq!(read_in_pieces(&mut fs, 37, &mut |_, _| {}), whole);
    // A name the reader already passed goes: the rest still comes once.
    let mut removed = false;
    let names = read_in_pieces(&mut fs, 37, &mut |fs, position| {
        if position > 100 && !removed {
            fs.unlink(tmp, b"f010", NOW).unwrap();
            removed = true;
        }
    });
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names, "no entry twice");
    assert!(names.iter().any(|name| name == b"f299"));
    // A seek back to 5 lists from the sixth entry.
    let mut from_five = Vec::new();
    fs.visit_entries(tmp, 5, |name, _, _| {
        from_five.push(name.to_vec());
        from_five.len() < 3
    })
    .unwrap();
    let now: Vec<Vec<u8>> = fs.list(tmp).unwrap().into_iter().map(|entry| entry.name).collect();
    assert_eq!(from_five, now[5..8]);
}

/// At the end of a listing a read finds nothing, again and again; a name
/// created after the end was reached is found by the next read there.
#[test]
fn a_listing_that_reached_its_end_sees_a_name_added_after() {
    let mut fs = tree();
    let tmp = fs.lookup(fs.root(), b"/tmp", true).unwrap();
    for index in 0..10 {
        fs.create(tmp, alloc::format!("f{index}").as_bytes(), FileKind::Regular, 0o644, NOW).unwrap();
    }
    let names_from = |fs: &Namespace, start: usize| {
        let mut names = Vec::new();
        let end = fs.visit_entries(tmp, start, |name, _, _| {
            names.push(name.to_vec());
            true
        });
        (end.unwrap(), names)
    };
    let (end, all) = names_from(&fs, 0);
    assert_eq!((end, all.len()), (12, 12), "., .. and ten names");
    assert_eq!(names_from(&fs, end), (12, Vec::new()));
    assert_eq!(names_from(&fs, end), (12, Vec::new()), "still the end");
    fs.create(tmp, b"zz-late", FileKind::Regular, 0o644, NOW).unwrap();
    assert_eq!(names_from(&fs, end), (13, alloc::vec![b"zz-late".to_vec()]));
    fs.unlink(tmp, b"f3", NOW).unwrap();
    fs.unlink(tmp, b"f4", NOW).unwrap();
    assert_eq!(names_from(&fs, 13), (13, Vec::new()), "past the end after removals");
}
