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
//!   selects them;
//! - `postmark`: PostMark 1.53 (Debian's, built statically by the `apps`
//!   recipe) makes a pool of 20 files of 512 B to 4 KiB in `/tmp`, runs 40
//!   transactions on them (reads, appends, creations, deletions) and
//!   deletes the rest;
//! - `nginx`: NGINX 1.22 (the `apps` recipe's static build), one process,
//!   serves 20 requests that BusyBox wget makes inside the guest to
//!   127.0.0.1; the trace keeps the server's calls only;
//! - `leveldb`: LevelDB 1.23 (Debian's, the `apps` recipe's static
//!   `leveldb-entries`) makes a database in `/tmp`, inserts 8 entries, gets
//!   each back, iterates over them once and closes it.
//!
//! Must not change files outside `target/traces/` and `scale-sim/traces/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::arguments::{unexpected, Argument, Arguments};
use crate::exec::{ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Context, Failure, Outcome};
use crate::machine_options::MachineOptions;
use crate::syscall_traces::Scope;

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
    /// Which of the run's processes the trace keeps.
    scope: Scope,
}

/// What a traced application runs.
struct Run {
    program: PathBuf,
    arguments: Vec<String>,
    /// A host directory copied to [`GUEST_INPUTS`], if any.
    inputs: Option<PathBuf>,
    /// The program's standard input.
    input: Vec<u8>,
    /// More files for the guest.
    extra: Vec<FileCopy>,
}

const APPLICATIONS: &[Application] = &[
    Application { name: "tar", prepare: prepare_tar, scope: Scope::Everything },
    Application { name: "untar", prepare: prepare_untar, scope: Scope::Everything },
    Application { name: "find", prepare: prepare_find, scope: Scope::Everything },
    Application { name: "sqlite", prepare: prepare_sqlite, scope: Scope::Everything },
    Application { name: "postmark", prepare: prepare_postmark, scope: Scope::Everything },
    Application { name: "nginx", prepare: prepare_nginx, scope: Scope::ProcessesOf("nginx") },
    Application { name: "leveldb", prepare: prepare_leveldb, scope: Scope::Everything },
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
    let mut files: Vec<FileCopy> = run.inputs.iter().map(|inputs| FileCopy { host: inputs.clone(), guest: Some(GUEST_INPUTS.to_string()) }).collect();
    files.extend(run.extra);
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
    let (ran, _) = crate::syscall_traces::trace_program(&request, Input::Pipe(run.input), Output::Capture, application.scope, &file)?;
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
    Ok(Run { program: BUSYBOX.into(), arguments, inputs: Some(inputs), input: Vec::new(), extra: Vec::new() })
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
    Ok(Run { program: BUSYBOX.into(), arguments, inputs: Some(inputs), input: Vec::new(), extra: Vec::new() })
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
    Ok(Run { program: BUSYBOX.into(), arguments, inputs: Some(inputs), input: Vec::new(), extra: Vec::new() })
}

/// Rows the `sqlite` trace inserts.
const SQLITE_ROWS: usize = 8;

fn prepare_sqlite(_work: &Path) -> Outcome<Run> {
    let program = crate::outside::programs::PROGRAMS.iter().find(|program| program.name == "sqlite3").ok_or_else(|| Failure::failed("no sqlite3 recipe"))?;
    let binary = crate::outside::programs::built(program)?;
    let rows: Vec<String> = (0..SQLITE_ROWS).map(|row| format!("INSERT INTO entries VALUES({row}, 'value {row}');")).collect();
    let script = format!("CREATE TABLE entries(key INTEGER PRIMARY KEY, value TEXT); {} SELECT * FROM entries;", rows.join(" "));
    Ok(Run { program: binary, arguments: vec!["/tmp/entries.db".to_string(), script], inputs: None, input: Vec::new(), extra: Vec::new() })
}

/// PostMark's commands (read from standard input): a small pool of files
/// in `/tmp`, a fixed seed.
const POSTMARK_COMMANDS: &str = "set location /tmp\nset number 20\nset transactions 40\nset size 512 4096\nset seed 42\nrun\nquit\n";

fn prepare_postmark(_work: &Path) -> Outcome<Run> {
    let program = crate::outside::programs::PROGRAMS.iter().find(|program| program.name == "postmark").ok_or_else(|| Failure::failed("no postmark recipe"))?;
    let binary = crate::outside::programs::built(program)?;
    Ok(Run { program: binary, arguments: Vec::new(), inputs: None, input: POSTMARK_COMMANDS.as_bytes().to_vec(), extra: Vec::new() })
}

/// Requests the `nginx` trace's client makes.
const NGINX_REQUESTS: usize = 20;

/// One NGINX process (no master, no daemon) serving `/data/www` on
/// 127.0.0.1:8080.
const NGINX_CONF: &str = "user root root;
daemon off;
master_process off;
worker_processes 1;
error_log stderr warn;
pid /tmp/nginx/nginx.pid;
events { worker_connections 64; }
http { access_log off; server { listen 127.0.0.1:8080; root /data/www; location / { } } }
";

/// Starts NGINX, waits until it answers, makes the rest of the requests
/// with BusyBox wget (one connection each) and stops it.
fn nginx_script() -> String {
    format!(
        "#!/bin/sh
mkdir -p /tmp/nginx
/usr/local/bin/nginx -p /tmp/nginx -c /data/nginx.conf &
server=$!
tries=0
until wget -q -O /dev/null http://127.0.0.1:8080/index.html; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || exit 1; sleep 0.1
done
for request in $(seq 2 {NGINX_REQUESTS}); do
    wget -q -O /dev/null http://127.0.0.1:8080/index.html || exit 1
done
kill $server
wait $server
exit 0
"
    )
}

fn prepare_nginx(work: &Path) -> Outcome<Run> {
    let program = crate::outside::programs::PROGRAMS.iter().find(|program| program.name == "nginx").ok_or_else(|| Failure::failed("no nginx recipe"))?;
    let binary = crate::outside::programs::built(program)?;
    let inputs = work.join("inputs");
    std::fs::create_dir_all(inputs.join("www")).context(|| format!("creating {}", inputs.display()))?;
    let page: String = (0..32).map(|line| format!("<p>line {line} of the page NGINX serves</p>\n")).collect();
    let write = |path: PathBuf, text: &str| std::fs::write(&path, text).context(|| format!("writing {}", path.display()));
    write(inputs.join("www/index.html"), &page)?;
    write(inputs.join("nginx.conf"), NGINX_CONF)?;
    let script = work.join("run.sh");
    write(script.clone(), &nginx_script())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).context(|| format!("making {} executable", script.display()))?;
    let extra = vec![FileCopy { host: binary, guest: Some("/usr/local/bin/nginx".to_string()) }];
    Ok(Run { program: script, arguments: Vec::new(), inputs: Some(inputs), input: Vec::new(), extra })
}

/// LevelDB's 8 entries (the count is the driver's, `user/tools/leveldb_entries.cc`)
/// in a database it creates here.
fn prepare_leveldb(_work: &Path) -> Outcome<Run> {
    let program = crate::outside::programs::PROGRAMS.iter().find(|program| program.name == "leveldb-entries").ok_or_else(|| Failure::failed("no leveldb-entries recipe"))?;
    let binary = crate::outside::programs::built(program)?;
    Ok(Run { program: binary, arguments: vec!["/tmp/leveldb-entries".to_string()], inputs: None, input: Vec::new(), extra: Vec::new() })
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
