//! Debian's Linux kernel for `xtask exec --linux`: the package named by
//! `linux-image-amd64` is downloaded (`apt-get download`, not installed:
//! installing would rewrite the host's /boot), unpacked with `dpkg-deb`,
//! and the `vmlinux` ELF inside its XZ-compressed bzImage is extracted,
//! so that QEMU boots it through PVH like Lamina. Kept in `target/linux/`.

use crate::failure::{Context, Failure, Outcome};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The extracted kernel, fetching it first if needed.
pub fn vmlinux() -> Outcome<PathBuf> {
    let directory = crate::workspace::root().join("target").join("linux");
    let vmlinux = directory.join("vmlinux");
    if vmlinux.is_file() {
        return Ok(vmlinux);
    }
    std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
    eprintln!("xtask: fetching Debian's kernel (linux-image-amd64) into {}", directory.display());
    let meta = download(&directory, "linux-image-amd64")?;
    let depends = run(Command::new("dpkg-deb").args(["-f"]).arg(&meta).arg("Depends"))?;
    let package = depends
        .split([',', ' ', '('])
        .find(|word| word.starts_with("linux-image-"))
        .ok_or_else(|| Failure::failed(format!("no kernel package in `{depends}`")))?
        .to_string();
    let deb = download(&directory, &package)?;
    let unpacked = directory.join("root");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))?;
    let boot = unpacked.join("boot");
    let bzimage = std::fs::read_dir(&boot)
        .context(|| format!("listing {}", boot.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("vmlinuz-")))
        .ok_or_else(|| Failure::failed("no vmlinuz in the kernel package"))?;
    extract_vmlinux(&bzimage, &vmlinux)?;
    Ok(vmlinux)
}

fn download(directory: &Path, package: &str) -> Outcome<PathBuf> {
    let before: Vec<PathBuf> = debs(directory);
    run(Command::new("apt-get").arg("download").arg(package).current_dir(directory))?;
    debs(directory)
        .into_iter()
        .find(|path| !before.contains(path) || path.file_name().is_some_and(|name| name.to_string_lossy().starts_with(&format!("{package}_"))))
        .ok_or_else(|| Failure::failed(format!("apt-get download {package} left no .deb")))
}

fn debs(directory: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(directory)
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path()).filter(|path| path.extension().is_some_and(|extension| extension == "deb")).collect())
        .unwrap_or_default()
}

/// The kernel ELF inside a bzImage: the XZ stream after the setup code.
fn extract_vmlinux(bzimage: &Path, vmlinux: &Path) -> Outcome {
    let image = std::fs::read(bzimage).context(|| format!("reading {}", bzimage.display()))?;
    let magic = b"\xfd7zXZ\x00";
    let start = image.windows(magic.len()).position(|window| window == magic).ok_or_else(|| Failure::failed("the bzImage holds no XZ stream"))?;
    let stream = vmlinux.with_extension("xz");
    std::fs::write(&stream, &image[start..]).context(|| format!("writing {}", stream.display()))?;
    let output = Command::new("xz").args(["-dc", "--single-stream"]).arg(&stream).output().context(|| "running xz".to_string())?;
    let _ = std::fs::remove_file(&stream);
    if !output.stdout.starts_with(b"\x7fELF") {
        return Err(Failure::failed("the decompressed kernel is not an ELF file"));
    }
    std::fs::write(vmlinux, &output.stdout).context(|| format!("writing {}", vmlinux.display()))
}

fn run(command: &mut Command) -> Outcome<String> {
    let output = command.output().context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        return Err(Failure::failed(format!("{command:?} failed: {}", String::from_utf8_lossy(&output.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}
