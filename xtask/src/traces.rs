//! `cargo xtask traces [APP...]`: records the system-call traces of
//! SemperOS's application set (its §5) on Lamina into
//! `scale-sim/traces/<app>.trace`, for the scale simulator (issue 21) to
//! replay. Each application's inputs are made here, deterministically,
//! under `target/traces/` and copied into the guest's initramfs; the
//! program runs under `exec --trace` (`syscall_traces.rs`).
//!
//! - `tar`: BusyBox tar archives five files of 128, 256, 512, 1024 and
//!   2048 KiB (3.9 MiB) into `/tmp`;
//! - `untar`: BusyBox tar unpacks that archive (made on the host) into `/tmp`;
//! - `find`: BusyBox find walks a tree of 80 entries for a name it lacks;
//! - `sqlite`: the SQLite 3.40 shell (`cargo xtask apps`' static build)
//!   makes a table in a file database in `/tmp`, inserts 8 rows and
//!   selects them.
//!
//! Must not change files outside `target/traces/` and `scale-sim/traces/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::arguments::{unexpected, Argument, Arguments};
use crate::exec::{ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Context, Failure, Outcome};
use crate::machine_options::MachineOptions;

/// The BusyBox every guest has under `/bin` (copied from the host's).
const BUSYBOX: &str = "/bin/busybox";
/// Sizes of the files `tar` archives, in KiB.
const TAR_FILE_KIB: [usize; 5] = [128, 256, 512, 1024, 2048];
/// Where the inputs live in the guest.
const GUEST_INPUTS: &str = "/data";

/// One traced application.
struct Application {
    name: &'static str,
    /// Makes its inputs under the directory given; the program run.
    prepare: fn(&Path) -> Outcome<Run>,
}

/// What a traced application runs.
struct Run {
    program: PathBuf,
    arguments: Vec<String>,
    /// A host directory copied to [`GUEST_INPUTS`], if any.
    inputs: Option<PathBuf>,
}

const APPLICATIONS: &[Application] = &[
    Application { name: "tar", prepare: prepare_tar },
    Application { name: "untar", prepare: prepare_untar },
    Application { name: "find", prepare: prepare_find },
    Application { name: "sqlite", prepare: prepare_sqlite },
];

/// `cargo xtask traces [APP...]` (all of them by default).
pub fn traces_command(mut arguments: Arguments) -> Outcome {
    let mut chosen = Vec::new();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Positional(name) => chosen.push(application(&name)?),
            other => return Err(unexpected("traces", other)),
        }
    }
    if chosen.is_empty() {
        chosen = APPLICATIONS.iter().collect();
    }
    crate::dependencies::ensure_dependencies()?;
    let destination = crate::workspace::root().join("scale-sim/traces");
    std::fs::create_dir_all(&destination).context(|| format!("creating {}", destination.display()))?;
    for application in chosen {
        record(application, &destination)?;
    }
    Ok(())
}

fn application(name: &str) -> Outcome<&'static Application> {
    APPLICATIONS.iter().find(|application| application.name == name).ok_or_else(|| {
        let known: Vec<&str> = APPLICATIONS.iter().map(|application| application.name).collect();
        Failure::usage(format!("no application `{name}` to trace (there are: {})", known.join(", ")))
    })
}

/// Prepares, runs and traces one application into `destination`.
fn record(application: &Application, destination: &Path) -> Outcome {
    let work = crate::workspace::root().join("target/traces").join(application.name);
    fresh_directory(&work)?;
    let run = (application.prepare)(&work)?;
    let files = run.inputs.iter().map(|inputs| FileCopy { host: inputs.clone(), guest: Some(GUEST_INPUTS.to_string()) }).collect();
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel: GuestKernel::Lamina,
        files,
        program: run.program,
        program_arguments: run.arguments,
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    let file = destination.join(format!("{}.trace", application.name));
    eprintln!("xtask: tracing {}", application.name);
    let (ran, _) = crate::syscall_traces::trace_program(&request, Input::Pipe(Vec::new()), Output::Capture, &file)?;
    if ran.exit_code != 0 {
        return Err(Failure::failed(format!("{} exited with {}: {}", application.name, ran.exit_code, String::from_utf8_lossy(&ran.errors))));
    }
    Ok(())
}

fn fresh_directory(path: &Path) -> Outcome {
    if path.exists() {
        std::fs::remove_dir_all(path).context(|| format!("removing {}", path.display()))?;
    }
    std::fs::create_dir_all(path).context(|| format!("creating {}", path.display()))
}

