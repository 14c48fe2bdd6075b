//! The `fs` benchmark group: Lamina's ext4 beside Linux's on the same
//! kind of virtio disk, in the same QEMU configuration, in one run
//! (wall time, median of several boots: under icount a wait for the disk
//! counts as the distance to the next armed timer, see
//! `linux_bench::Counting`).
//! `user/bench/fs.c` runs on a fresh 512 MiB `mkfs.ext4` image mounted at
//! `/mnt` for every boot: 1,000 small files fsynced, 256 MiB written and
//! read sequentially, random 4 KiB reads and writes, 64 MiB read through
//! `mmap`, a `tar` of 5,000 files extracted, and `sqlite3` inserts with a
//! transaction per row and in one transaction (Debian's SQLite built by
//! the programs recipe).

use crate::bench_results::BenchmarkRecord;
use crate::exec::{ExecRequest, FileCopy, GuestKernel};
use crate::failure::{Context, Failure, Outcome};
use crate::guest_programs::compile_c;
use crate::linux_bench::{measure_as, Counting};
use crate::machine_options::MachineOptions;
use std::path::{Path, PathBuf};
use std::process::Command;

const IMAGE_BYTES: u64 = 512 << 20;
const TREE_FILES: usize = 5000;

/// The `fs` group.
pub fn run_fs_group() -> Outcome<Vec<BenchmarkRecord>> {
    let program = compile_c("user/bench/fs.c", "bench-fs")?;
    let directory = crate::workspace::root().join("target").join("bench");
    std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
    let tree = tree_archive(&directory)?;
    let sqlite = crate::outside::programs::PROGRAMS.iter().find(|program| program.name == "sqlite3").map(crate::outside::programs::built).transpose()?;
    let image = directory.join("fs-disk.img");
    let mut files = vec![
        FileCopy { host: program.clone(), guest: Some("/bench/fs".to_string()) },
        FileCopy { host: tree, guest: Some("/bench/tree.tar".to_string()) },
    ];
    if let Some(sqlite) = sqlite {
        files.push(FileCopy { host: sqlite, guest: Some("/bench/sqlite3".to_string()) });
    }
    let request = |kernel: GuestKernel, machine: MachineOptions| -> ExecRequest {
        // Every boot starts from a fresh file system. A failure here shows
        // as the guest's mount failing, and the group's error says so.
        if let Err(failure) = fresh_image(&image) {
            eprintln!("xtask: fs: {failure}");
        }
        ExecRequest {
            machine,
            kernel,
            files: files.clone(),
            program: program.clone(),
            program_arguments: vec!["/mnt".to_string(), "/dev/vda".to_string()],
            disk: Some(image.clone()),
            mount_disk: true,
            disk_log: None,
            network: None,
        }
    };
    measure_as("fs", &request, Counting::WallOnly)
}

/// A fresh ext4 image at `path` (mkfs.ext4's defaults for 512 MiB).
fn fresh_image(path: &Path) -> Outcome {
    crate::disk_image::format(path, IMAGE_BYTES, crate::disk_image::Mkfs::default())
}

/// `tree.tar`: 5,000 files of 100 B to 8 KiB in 50 directories (made once).
fn tree_archive(directory: &Path) -> Outcome<PathBuf> {
    let archive = directory.join("tree.tar");
    if archive.is_file() {
        return Ok(archive);
    }
    let tree = directory.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    for index in 0..TREE_FILES {
        let folder = tree.join(format!("d{:02}", index % 50));
        std::fs::create_dir_all(&folder).context(|| format!("creating {}", folder.display()))?;
        let length = 100 + (index * 7919) % 8092;
        let bytes: Vec<u8> = (0..length).map(|at| (at * 31 + index) as u8).collect();
        let file = folder.join(format!("f{index}"));
        std::fs::write(&file, bytes).context(|| format!("writing {}", file.display()))?;
    }
    let status = Command::new("tar")
        .arg("-cf")
        .arg(&archive)
        .arg("-C")
        .arg(&directory)
        .arg("tree")
        .status()
        .context(|| "running tar".to_string())?;
    let _ = std::fs::remove_dir_all(&tree);
    if !status.success() {
        let _ = std::fs::remove_file(&archive);
        return Err(Failure::failed("tar of the benchmark tree failed"));
    }
    Ok(archive)
}
