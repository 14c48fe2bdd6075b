//! Part of tier 4: `cargo xtask exec` with piped standard streams, on both
//! kernels. A program gets exactly the bytes piped in and then end of file,
//! and its standard output and error come back apart and byte-exact,
//! whatever they hold (binary data of a few MiB included). And Debian's own
//! dynamically linked programs (glibc's `ld.so`, `bash`, coreutils) run
//! unchanged, with the same output on both kernels.

use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output, ProgramRun};
use crate::failure::Outcome;
use crate::machine_options::MachineOptions;
use std::time::Duration;

/// Longest one piped run may take under TCG (Linux needs about 25 s for
/// the round trip).
const TIME_LIMIT: Duration = Duration::from_secs(180);
/// Bytes of the binary round trip.
const ROUND_TRIP_BYTES: usize = 2 << 20;

pub fn run_exec_checks(tally: &mut Tally) {
    let data = binary_data(ROUND_TRIP_BYTES);
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        let round_trip = run(kernel, &["sh", "-c", "cat; echo to-stderr >&2; exit 3"], data.clone());
        tally.record(&format!("exec: {} MiB of binary through cat, stderr apart ({kernel:?})", ROUND_TRIP_BYTES >> 20), match round_trip {
            Ok(run) if run.output == data && run.errors == b"to-stderr\n" && run.exit_code == 3 => Ok(()),
            Ok(run) => Err(describe(&run, data.len())),
            Err(failure) => Err(failure.to_string()),
        });
        let dynamic = run_dynamic(kernel);
        tally.record(&format!("exec: Debian's dynamic bash, sort, md5sum, ls ({kernel:?})"), match dynamic {
            Ok(run) if run.output == DYNAMIC_EXPECTED.as_bytes() && run.exit_code == 3 => Ok(()),
            Ok(run) => Err(format!("{}\nstdout:\n{}", describe(&run, DYNAMIC_EXPECTED.len()), String::from_utf8_lossy(&run.output))),
            Err(failure) => Err(failure.to_string()),
        });
        let python = run_python(kernel);
        tally.record(&format!("exec: Debian's dynamic python3 with threads, files, subprocess ({kernel:?})"), match python {
            Ok(run) if run.exit_code == 0 && PYTHON_EXPECTED.iter().all(|line| String::from_utf8_lossy(&run.output).lines().any(|seen| seen == *line)) => Ok(()),
            Ok(run) => Err(format!("{}\nstdout:\n{}", describe(&run, 0), String::from_utf8_lossy(&run.output))),
            Err(failure) => Err(failure.to_string()),
        });
        let count = run(kernel, &["wc", "-l"], b"a\nb\n".to_vec());
        tally.record(&format!("exec: wc -l of piped input ({kernel:?})"), match count {
            Ok(run) if run.output == b"2\n" && run.errors.is_empty() && run.exit_code == 0 => Ok(()),
            Ok(run) => Err(describe(&run, 2)),
            Err(failure) => Err(failure.to_string()),
        });
    }
}

/// The script `bash` runs, and what it prints (the same on Linux).
const DYNAMIC_SCRIPT: &str = "read -r first; echo \"bash read: $first\"; printf 'b\\na\\nc\\n' | /usr/bin/sort -r; \
                              echo lamina | /usr/bin/md5sum; /bin/ls -d /tmp /bin; exit 3";
const DYNAMIC_EXPECTED: &str = "bash read: piped\nc\nb\na\na204f136ca192da3359b80e9e6d9758c  -\n/bin\n/tmp\n";

/// Debian's dynamic `bash` running [`DYNAMIC_SCRIPT`], with `sort`,
/// `md5sum` and `ls` copied in (their libraries follow them).
fn run_dynamic(kernel: GuestKernel) -> Outcome<ProgramRun> {
    let files = ["/usr/bin/sort", "/usr/bin/md5sum", "/bin/ls"].map(|path| FileCopy { host: path.into(), guest: None }).to_vec();
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files,
        program: "/bin/bash".into(),
        program_arguments: vec!["-c".to_string(), DYNAMIC_SCRIPT.to_string()],
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(b"piped\n".to_vec()), Output::Capture, Some(TIME_LIMIT))
}

