//! The initramfs xtask gives the guest: Debian's static BusyBox at
//! `/bin/busybox` with a link for every applet (at the paths `busybox
//! --list-full` gives), `/init` (`user/init/init.c`), `/tmp`,
//! `/etc/passwd`, `/etc/group` and `/etc/hosts` (localhost, as every
//! system has it: resolvers look "localhost" up there before asking a
//! name server), optional extra host files, and
//! `/etc/lamina-init` naming the program `/init` runs and its arguments
//! (NUL-separated) when one is asked for.

use crate::failure::{Context, Failure, Outcome};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's `busybox-static` puts BusyBox.
pub const BUSYBOX: &str = "/bin/busybox";

/// A host file to put at a guest path.
pub struct GuestFile {
    pub host: PathBuf,
    pub guest: String,
}

/// Builds the archive; `program`: what `/init` runs (`None`: the shell).
pub fn build_initramfs(files: &[GuestFile], program: Option<&[String]>) -> Outcome<Vec<u8>> {
    let mut writer = initramfs::Writer::new();
    let mut directories: Vec<String> = Vec::new();
    let mut directory = |writer: &mut initramfs::Writer, path: &str| {
        let mut prefix = String::new();
        for part in path.trim_matches('/').split('/').filter(|part| !part.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if !directories.contains(&prefix) {
                writer.directory(&prefix, if prefix == "tmp" { 0o1777 } else { 0o755 });
                directories.push(prefix.clone());
            }
        }
    };
    for path in ["bin", "sbin", "usr/bin", "usr/sbin", "tmp", "etc", "root", "dev", "proc"] {
        directory(&mut writer, path);
    }
    let busybox = std::fs::read(BUSYBOX).context(|| format!("reading {BUSYBOX} (package busybox-static)"))?;
    writer.file("bin/busybox", 0o755, &busybox);
    for applet in busybox_applets()? {
        let applet = applet.trim_start_matches('/');
        if applet == "bin/busybox" {
            continue;
        }
        if let Some((parent, _)) = applet.rsplit_once('/') {
            directory(&mut writer, parent);
        }
        writer.symlink(applet, "/bin/busybox");
    }
    let init = crate::guest_programs::init_program()?;
    writer.file("init", 0o755, &std::fs::read(&init).context(|| format!("reading {}", init.display()))?);
    writer.file("etc/passwd", 0o644, b"root:x:0:0:root:/root:/bin/sh\n");
    writer.file("etc/group", 0o644, b"root:x:0:\n");
    writer.file("etc/hosts", 0o644, b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for file in files {
        let contents = std::fs::read(&file.host).context(|| format!("reading {}", file.host.display()))?;
        let guest = file.guest.trim_start_matches('/');
        if let Some((parent, _)) = guest.rsplit_once('/') {
            directory(&mut writer, parent);
        }
        writer.file(guest, permissions(&file.host), &contents);
    }
    if let Some(arguments) = program {
        let joined: Vec<u8> = arguments.join("\0").into_bytes();
        writer.file("etc/lamina-init", 0o644, &joined);
    }
    Ok(writer.finish())
}

fn permissions(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map(|metadata| metadata.permissions().mode() & 0o7777).unwrap_or(0o644)
}

/// Every applet's install path, from BusyBox itself.
fn busybox_applets() -> Outcome<Vec<String>> {
    let output = Command::new(BUSYBOX).arg("--list-full").output().context(|| format!("running {BUSYBOX} --list-full"))?;
    if !output.status.success() {
        return Err(Failure::failed(format!("{BUSYBOX} --list-full failed")));
    }
    Ok(String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).filter(|line| !line.is_empty()).collect())
}

/// Writes `bytes` to `target/guest/<name>` and returns the path.
pub fn write_image(name: &str, bytes: &[u8]) -> Outcome<PathBuf> {
    let directory = crate::workspace::root().join("target").join("guest");
    std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
    let path = directory.join(name);
    std::fs::write(&path, bytes).context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
