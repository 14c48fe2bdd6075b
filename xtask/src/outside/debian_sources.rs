//! Debian packages for the outside test suites, under `target/outside/`
//! and never committed: source packages (adds a `deb-src` entry when the
//! host has none, as on a fresh machine; fetches one pinned version with
//! `apt-get source --download-only`; unpacks it with `dpkg-source -x`,
//! which applies Debian's patches) and binary packages (`apt-get download`
//! of the version that matches what the host has installed, unpacked with
//! `dpkg-deb -x`, not installed).

use crate::failure::{Context, Failure, Outcome};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the `deb-src` entry goes when we add it.
const SOURCES_ENTRY: &str = "/etc/apt/sources.list.d/lamina-deb-src.sources";
/// The entry: Debian 12's main archive, as the host's binary entry.
const SOURCES_TEXT: &str = "# Added by `cargo xtask`: the outside test suites are built from Debian sources.\n\
Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n\
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";

/// One pinned source package.
#[derive(Debug, Clone, Copy)]
pub struct SourcePackage {
    pub name: &'static str,
    /// Debian version, e.g. `1.5.2-8`.
    pub version: &'static str,
}

impl SourcePackage {
    /// The `.dsc` file name `apt-get source` downloads.
    fn dsc_name(&self) -> String {
        let upstream_and_revision = self.version.split_once(':').map_or(self.version, |(_, rest)| rest);
        format!("{}_{}.dsc", self.name, upstream_and_revision)
    }
}

/// The unpacked, patched source tree of `package` (fetched on first use).
pub fn unpacked_source(package: SourcePackage) -> Outcome<PathBuf> {
    let base = crate::workspace::target_directory().join("outside");
    let tree = base.join(format!("{}-{}", package.name, package.version));
    let stamp = tree.join(".lamina-unpacked");
    if stamp.is_file() {
        return Ok(tree);
    }
    let downloads = base.join("downloads");
    std::fs::create_dir_all(&downloads).context(|| format!("creating {}", downloads.display()))?;
    let dsc = downloads.join(package.dsc_name());
    if !dsc.is_file() {
        ensure_source_entry()?;
        let pinned = format!("{}={}", package.name, package.version);
        let mut fetch = Command::new("apt-get");
        fetch.current_dir(&downloads).args(["source", "--download-only", &pinned]);
        crate::workspace::run_to_completion(&mut fetch).context(|| format!("fetching the Debian source of {pinned}"))?;
    }
    if tree.exists() {
        std::fs::remove_dir_all(&tree).context(|| format!("removing a half-unpacked {}", tree.display()))?;
    }
    let mut unpack = Command::new("dpkg-source");
    unpack.current_dir(&downloads).arg("-x").arg(&dsc).arg(&tree);
    crate::workspace::run_to_completion(&mut unpack)?;
    std::fs::write(&stamp, package.version).context(|| format!("writing {}", stamp.display()))?;
    Ok(tree)
}

/// The files of binary package `name`, unpacked (not installed) into
/// `target/outside/<name>-<version>/` on first use. `version`: the one
/// wanted (e.g. the same as an installed package's); when the archive no
/// longer has it, the archive's current one.
pub fn unpacked_binary(name: &str, version: &str) -> Outcome<PathBuf> {
    let base = crate::workspace::target_directory().join("outside");
    let downloads = base.join("downloads");
    std::fs::create_dir_all(&downloads).context(|| format!("creating {}", downloads.display()))?;
    let tree = base.join(format!("{name}-{version}"));
    let stamp = tree.join(".lamina-unpacked");
    if stamp.is_file() {
        return Ok(tree);
    }
    let deb = match find_deb(&downloads, name) {
        Some(deb) => deb,
        None => {
            let download = |what: &str| {
                let mut fetch = Command::new("apt-get");
                fetch.current_dir(&downloads).args(["download", what]);
                crate::workspace::run_to_completion(&mut fetch)
            };
            let pinned = format!("{name}={version}");
            if download(&pinned).is_err() && download(name).is_err() {
                // A fresh machine may not have read the package lists yet.
                crate::workspace::run_to_completion(Command::new("apt-get").arg("update"))?;
                download(name).context(|| format!("fetching Debian's {name}"))?;
            }
            find_deb(&downloads, name).ok_or_else(|| Failure::failed(format!("apt-get download {name} left no .deb in {}", downloads.display())))?
        }
    };
    if tree.exists() {
        std::fs::remove_dir_all(&tree).context(|| format!("removing a half-unpacked {}", tree.display()))?;
    }
    let mut unpack = Command::new("dpkg-deb");
    unpack.arg("-x").arg(&deb).arg(&tree);
    crate::workspace::run_to_completion(&mut unpack)?;
    std::fs::write(&stamp, deb.display().to_string()).context(|| format!("writing {}", stamp.display()))?;
    Ok(tree)
}

