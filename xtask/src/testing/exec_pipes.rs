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
/// every run, so a failure can be repeated).
fn binary_data(length: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
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
