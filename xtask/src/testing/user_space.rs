//! Tier 4: the user-space test suite on both kernels. Every C test
//! (`user/tests/c/*.c`, built with `musl-gcc -static`), every Rust test
//! (`user/tests/rust/src/bin/*.rs`, std on musl) and every shell scenario
//! (`user/tests/sh/*.sh`, run by BusyBox `sh`) runs in one boot
//! of Lamina and one of Debian's Linux in the same QEMU configuration;
//! each test passes when its output and exit status are the same on both.
//! The tests of Lamina's native calls (`user/tests/native/*.c`, which
//! Linux does not have) run in the same boots and pass when, on Lamina,
//! they exit 0 and print no line starting with `FAIL`.

use super::tally::{CheckResult, Tally};
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Failure, Outcome};
use crate::guest_programs::compile_c;
use crate::machine_options::MachineOptions;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Longest one kernel's run of the whole suite may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(600);
const RUNNER: &str = "/tests/run-all";

pub fn run_user_tests(tally: &mut Tally) {
    let request = match suite_request() {
        Ok(request) => request,
        Err(failure) => return tally.record("user: build the suite", Err(failure.to_string())),
    };
    let mut outputs = Vec::new();
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        let request = ExecRequest { kernel, ..request.clone() };
        match run_program(&request, Input::Console, Output::Capture, Some(TIME_LIMIT)) {
            Ok(run) => {
                // Kept for a look after a difference: target/user-<kernel>.txt.
                let kept = crate::workspace::target_directory().join(format!("user-{kernel:?}.txt").to_lowercase());
                let _ = std::fs::write(&kept, &run.output);
                outputs.push(sections(&String::from_utf8_lossy(&run.output)))
            }
            Err(failure) => return tally.record(&format!("user: run the suite on {kernel:?}"), Err(failure.to_string())),
        }
    }
    let (lamina, linux) = (&outputs[0], &outputs[1]);
    for (name, output) in lamina.iter().filter(|(name, _)| name.starts_with("native/")) {
        tally.record(&format!("user: {name} (Lamina only)"), native_verdict(name, output));
    }
    for (name, expected) in linux.iter().filter(|(name, _)| !name.starts_with("native/")) {
        let result = compare(name, lamina.get(name), expected);
        tally.record(&format!("user: {name} (Lamina = Linux)"), result);
    }
    if linux.is_empty() {
        tally.record("user: the suite ran on Linux", Err("no test output from Linux".to_string()));
    }
}

/// Whether a test's output on Lamina is Linux's, with the first
/// differences when not.
pub(super) fn compare(name: &str, lamina: Option<&String>, linux: &str) -> CheckResult {
    let Some(lamina) = lamina else {
        return Err(format!("{name} printed nothing on Lamina"));
    };
    if !linux.contains("--- exit ") {
        return Err(format!("{name} did not finish on Linux:\n{linux}"));
    }
    if lamina == linux {
        return Ok(());
    }
    let difference: Vec<String> = lamina
        .lines()
        .zip(linux.lines().chain(std::iter::repeat("<nothing>")))
        .filter(|(ours, theirs)| ours != theirs)
        .take(5)
        .map(|(ours, theirs)| format!("  lamina: {ours}\n  linux:  {theirs}"))
        .collect();
    Err(format!("outputs differ ({} vs {} lines), first differences:\n{}", lamina.lines().count(), linux.lines().count(), difference.join("\n")))
}

/// A native test's verdict from its output on Lamina.
pub(super) fn native_verdict(name: &str, output: &str) -> CheckResult {
    let failed: Vec<&str> = output.lines().filter(|line| line.starts_with("FAIL")).collect();
    if !failed.is_empty() {
        return Err(format!("{name}: {}", failed.join("; ")));
    }
    if !output.lines().any(|line| line == "--- exit 0") {
        return Err(format!("{name} did not exit 0:\n{output}"));
    }
    Ok(())
}

