//! Static guest programs: C sources built with `musl-gcc -static` (the
//! guest's `/init` and the C user-space tests; rebuilt when the source is
//! newer than the binary) and the Rust user-space tests, built with std
//! for `x86_64-unknown-linux-musl`.

use crate::failure::{Context, Failure, Outcome};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `source` (relative to the workspace) into `target/guest/bin/<name>`.
pub fn compile_c(source: &str, name: &str) -> Outcome<PathBuf> {
    let root = crate::workspace::root();
    let source = root.join(source);
    let directory = root.join("target").join("guest").join("bin");
    std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
    let binary = directory.join(name);
    if is_fresh(&binary, &source, &root.join(SHARED_HEADERS).join("lamina")) {
        return Ok(binary);
    }
    // Built under a name of its own and renamed into place: two threads
    // building one program at once (the page-cache check boots Lamina and
    // Linux side by side) once let one copy the other's half-written,
    // not yet executable output into its guest ("Permission denied").
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let build = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let partial = directory.join(format!(".{name}.{}.{build}.partial", std::process::id()));
    let status = Command::new("musl-gcc")
        .args(["-static", "-O2", "-Wall", "-I"])
        .arg(crate::workspace::root().join(SHARED_HEADERS))
        .arg("-I")
        .arg(kernel_headers()?)
        .arg("-o")
        .arg(&partial)
        .arg(&source)
        .status()
        .context(|| "running musl-gcc (package musl-tools)".to_string())?;
    if !status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(Failure::failed(format!("musl-gcc failed on {}", source.display())));
    }
    std::fs::rename(&partial, &binary).context(|| format!("renaming {} to {}", partial.display(), binary.display()))?;
    Ok(binary)
}

/// A folder holding only Linux's UAPI headers (`linux/`, `asm/`,
/// `asm-generic/` of Debian's linux-libc-dev, linked), so a guest program
/// may include `<linux/kvm.h>` while musl's own libc headers stay the ones
/// used (`-I /usr/include` would put glibc's first).
fn kernel_headers() -> Outcome<PathBuf> {
    let folder = crate::workspace::root().join("target").join("guest").join("uapi");
    std::fs::create_dir_all(&folder).context(|| format!("creating {}", folder.display()))?;
    for (name, target) in [("linux", "/usr/include/linux"), ("asm", "/usr/include/x86_64-linux-gnu/asm"), ("asm-generic", "/usr/include/asm-generic")] {
        let link = folder.join(name);
        if std::fs::read_link(&link).is_err() {
            std::os::unix::fs::symlink(target, &link).context(|| format!("linking {} to {target}", link.display()))?;
        }
    }
    Ok(folder)
}

/// Headers every guest program may include (`#include <lamina/native.h>`).
const SHARED_HEADERS: &str = "user/include";

/// Whether `binary` is newer than `source`, than every header beside
/// it and than those in `shared` (a program's own headers live in its directory: `syscalls.c`
/// includes `lmbench_like.h`, and a change to that alone once left a
/// stale benchmark binary in use).
fn is_fresh(binary: &Path, source: &Path, shared: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok();
    let Some(built) = modified(binary) else { return false };
    let headers = [source.parent().map(Path::to_path_buf), Some(shared.to_path_buf())]
        .into_iter()
        .flatten()
        .filter_map(|directory| std::fs::read_dir(directory).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "h"));
    core::iter::once(source.to_path_buf()).chain(headers).all(|input| modified(&input).is_some_and(|written| built >= written))
}

/// The guest's `/init` (`user/init/init.c`).
pub fn init_program() -> Outcome<PathBuf> {
    compile_c("user/init/init.c", "init")
}

/// Builds the Rust user-space tests (`user/tests/rust`, one binary per
/// `src/bin/*.rs`); returns (name, binary) pairs.
pub fn rust_tests() -> Outcome<Vec<(String, PathBuf)>> {
    let root = crate::workspace::root();
    let manifest = root.join("user/tests/rust/Cargo.toml");
    let target_directory = root.join("target").join("guest").join("rust");
    crate::workspace::run_to_completion(
        crate::workspace::cargo()
            .args(["build", "--release", "--locked", "--target", "x86_64-unknown-linux-musl", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_directory),
    )?;
    let binaries = target_directory.join("x86_64-unknown-linux-musl").join("release");
    let mut names: Vec<String> = std::fs::read_dir(root.join("user/tests/rust/src/bin"))
        .context(|| "listing user/tests/rust/src/bin".to_string())?
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_string_lossy().strip_suffix(".rs").map(str::to_string))
        .collect();
    names.sort();
    Ok(names.into_iter().map(|name| (name.clone(), binaries.join(name))).collect())
}

/// The VMM (`user/vmm`, Rust, static), built for the guest.
pub fn vmm() -> Outcome<PathBuf> {
    let root = crate::workspace::root();
    let target_directory = root.join("target").join("guest").join("vmm");
    crate::workspace::run_to_completion(
        crate::workspace::cargo()
            .args(["build", "--release", "--locked", "--target", "x86_64-unknown-linux-musl", "--manifest-path"])
            .arg(root.join("user/vmm/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_directory),
    )?;
    Ok(target_directory.join("x86_64-unknown-linux-musl").join("release").join("lamina-vmm"))
}

#[cfg(test)]
mod tests {
    use super::is_fresh;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_binary_older_than_a_header_beside_its_source_is_stale() {
        let directory = std::env::temp_dir().join(format!("lamina-fresh-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let at = |seconds: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds);
        let write = |name: &str, when: SystemTime| {
            let path = directory.join(name);
            std::fs::write(&path, b"x").unwrap();
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
            path
        };
        let shared = directory.join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        let source = write("program.c", at(0));
        write("part.h", at(10));
        write("shared/common.h", at(5));
        let binary = write("program", at(20));
        assert!(is_fresh(&binary, &source, &shared));
        write("part.h", at(30));
        assert!(!is_fresh(&binary, &source, &shared));
        write("part.h", at(10));
        write("shared/common.h", at(30));
        assert!(!is_fresh(&binary, &source, &shared), "a newer shared header makes the binary stale");
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
