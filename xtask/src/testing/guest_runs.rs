//! What the disk checks share: comparing one script's runs on the two
//! kernels, and running a host tool that must succeed.

use super::tally::CheckResult;
use crate::exec::ProgramRun;
use crate::failure::{Context, Failure, Outcome};
use std::process::Command;

/// Both runs exited 0 with nothing on stderr, printed the same, and
/// Linux's output shows the script ran to its end (`complete`).
pub(super) fn same_output(lamina: &ProgramRun, linux: &ProgramRun, complete: impl Fn(&str) -> bool) -> CheckResult {
    for (kernel, run) in [("Lamina", lamina), ("Linux", linux)] {
        if run.exit_code != 0 || !run.errors.is_empty() {
            return Err(format!("{kernel}: exit {}, stderr {}", run.exit_code, String::from_utf8_lossy(&run.errors)));
        }
    }
    if lamina.output != linux.output || !complete(&String::from_utf8_lossy(&linux.output)) {
        return Err(format!("Lamina printed:\n{}\nLinux printed:\n{}", String::from_utf8_lossy(&lamina.output), String::from_utf8_lossy(&linux.output)));
    }
    Ok(())
}

/// Runs `program` on the host; a failure carries its status and stderr.
pub(super) fn run_host(program: &str, arguments: &[&str]) -> Outcome<()> {
    let output = Command::new(program).args(arguments).output().context(|| format!("running {program}"))?;
    if !output.status.success() {
        return Err(Failure::failed(format!("{program} {arguments:?}: {}: {}", output.status, String::from_utf8_lossy(&output.stderr))));
    }
    Ok(())
}

/// A fresh, empty ext4 image of `size` (`truncate`'s form: `64M`) at
/// `target/<name>.img`, made with mkfs's defaults; its path.
pub(super) fn fresh_ext4_image(name: &str, size: &str) -> Outcome<std::path::PathBuf> {
    let image = crate::workspace::root().join("target").join(format!("{name}.img"));
    let _ = std::fs::remove_file(&image);
    let image_text = image.display().to_string();
    run_host("truncate", &["-s", size, &image_text])?;
    run_host("mkfs.ext4", &["-q", "-F", &image_text])?;
    Ok(image)
}
