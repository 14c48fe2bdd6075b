//! `cargo xtask apps`: the real programs of `outside/programs.rs` (servers
//! among them: redis-server with redis-cli and redis-benchmark), built
//! statically from Debian's sources and copied into `target/apps/`.
//! `make run` puts what is there into the guest's `/usr/local/bin`.
//!
//! Must not install anything; a build that fails says which and why.

use crate::failure::{Context, Outcome};
use crate::guest_files::GuestFile;
use crate::outside::programs::{built, companions, PROGRAMS};
use std::path::PathBuf;

/// Where the built programs are collected.
pub fn apps_directory() -> PathBuf {
    crate::workspace::target_directory().join("apps")
}

/// Builds every program and copies it (and its companions) into
/// [`apps_directory`].
pub fn apps_command() -> Outcome {
    crate::dependencies::ensure_dependencies()?;
    let directory = apps_directory();
    std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
    for program in PROGRAMS {
        let mut binaries = vec![(program.name.to_string(), built(program)?)];
        binaries.extend(companions(program)?);
        for (name, path) in binaries {
            let target = directory.join(&name);
            std::fs::copy(&path, &target).context(|| format!("copying {} to {}", path.display(), target.display()))?;
            println!("xtask: {}", target.display());
        }
    }
    println!("xtask: `make run` puts these into /usr/local/bin");
    Ok(())
}

/// The programs `cargo xtask apps` collected, as guest files under
/// `/usr/local/bin` (none before it ran).
pub fn guest_apps() -> Vec<GuestFile> {
    let Ok(entries) = std::fs::read_dir(apps_directory()) else { return Vec::new() };
    let mut files: Vec<GuestFile> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_file())
        .map(|entry| GuestFile { host: entry.path(), guest: format!("usr/local/bin/{}", entry.file_name().to_string_lossy()) })
        .collect();
    files.sort_by(|one, other| one.guest.cmp(&other.guest));
    files
}
