//! std::fs and std::io on the kernel: create, write, read, seek, metadata,
//! directories, renames, symlinks, and the errors std reports.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

fn main() {
    let base = "/tmp/rust-files";
    let _ = fs::remove_dir_all(base);
    fs::create_dir_all(format!("{base}/nested/deeper")).unwrap();
    let path = format!("{base}/data.txt");
    {
        let mut file = File::create(&path).unwrap();
        for line in 0..100 {
            writeln!(file, "line {line}").unwrap();
        }
        file.sync_all().unwrap();
    }
    let text = fs::read_to_string(&path).unwrap();
    println!("lines {} bytes {}", text.lines().count(), text.len());
    let mut file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    file.seek(SeekFrom::Start(5)).unwrap();
    let mut word = [0u8; 2];
    file.read_exact(&mut word).unwrap();
    println!("at 5: {:?}", std::str::from_utf8(&word).unwrap());
    file.seek(SeekFrom::End(0)).unwrap();
    file.write_all(b"appended\n").unwrap();
    file.set_len(20).unwrap();
    println!("after set_len: {:?}", fs::read_to_string(&path).unwrap());
    let metadata = fs::metadata(&path).unwrap();
    println!("len {} file {} dir {} mode {:o} nlink {}", metadata.len(), metadata.is_file(), metadata.is_dir(), metadata.mode() & 0o777, metadata.nlink());
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    println!("mode now {:o}", fs::metadata(&path).unwrap().permissions().mode() & 0o777);
    fs::rename(&path, format!("{base}/nested/moved.txt")).unwrap();
    std::os::unix::fs::symlink("moved.txt", format!("{base}/nested/link")).unwrap();
    println!("link -> {:?}", fs::read_link(format!("{base}/nested/link")).unwrap());
    println!("through link: {} bytes", fs::read(format!("{base}/nested/link")).unwrap().len());
    let mut names: Vec<String> = fs::read_dir(format!("{base}/nested")).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    println!("entries {names:?}");
    for (label, result) in [
        ("open missing", File::open(format!("{base}/missing")).map(drop)),
        ("remove non-empty dir", fs::remove_dir(format!("{base}/nested"))),
        ("create existing dir", fs::create_dir(base)),
        ("read a directory", fs::read(base).map(drop)),
    ] {
        println!("{label}: {:?}", result.map_err(|error| error.kind()));
    }
    let missing = File::open("/nope").unwrap_err();
    println!("missing kind {:?} is NotFound {}", missing.kind(), missing.kind() == ErrorKind::NotFound);
    fs::remove_dir_all(base).unwrap();
    println!("removed {}", !std::path::Path::new(base).exists());
}
