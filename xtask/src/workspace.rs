//! Where things are (workspace root, target directory) and how to run the
//! programs xtask drives (cargo, QEMU, grub-mkrescue) with clear errors.

use crate::failure::{Context, Failure, Outcome};
use std::path::PathBuf;
use std::process::Command;

/// The workspace root: the folder above this crate.
pub fn root() -> PathBuf {
    let manifest_directory = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_directory
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR`).
pub fn target_directory() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(directory) => root().join(directory),
        None => root().join("target"),
    }
}

/// A `cargo` command run from the workspace root, with the same cargo that runs us.
pub fn cargo() -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(program);
    command.current_dir(root());
    command
}

/// Runs `command` to completion with inherited standard streams; fails unless it succeeds.
pub fn run_to_completion(command: &mut Command) -> Outcome {
    let shown = describe(command);
    eprintln!("xtask: running {shown}");
    let status = command
        .status()
        .context(|| format!("cannot start {shown}"))?;
    if status.success() {
        return Ok(());
    }
    Err(Failure::failed(format!("{shown} failed ({status})")))
}

/// The command line of `command` as one string, for messages.
pub fn describe(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(
        command
            .get_args()
            .map(|argument| argument.to_string_lossy().into_owned()),
    );
    words.join(" ")
}
