//! `--disk PATH`: a raw disk image attached to the guest as a virtio block
//! device (`/dev/vda` on Lamina and on Linux). A missing image is made:
//! 256 MiB, sparse, formatted as ext4 by Debian's `mkfs.ext4`.
//!
//! `make run`'s root disk (`target/lamina-disk.img`): a missing one is
//! made from the shell's initramfs tree with `mkfs.ext4 -d`, so the
//! guest's root file system is that tree, kept across boots.
//!
//! Must never overwrite an existing image (it is the user's disk).

use crate::failure::{Context, Failure, Outcome};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Size of an image made for a missing `--disk` path.
const NEW_IMAGE_BYTES: u64 = 256 << 20;

/// The image at `path`, made first if it does not exist.
pub fn prepare(path: &Path) -> Outcome<PathBuf> {
    if path.to_string_lossy().contains(',') {
        return Err(Failure::usage(format!("--disk {}: QEMU cannot take a path with a comma", path.display())));
    }
    if !path.exists() {
        make_image(path)?;
    }
    if !path.is_file() {
        return Err(Failure::usage(format!("--disk {}: not a file", path.display())));
    }
    std::fs::canonicalize(path).context(|| format!("resolving {}", path.display()))
}

fn make_image(path: &Path) -> Outcome {
    eprintln!("xtask: making {} (256 MiB, ext4)", path.display());
    format(path, NEW_IMAGE_BYTES, Mkfs::default())
}

/// Size of a root disk made for `make run`.
const ROOT_IMAGE_BYTES: u64 = 1 << 30;

/// The root disk at `path`, made first if it does not exist: 1 GiB,
/// sparse, ext4 holding the tree of the newc archive `tree`.
pub fn prepare_root(path: &Path, tree: &[u8]) -> Outcome<PathBuf> {
    if !path.exists() {
        eprintln!("xtask: making {} (1 GiB, ext4, the shell's tree; delete it to start afresh)", path.display());
        let staging = path.with_extension("tree");
        let _ = std::fs::remove_dir_all(&staging);
        unpack(tree, &staging)?;
        let made = format(path, ROOT_IMAGE_BYTES, Mkfs { contents: Some(&staging), ..Mkfs::default() });
        let _ = std::fs::remove_dir_all(&staging);
        made?;
    }
    copy_apps_into(path)?;
    prepare(path)
}

/// Puts what `cargo xtask apps` built into the root image's
/// `/usr/local/bin` (with `debugfs`, the image unmounted), replacing older
/// copies, so a disk made before the apps were built gets them too. An
/// image whose journal needs recovery is left alone (Lamina replays it at
/// the next boot; the copy waits for the boot after).
fn copy_apps_into(image: &Path) -> Outcome {
    let apps = crate::apps::guest_apps();
    if apps.is_empty() {
        return Ok(());
    }
    let superblock = Command::new("dumpe2fs").args(["-h"]).arg(image).output().context(|| "running dumpe2fs (package e2fsprogs)".to_string())?;
    if String::from_utf8_lossy(&superblock.stdout).contains("needs_recovery") {
        return Ok(());
    }
    let mut script = String::from("mkdir /usr\nmkdir /usr/local\nmkdir /usr/local/bin\n");
    for app in &apps {
        let guest = format!("/{}", app.guest);
        script.push_str(&format!("rm {guest}\nwrite {} {guest}\nsif {guest} mode 0100755\n", app.host.display()));
    }
    let commands = image.with_extension("apps");
    std::fs::write(&commands, script).context(|| format!("writing {}", commands.display()))?;
    let output = Command::new("debugfs").arg("-w").arg("-f").arg(&commands).arg(image).output().context(|| "running debugfs (package e2fsprogs)".to_string());
    let _ = std::fs::remove_file(&commands);
    if !output?.status.success() {
        return Err(Failure::failed(format!("debugfs could not copy the apps into {}", image.display())));
    }
    Ok(())
}