/// What the python check runs: four threads, a temporary file, a child.
const PYTHON_SCRIPT: &str = "import os, subprocess, sys, tempfile, threading
results = []
def work(n): results.append(sum(range(n)))
threads = [threading.Thread(target=work, args=(10000 * (i + 1),)) for i in range(4)]
for thread in threads: thread.start()
for thread in threads: thread.join()
print('threads:', sorted(results))
with tempfile.NamedTemporaryFile('w+', delete=False, dir='/tmp') as file:
    file.write('hello file\\n'); name = file.name
print('file:', open(name).read().strip()); os.unlink(name)
child = subprocess.run(['/bin/busybox', 'echo', 'from a child'], capture_output=True, text=True)
print('subprocess:', child.stdout.strip(), child.returncode)
print('stdin:', sys.stdin.read().strip())
";
const PYTHON_EXPECTED: [&str; 4] = ["threads: [49995000, 199990000, 449985000, 799980000]", "file: hello file", "subprocess: from a child 0", "stdin: piped"];

/// Debian's `/usr/bin/python3` (dynamic, glibc) with its whole standard
/// library copied in, running [`PYTHON_SCRIPT`].
fn run_python(kernel: GuestKernel) -> Outcome<ProgramRun> {
    let program = std::fs::canonicalize("/usr/bin/python3").map_err(|error| crate::failure::Failure::failed(format!("/usr/bin/python3 (package python3): {error}")))?;
    let stdlib = std::process::Command::new(&program)
        .args(["-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"])
        .output()
        .map_err(|error| crate::failure::Failure::failed(format!("asking {} for its library: {error}", program.display())))?;
    let stdlib = String::from_utf8_lossy(&stdlib.stdout).trim().to_string();
    let script = crate::guest_files::write_image("python-check.py", PYTHON_SCRIPT.as_bytes())?;
    let request = ExecRequest {
        // The standard library (~50 MiB) travels in the initramfs.
        machine: MachineOptions { memory_mib: 1024, ..MachineOptions::default() },
        kernel,
        files: vec![FileCopy { host: stdlib.into(), guest: None }, FileCopy { host: script, guest: Some("/tmp/check.py".into()) }],
        program,
        program_arguments: vec!["/tmp/check.py".to_string()],
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(b"piped\n".to_vec()), Output::Capture, Some(TIME_LIMIT))
}

/// BusyBox `arguments` with `input` piped in, output captured.
fn run(kernel: GuestKernel, arguments: &[&str], input: Vec<u8>) -> Outcome<ProgramRun> {
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: Vec::new(),
        program: crate::guest_files::BUSYBOX.into(),
        program_arguments: arguments.iter().map(|argument| argument.to_string()).collect(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(input), Output::Capture, Some(TIME_LIMIT))
}

fn describe(run: &ProgramRun, expected_length: usize) -> String {
    let head = |bytes: &[u8]| String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
    format!(
        "exit {}; stdout {} bytes (expected {expected_length}), starting {:?}; stderr {:?}",
        run.exit_code,
        run.output.len(),
        head(&run.output),
        head(&run.errors)
    )
}

/// `length` bytes of every value, from a fixed xorshift sequence (the same
/// every run, so a failure can be repeated): the crash tier's generator.
fn binary_data(length: usize) -> Vec<u8> {
    crash_check::plan::bytes_for(0, length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_trip_data_holds_every_byte_value_and_line_ends() {
        let data = binary_data(ROUND_TRIP_BYTES);
        assert!((0..=255u8).all(|value| data.contains(&value)));
        assert!(data.windows(2).any(|pair| pair == b"\r\n"), "no CR LF pair to trip a console translation");
    }
}