/// A downloaded `.deb` of package `name` (`NAME_VERSION_ARCH.deb`).
fn find_deb(downloads: &Path, name: &str) -> Option<PathBuf> {
    let prefix = format!("{name}_");
    let mut found: Vec<PathBuf> = std::fs::read_dir(downloads)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.file_name().and_then(|file| file.to_str()).is_some_and(|file| file.starts_with(&prefix) && file.ends_with(".deb")))
        .collect();
    found.sort();
    found.pop()
}

/// The version of installed Debian package `name` (`dpkg-query`).
pub fn installed_version(name: &str) -> Outcome<String> {
    let output = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", name])
        .output()
        .context(|| format!("asking dpkg-query for {name}'s version"))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !output.status.success() || version.is_empty() {
        return Err(Failure::failed(format!("Debian package {name} is not installed")));
    }
    Ok(version)
}

/// Makes sure apt knows a `deb-src` entry, adding ours (and running
/// `apt-get update`) when it knows none.
fn ensure_source_entry() -> Outcome {
    if has_source_entry(Path::new("/etc/apt")) {
        return Ok(());
    }
    if !crate::dependencies::is_root() {
        return Err(Failure::failed(format!(
            "apt has no deb-src entry; add one (as root) with:\n  printf '{}' > {SOURCES_ENTRY} && apt-get update",
            SOURCES_TEXT.replace('\n', "\\n")
        )));
    }
    std::fs::write(SOURCES_ENTRY, SOURCES_TEXT).context(|| format!("writing {SOURCES_ENTRY}"))?;
    crate::workspace::run_to_completion(Command::new("apt-get").arg("update"))
}

/// Whether any apt source file under `apt` enables `deb-src`.
fn has_source_entry(apt: &Path) -> bool {
    let mut files = vec![apt.join("sources.list")];
    if let Ok(entries) = std::fs::read_dir(apt.join("sources.list.d")) {
        files.extend(entries.filter_map(Result::ok).map(|entry| entry.path()));
    }
    files.iter().filter_map(|file| std::fs::read_to_string(file).ok()).any(|text| enables_source(&text))
}

/// A one-line `deb-src …` entry or a deb822 `Types:` field naming `deb-src`,
/// not commented out.
fn enables_source(text: &str) -> bool {
    text.lines().map(str::trim).any(|line| {
        line.starts_with("deb-src ") || line.strip_prefix("Types:").is_some_and(|types| types.split_whitespace().any(|kind| kind == "deb-src"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_entries_are_recognised_in_both_formats_and_comments_are_not() {
        assert!(enables_source("deb-src http://deb.debian.org/debian bookworm main\n"));
        assert!(enables_source("Types: deb deb-src\nURIs: http://x\n"));
        assert!(!enables_source("# deb-src http://deb.debian.org/debian bookworm main\nTypes: deb\n"));
        assert!(!enables_source("Types: deb\n# Types: deb-src\n"));
        assert!(enables_source(SOURCES_TEXT));
    }

    #[test]
    fn the_dsc_name_drops_an_epoch() {
        assert_eq!(SourcePackage { name: "posixtestsuite", version: "1.5.2-8" }.dsc_name(), "posixtestsuite_1.5.2-8.dsc");
        assert_eq!(SourcePackage { name: "x", version: "2:1.0-1" }.dsc_name(), "x_1.0-1.dsc");
    }
}