/// The five files `tar` archives, under `work/inputs/files`.
fn write_tar_files(work: &Path) -> Outcome<PathBuf> {
    let inputs = work.join("inputs");
    let files = inputs.join("files");
    std::fs::create_dir_all(&files).context(|| format!("creating {}", files.display()))?;
    for (index, kib) in TAR_FILE_KIB.iter().enumerate() {
        let path = files.join(format!("file{index}-{kib}k"));
        std::fs::write(&path, pseudo_random_bytes(kib * 1024, index as u64 + 1)).context(|| format!("writing {}", path.display()))?;
    }
    Ok(inputs)
}

fn prepare_tar(work: &Path) -> Outcome<Run> {
    let inputs = write_tar_files(work)?;
    let arguments = ["tar", "cf", "/tmp/archive.tar", "-C", GUEST_INPUTS, "files"].map(String::from).to_vec();
    Ok(Run { program: BUSYBOX.into(), arguments, inputs: Some(inputs) })
}

fn prepare_untar(work: &Path) -> Outcome<Run> {
    let sources = write_tar_files(&work.join("sources"))?;
    let inputs = work.join("inputs");
    std::fs::create_dir_all(&inputs).context(|| format!("creating {}", inputs.display()))?;
    let archive = inputs.join("archive.tar");
    // The host's BusyBox: the same tar as the guest's, the same format.
    let status = Command::new(BUSYBOX)
        .args(["tar", "cf"])
        .arg(&archive)
        .arg("-C")
        .arg(&sources)
        .arg("files")
        .status()
        .context(|| "running busybox tar on the host".to_string())?;
    if !status.success() {
        return Err(Failure::failed(format!("busybox tar could not make {}", archive.display())));
    }
    let arguments = ["tar", "xf", "/data/archive.tar", "-C", "/tmp"].map(String::from).to_vec();
    Ok(Run { program: BUSYBOX.into(), arguments, inputs: Some(inputs) })
}

/// Directories and files per directory of the `find` tree: 8 + 8 × 9 = 80 entries.
const FIND_DIRECTORIES: usize = 8;
const FIND_FILES_PER_DIRECTORY: usize = 9;

fn prepare_find(work: &Path) -> Outcome<Run> {
    let inputs = work.join("inputs");
    for directory in 0..FIND_DIRECTORIES {
        let path = inputs.join("tree").join(format!("directory{directory}"));
        std::fs::create_dir_all(&path).context(|| format!("creating {}", path.display()))?;
        for file in 0..FIND_FILES_PER_DIRECTORY {
            let path = path.join(format!("file{file}.txt"));
            std::fs::write(&path, format!("entry {directory}.{file}\n")).context(|| format!("writing {}", path.display()))?;
        }
    }
    let arguments = ["find", "/data/tree", "-name", "no-such-name"].map(String::from).to_vec();
    Ok(Run { program: BUSYBOX.into(), arguments, inputs: Some(inputs) })
}

/// Rows the `sqlite` trace inserts.
const SQLITE_ROWS: usize = 8;

fn prepare_sqlite(_work: &Path) -> Outcome<Run> {
    let program = crate::outside::programs::PROGRAMS.iter().find(|program| program.name == "sqlite3").ok_or_else(|| Failure::failed("no sqlite3 recipe"))?;
    let binary = crate::outside::programs::built(program)?;
    let rows: Vec<String> = (0..SQLITE_ROWS).map(|row| format!("INSERT INTO entries VALUES({row}, 'value {row}');")).collect();
    let script = format!("CREATE TABLE entries(key INTEGER PRIMARY KEY, value TEXT); {} SELECT * FROM entries;", rows.join(" "));
    Ok(Run { program: binary, arguments: vec!["/tmp/entries.db".to_string(), script], inputs: None })
}

/// `length` bytes from a fixed generator (xorshift64) seeded with `seed`:
/// the same inputs, so the same traces, on every run.
fn pseudo_random_bytes(length: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut bytes = Vec::with_capacity(length + 8);
    while bytes.len() < length {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(length);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_the_same_on_every_run_and_differ_per_file() {
        assert_eq!(pseudo_random_bytes(1000, 1), pseudo_random_bytes(1000, 1));
        assert_ne!(pseudo_random_bytes(64, 1), pseudo_random_bytes(64, 2));
        assert_eq!(pseudo_random_bytes(13, 3).len(), 13);
    }

    #[test]
    fn the_find_tree_has_eighty_entries_and_tar_four_mib() {
        assert_eq!(FIND_DIRECTORIES * (1 + FIND_FILES_PER_DIRECTORY), 80);
        assert_eq!(TAR_FILE_KIB.iter().sum::<usize>(), 3968);
    }

    #[test]
    fn unknown_applications_and_flags_are_usage_errors() {
        assert!(matches!(application("emacs"), Err(Failure::Usage(_))));
        assert!(matches!(traces_command(Arguments::new(["--fast".to_string()])), Err(Failure::Usage(_))));
    }
}
