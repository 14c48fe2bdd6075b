//! Static guest programs built from C sources in the repository with
//! `musl-gcc -static`: the guest's `/init` and the C user-space tests.
//! A program is rebuilt when its source is newer than the binary.

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
    if is_fresh(&binary, &source) {
        return Ok(binary);
    }
    let status = Command::new("musl-gcc")
        .args(["-static", "-O2", "-Wall", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .context(|| "running musl-gcc (package musl-tools)".to_string())?;
    if !status.success() {
        return Err(Failure::failed(format!("musl-gcc failed on {}", source.display())));
    }
    Ok(binary)
}

fn is_fresh(binary: &Path, source: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok();
    matches!((modified(binary), modified(source)), (Some(built), Some(written)) if built >= written)
}

/// The guest's `/init` (`user/init/init.c`).
pub fn init_program() -> Outcome<PathBuf> {
    compile_c("user/init/init.c", "init")
}
