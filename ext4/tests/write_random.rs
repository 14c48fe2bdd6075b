//! A seeded random sequence of a few hundred operations (create, write,
//! truncate, mkdir, rmdir, unlink, rename, link, symlink) applied both to
//! the file system and to a model (paths to files, directories and links;
//! files shared by hard links), then the image checked by `e2fsck -fn`
//! and every path of the model compared with what this crate reads back.

mod common;
mod writing;

use std::collections::BTreeMap;

use ext4::{errno, Error, Ext4, FileType, InodeNumber, MemoryDisk};
use writing::{assert_fsck_clean, contents, fresh, image_of, resolve, Clock, ROOT_OWNER};

/// What a path names in the model.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Node {
    Directory,
    File(InodeNumber),
    Symlink(Vec<u8>),
}

/// A xorshift64* generator: the same seed gives the same operations.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len()))
        }
    }
}

struct Model {
    paths: BTreeMap<String, Node>,
    files: BTreeMap<InodeNumber, Vec<u8>>,
}

impl Model {
    fn of(&self, wanted: fn(&Node) -> bool) -> Vec<String> {
        self.paths.iter().filter(|(_, node)| wanted(node)).map(|(path, _)| path.clone()).collect()
    }

    fn children(&self, directory: &str) -> Vec<String> {
        let prefix = if directory == "/" { "/".to_string() } else { format!("{directory}/") };
        let is_child = |path: &&String| {
            path.len() > prefix.len() && path.starts_with(&prefix) && !path[prefix.len()..].contains('/')
        };
        self.paths.keys().filter(is_child).cloned().collect()
    }

    /// Removes `path` (and, for a directory, nothing else: it is empty).
    fn remove(&mut self, path: &str) {
        if let Some(Node::File(number)) = self.paths.remove(path) {
            if !self.paths.values().any(|node| *node == Node::File(number)) {
                self.files.remove(&number);
            }
        }
    }
}

fn split(path: &str) -> (&str, &str) {
    let slash = path.rfind('/').unwrap();
    (if slash == 0 { "/" } else { &path[..slash] }, &path[slash + 1..])
}

fn join(directory: &str, name: &str) -> String {
    if directory == "/" {
        format!("/{name}")
    } else {
        format!("{directory}/{name}")
    }
}

