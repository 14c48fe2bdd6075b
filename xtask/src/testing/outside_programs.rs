//! The `programs` part of the outside-suite tier: Lua, the SQLite shell,
//! GNU make, GNU tar and Redis, built statically from Debian's sources
//! (`outside/programs.rs`), each driven by its script in `user/programs/`
//! in one boot of Lamina and one of Linux; each passes when its output and
//! exit status are byte for byte the same on both and the script succeeded
//! on Linux (so that a broken script cannot pass by failing alike).

use std::time::Duration;

use super::tally::Tally;
use super::user_space::{compare, runner_request, sections};
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::Outcome;
use crate::outside::programs::{built, companions, PROGRAMS};

/// Longest one kernel's run of all four may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(600);
const RUNNER: &str = "/programs/run-all";

pub fn run_programs(tally: &mut Tally) -> Outcome {
    let request = request()?;
    crate::kernel_build::build_kernel(crate::kernel_build::ImageKind::Normal)?;
    crate::linux_kernel::vmlinux()?;
    let runs = std::thread::scope(|scope| {
        let lamina = scope.spawn(|| run_program(&ExecRequest { kernel: GuestKernel::Lamina, ..request.clone() }, Input::Console, Output::Capture, Some(TIME_LIMIT)));
        let linux = run_program(&ExecRequest { kernel: GuestKernel::Linux, ..request.clone() }, Input::Console, Output::Capture, Some(TIME_LIMIT));
        (lamina.join(), linux)
    });
    let lamina = match runs.0 {
        Ok(run) => run?,
        Err(_) => return Err(crate::failure::Failure::failed("the Lamina run panicked")),
    };
    let linux = runs.1?;
    let directory = crate::workspace::target_directory().join("outside");
    let _ = std::fs::write(directory.join("programs-lamina.txt"), &lamina.output);
    let _ = std::fs::write(directory.join("programs-linux.txt"), &linux.output);
    let (lamina, linux) = (sections(&String::from_utf8_lossy(&lamina.output)), sections(&String::from_utf8_lossy(&linux.output)));
    for program in PROGRAMS {
        let name = program.name;
        let result = match linux.get(name) {
            Some(text) if text.ends_with("--- exit 0\n") => compare(name, lamina.get(name), text),
            Some(text) => Err(format!("{name}'s script did not succeed on Linux:\n{text}")),
            None => Err(format!("{name} printed nothing on Linux")),
        };
        tally.record(&format!("suites: programs: {name} (Lamina = Linux, byte for byte)"), result);
    }
    Ok(())
}

/// One boot's work: the binaries in `/usr/local/bin`, the scripts, and a
/// runner that marks each script's output for [`sections`].
fn request() -> Outcome<ExecRequest> {
    let root = crate::workspace::root();
    let mut files = Vec::new();
    let mut script = String::from("#!/bin/sh\n# Runs each program's script between markers.\nexport PATH=/usr/local/bin:$PATH\n");
    for program in PROGRAMS {
        let name = program.name;
        files.push(FileCopy { host: built(program)?, guest: Some(format!("/usr/local/bin/{name}")) });
        for (companion, path) in companions(program)? {
            files.push(FileCopy { host: path, guest: Some(format!("/usr/local/bin/{companion}")) });
        }
        files.push(FileCopy { host: root.join(format!("user/programs/{name}.sh")), guest: Some(format!("/programs/{name}.sh")) });
        script.push_str(&format!("echo '=== {name}'\ncd /tmp\n/bin/sh /programs/{name}.sh 2>&1\necho \"--- exit $?\"\n"));
    }
    runner_request(files, "programs-run-all", &script, RUNNER)
}