/// Splits the runner's output into `name -> lines` at `=== name` headers.
/// A name that comes twice keeps both texts, joined under a line saying so,
/// so that two tests of one name can never hide one another.
pub(crate) fn sections(output: &str) -> BTreeMap<String, String> {
    let mut sections: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    let keep = |sections: &mut BTreeMap<String, String>, (name, text): (String, String)| {
        let kept = sections.entry(name).or_default();
        if !kept.is_empty() {
            kept.push_str("=== (a second test of this name)\n");
        }
        kept.push_str(&text);
    };
    for line in output.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            if let Some(section) = current.take() {
                keep(&mut sections, section);
            }
            current = Some((name.to_string(), String::new()));
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    if let Some(section) = current {
        keep(&mut sections, section);
    }
    sections
}

/// The suite as one `exec` request: the tests under `/tests` and a runner.
fn suite_request() -> Outcome<ExecRequest> {
    let root = crate::workspace::root();
    let mut files = Vec::new();
    let mut script = String::from("#!/bin/sh\n# Runs every test, each between markers the tier splits on.\ncd /tmp\n");
    // (directory, extension, the section names' prefix)
    for (directory, extension, kind) in [("user/tests/c", "c", "c"), ("user/tests/native", "c", "native"), ("user/tests/sh", "sh", "sh")] {
        let mut names: Vec<String> = std::fs::read_dir(root.join(directory))
            .map_err(|error| Failure::failed(format!("listing {directory}: {error}")))?
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().to_string())
            .filter(|name| name.ends_with(&format!(".{extension}")))
            .collect();
        names.sort();
        for name in names {
            let stem = name.trim_end_matches(&format!(".{extension}")).to_string();
            let (host, guest, command) = if extension == "c" {
                let built = if kind == "c" { stem.clone() } else { format!("{kind}-{stem}") };
                let binary = compile_c(&format!("{directory}/{name}"), &built)?;
                (binary, format!("/tests/bin/{built}"), format!("/tests/bin/{built}"))
            } else {
                (root.join(directory).join(&name), format!("/tests/sh/{name}"), format!("/bin/sh /tests/sh/{name}"))
            };
            files.push(FileCopy { host, guest: Some(guest) });
            script.push_str(&format!("echo '=== {kind}/{stem}'\n{command} 2>&1\necho \"--- exit $?\"\ncd /tmp\n"));
        }
    }
    for (name, binary) in crate::guest_programs::rust_tests()? {
        let guest = format!("/tests/rust/{name}");
        script.push_str(&format!("echo '=== rust/{name}'\n{guest} first second 2>&1\necho \"--- exit $?\"\ncd /tmp\n"));
        files.push(FileCopy { host: binary, guest: Some(guest) });
    }
    runner_request(files, "run-all", &script, RUNNER)
}

/// An `exec` request that runs `script` (written to the guest as
/// `guest_path`) with BusyBox `sh`, beside `files`.
pub(super) fn runner_request(mut files: Vec<FileCopy>, name: &str, script: &str, guest_path: &str) -> Outcome<ExecRequest> {
    let runner: PathBuf = crate::guest_files::write_image(name, script.as_bytes())?;
    files.push(FileCopy { host: runner, guest: Some(guest_path.to_string()) });
    Ok(ExecRequest {
        machine: MachineOptions::default(),
        kernel: GuestKernel::Lamina,
        files,
        program: "/bin/busybox".into(),
        program_arguments: vec!["sh".to_string(), guest_path.to_string()],
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_tests_of_one_name_cannot_hide_each_other() {
        let output = "=== c/files\none\n--- exit 0\n=== sh/files\ntwo\n=== sh/files\nthree\n";
        let found = sections(output);
        assert_eq!(found["c/files"], "one\n--- exit 0\n");
        assert!(found["sh/files"].contains("two\n") && found["sh/files"].contains("three\n"), "{:?}", found["sh/files"]);
    }

    #[test]
    fn a_native_test_passes_only_on_exit_0_without_a_fail_line() {
        assert!(native_verdict("native/ipc", "ok one\nok two\n--- exit 0\n").is_ok());
        assert!(native_verdict("native/ipc", "ok one\nFAIL two\n--- exit 0\n").is_err());
        assert!(native_verdict("native/ipc", "ok one\n--- exit 1\n").is_err());
        assert!(native_verdict("native/ipc", "ok one\n").is_err(), "a test cut short passes nothing");
    }
}