/// Runs one random operation; returns what it did, for failure messages.
fn step(fs: &mut Ext4<MemoryDisk>, model: &mut Model, random: &mut Random, clock: &mut Clock, index: usize) -> String {
    let directories = model.of(|node| *node == Node::Directory);
    let files = model.of(|node| matches!(node, Node::File(_)));
    let directory = random.pick(&directories).unwrap().clone();
    let parent = resolve(fs, &directory);
    let name = format!("n{index}-{}", "x".repeat(random.below(40)));
    let now = clock.tick();
    let choice = random.below(100);
    let (what, result): (String, Result<(), Error>) = match choice {
        0..=19 => {
            let path = join(&directory, &name);
            let result = fs.create(parent, name.as_bytes(), 0o644, ROOT_OWNER, now).map(|number| {
                model.paths.insert(path.clone(), Node::File(number));
                model.files.insert(number, Vec::new());
            });
            (format!("create {path}"), result)
        }
        20..=44 if !files.is_empty() => {
            let path = random.pick(&files).unwrap().clone();
            let Node::File(number) = model.paths[&path] else { unreachable!() };
            let old = model.files[&number].len();
            let offset = match random.below(4) {
                0 => old,
                1 => random.below(old + 1),
                _ => random.below(old + 100_000),
            };
            let length = if random.below(10) == 0 { random.below(300_000) } else { random.below(20_000) } + 1;
            let data = common::pattern(index as u32, length);
            let result = fs.write(number, offset as u64, &data, now).map(|written| {
                assert_eq!(written, length);
                let bytes = model.files.get_mut(&number).unwrap();
                if bytes.len() < offset + length {
                    bytes.resize(offset + length, 0);
                }
                bytes[offset..offset + length].copy_from_slice(&data);
            });
            (format!("write {path} at {offset}, {length} bytes"), result)
        }
        45..=54 if !files.is_empty() => {
            let path = random.pick(&files).unwrap().clone();
            let Node::File(number) = model.paths[&path] else { unreachable!() };
            let size = random.below(model.files[&number].len() * 2 + 5000);
            let result =
                fs.truncate(number, size as u64, now).map(|()| model.files.get_mut(&number).unwrap().resize(size, 0));
            (format!("truncate {path} to {size}"), result)
        }
        55..=62 => {
            let path = join(&directory, &name);
            let result = fs.mkdir(parent, name.as_bytes(), 0o755, ROOT_OWNER, now).map(|_| {
                model.paths.insert(path.clone(), Node::Directory);
            });
            (format!("mkdir {path}"), result)
        }
        63..=67 => {
            let empty: Vec<String> =
                directories.iter().filter(|path| *path != "/" && model.children(path).is_empty()).cloned().collect();
            let Some(path) = random.pick(&empty).cloned() else { return "nothing to rmdir".into() };
            let (parent_path, leaf) = split(&path);
            let result = fs.rmdir(resolve(fs, parent_path), leaf.as_bytes(), now).map(|()| model.remove(&path));
            (format!("rmdir {path}"), result)
        }
        68..=77 => {
            let removable = model.of(|node| *node != Node::Directory);
            let Some(path) = random.pick(&removable).cloned() else { return "nothing to unlink".into() };
            let (parent_path, leaf) = split(&path);
            let result = fs.unlink(resolve(fs, parent_path), leaf.as_bytes(), now).map(|()| model.remove(&path));
            (format!("unlink {path}"), result)
        }
        78..=87 => {
            let movable = model.of(|node| *node != Node::Directory);
            let Some(path) = random.pick(&movable).cloned() else { return "nothing to rename".into() };
            let (parent_path, leaf) = split(&path);
            // Sometimes onto an existing file of the destination directory.
            let existing =
                model.children(&directory).into_iter().find(|child| matches!(model.paths[child], Node::File(_)));
            let target = match existing {
                Some(existing) if random.below(3) == 0 => existing,
                _ => join(&directory, &name),
            };
            let target_name = split(&target).1.to_string();
            let result = fs.rename(resolve(fs, parent_path), leaf.as_bytes(), parent, target_name.as_bytes(), now);
            // POSIX: renaming onto another name of the same file does nothing.
            let same_file = model.paths.get(&target) == Some(&model.paths[&path]);
            let result = result.map(|()| {
                if !same_file {
                    let node = model.paths[&path].clone();
                    model.remove(&target);
                    model.paths.remove(&path);
                    model.paths.insert(target.clone(), node);
                }
            });
            (format!("rename {path} to {target}"), result)
        }
        88..=91 => {
            let movable: Vec<String> = directories.iter().filter(|path| *path != "/").cloned().collect();
            let Some(path) = random.pick(&movable).cloned() else { return "no directory to move".into() };
            if directory == path || directory.starts_with(&format!("{path}/")) {
                let (parent_path, leaf) = split(&path);
                let error = fs.rename(resolve(fs, parent_path), leaf.as_bytes(), parent, b"loop", now).unwrap_err();
                assert_eq!(error.errno(), errno::EINVAL, "moving {path} into {directory}");
                return format!("refused moving {path} into {directory}");
            }
            let (parent_path, leaf) = split(&path);
            let target = join(&directory, &name);
            let result = fs.rename(resolve(fs, parent_path), leaf.as_bytes(), parent, name.as_bytes(), now).map(|()| {
                let moved: Vec<(String, Node)> = model
                    .paths
                    .iter()
                    .filter(|(key, _)| **key == path || key.starts_with(&format!("{path}/")))
                    .map(|(key, node)| (key.clone(), node.clone()))
                    .collect();
                for (key, node) in moved {
                    model.paths.remove(&key);
                    model.paths.insert(format!("{target}{}", &key[path.len()..]), node);
                }
            });
            (format!("move directory {path} to {target}"), result)
        }
        92..=95 if !files.is_empty() => {
            let path = random.pick(&files).unwrap().clone();
            let Node::File(number) = model.paths[&path] else { unreachable!() };
            let link = join(&directory, &name);
            let result = fs.link(number, parent, name.as_bytes(), now).map(|()| {
                model.paths.insert(link.clone(), Node::File(number));
            });
            (format!("link {path} as {link}"), result)
        }
        _ => {
            let longest = if random.below(2) == 0 { 25 } else { 400 };
            let target = "t/".repeat(random.below(longest) + 1);
            let path = join(&directory, &name);
            let result = fs.symlink(parent, name.as_bytes(), target.as_bytes(), ROOT_OWNER, now).map(|_| {
                model.paths.insert(path.clone(), Node::Symlink(target.clone().into_bytes()));
            });
            (format!("symlink {path} ({} bytes)", target.len()), result)
        }
    };
    match result {
        Ok(()) => what,
        Err(error) if error.errno() == errno::ENOSPC => format!("{what}: no space"),
        Err(error) => panic!("operation {index}, {what}: {error}"),
    }
}

