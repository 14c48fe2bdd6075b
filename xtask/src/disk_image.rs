//! `--disk PATH`: a raw disk image attached to the guest as a virtio block
//! device (`/dev/vda` on Lamina and on Linux). A missing image is made:
//! 256 MiB, sparse, formatted as ext4 by Debian's `mkfs.ext4`.
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
    let file = std::fs::File::create(path).context(|| format!("creating {}", path.display()))?;
    file.set_len(NEW_IMAGE_BYTES).context(|| format!("sizing {}", path.display()))?;
    let output = Command::new("mkfs.ext4").args(["-q", "-F"]).arg(path).output().context(|| "running mkfs.ext4 (package e2fsprogs)".to_string())?;
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