/// Writes the entries of the newc archive `archive` under `directory`.
fn unpack(archive: &[u8], directory: &Path) -> Outcome {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(directory).context(|| format!("creating {}", directory.display()))?;
    for entry in initramfs::entries(archive) {
        let entry = entry.map_err(|error| Failure::failed(format!("reading the shell's archive: {error:?}")))?;
        let relative = entry.name.trim_start_matches('/');
        if relative.is_empty() || relative == "." || relative.split('/').any(|part| part == "..") {
            continue;
        }
        let target = directory.join(relative);
        let permissions = std::fs::Permissions::from_mode(entry.mode & 0o7777);
        match entry.mode & 0o170000 {
            0o040000 => {
                std::fs::create_dir_all(&target).context(|| format!("creating {}", target.display()))?;
                std::fs::set_permissions(&target, permissions).context(|| format!("chmod {}", target.display()))?;
            }
            0o120000 => {
                let link = String::from_utf8_lossy(entry.data).into_owned();
                std::os::unix::fs::symlink(&link, &target).context(|| format!("linking {}", target.display()))?;
            }
            0o100000 => {
                std::fs::write(&target, entry.data).context(|| format!("writing {}", target.display()))?;
                std::fs::set_permissions(&target, permissions).context(|| format!("chmod {}", target.display()))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// How [`format()`] calls `mkfs.ext4` beyond its defaults.
#[derive(Default)]
pub struct Mkfs<'a> {
    /// More options (`-b 1024`, `-N 256`).
    pub options: &'a [&'a str],
    /// A tree the file system is made holding (`-d`, owned by root as on
    /// a system).
    pub contents: Option<&'a Path>,
    /// The file system's size in blocks, when smaller than the file.
    pub blocks: Option<u64>,
}

/// Makes a fresh sparse file of `bytes` at `path` (replacing one that is
/// there) and formats it as ext4 as `mkfs` says.
pub fn format(path: &Path, bytes: u64, mkfs: Mkfs<'_>) -> Outcome {
    let file = std::fs::File::create(path).context(|| format!("creating {}", path.display()))?;
    file.set_len(bytes).context(|| format!("sizing {}", path.display()))?;
    let mut command = Command::new("mkfs.ext4");
    command.args(["-q", "-F"]).args(mkfs.options);
    if let Some(tree) = mkfs.contents {
        command.args(["-E", "root_owner=0:0", "-d"]).arg(tree);
    }
    command.arg(path);
    if let Some(blocks) = mkfs.blocks {
        command.arg(blocks.to_string());
    }
    let output = command.output().context(|| "running mkfs.ext4 (package e2fsprogs)".to_string())?;
    if !output.status.success() {
        let _ = std::fs::remove_file(path);
        return Err(Failure::failed(format!("mkfs.ext4 {}: {}", path.display(), String::from_utf8_lossy(&output.stderr))));
    }
    Ok(())
}

/// QEMU's arguments for attaching `image` as the first virtio disk.
pub fn qemu_arguments(image: &Path) -> Vec<String> {
    vec![
        "-drive".to_string(),
        format!("file={},if=none,id=disk0,format=raw", image.display()),
        "-device".to_string(),
        "virtio-blk-pci,drive=disk0".to_string(),
    ]
}

/// QEMU's arguments for attaching `image` as the first virtio disk with
/// every write and flush logged to `log` (QEMU's `blklogwrites` driver,
/// dm-log-writes format, 512-byte log sectors; `log` must exist).
pub fn logged_qemu_arguments(image: &Path, log: &Path) -> Vec<String> {
    vec![
        "-blockdev".to_string(),
        format!(
            "driver=blklogwrites,node-name=disk0,file.driver=file,file.filename={},log.driver=file,log.filename={},log-sector-size=512,log-append=off",
            image.display(),
            log.display()
        ),
        "-device".to_string(),
        "virtio-blk-pci,drive=disk0".to_string(),
    ]
}