fn compare(fs: &Ext4<MemoryDisk>, model: &Model, context: &str) {
    for (path, node) in &model.paths {
        let inode = fs.inode(resolve(fs, path)).unwrap();
        match node {
            Node::Directory => {
                assert_eq!(inode.file_type, FileType::Directory, "{context}: {path}");
                let mut on_disk: Vec<String> = fs
                    .read_dir(&inode)
                    .unwrap()
                    .into_iter()
                    .map(|entry| String::from_utf8(entry.name).unwrap())
                    .filter(|name| name != "." && name != ".." && !(path == "/" && name == "lost+found"))
                    .map(|name| join(path, &name))
                    .collect();
                on_disk.sort();
                assert_eq!(on_disk, model.children(path), "{context}: names in {path}");
            }
            Node::File(number) => {
                assert_eq!(inode.number, *number, "{context}: {path}");
                assert!(contents(fs, *number) == model.files[number], "{context}: contents of {path}");
            }
            Node::Symlink(target) => assert_eq!(&fs.read_link(&inode).unwrap(), target, "{context}: {path}"),
        }
    }
}

#[test]
fn random_operations_agree_with_a_model_and_e2fsck() {
    let layouts = [
        (1u64, 1024, "metadata_csum,64bit"),
        (2, 4096, "^metadata_csum,^64bit"),
        (3, 4096, "metadata_csum,64bit"),
        (4, 1024, "^metadata_csum,^64bit"),
    ];
    for (seed, block_size, features) in layouts {
        let mut fs = fresh(block_size, 24, features);
        let mut model = Model { paths: BTreeMap::from([("/".to_string(), Node::Directory)]), files: BTreeMap::new() };
        let mut random = Random(0x9E37_79B9_7F4A_7C15 ^ seed);
        let mut clock = Clock(0);
        let mut log = Vec::new();
        for index in 0..400 {
            log.push(step(&mut fs, &mut model, &mut random, &mut clock, index));
        }
        let kinds = ["create", "write", "truncate", "mkdir", "rmdir", "unlink", "rename", "move", "link", "symlink"];
        let counts: Vec<(&str, usize)> =
            kinds.iter().map(|kind| (*kind, log.iter().filter(|what| what.starts_with(kind)).count())).collect();
        let no_space = log.iter().filter(|what| what.ends_with("no space")).count();
        eprintln!("seed {seed}: {counts:?}, {no_space} out of space, {} paths", model.paths.len());
        if std::env::var("EXT4_RANDOM_LOG").is_ok() {
            for (index, what) in log.iter().enumerate() {
                eprintln!("{seed}/{index}: {what}");
            }
        }
        let context =
            format!("seed {seed}, {block_size}-byte blocks, {features}; last operations {:?}", &log[log.len() - 5..]);
        compare(&fs, &model, &context);
        let image = image_of(fs);
        assert_fsck_clean(&image, &context);
        compare(&Ext4::open(MemoryDisk::new(image)).unwrap(), &model, &context);
    }
}
