//! `cargo xtask exec`: run one static Linux program as the first user process.
//!
//! Builds an initramfs with BusyBox, the program at its host path and the
//! `--file` copies, boots it with the program as process 1, passes this
//! terminal's input through, prints the program's output (nothing of the
//! boot) and exits with the program's exit status. The guest marks the
//! program's start and end on the console with `lamina-exec: start` and
//! `lamina-exec: exit N`. With `--trace FILE` Lamina records the program's
//! system calls and prints them as it powers off (`syscall_traces.rs`).

use crate::arguments::{unexpected, Argument, Arguments};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Context, Failure, Outcome};
use crate::guest_files::{build_initramfs, write_image, GuestFile};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{qemu_command, BootMedium, Console};
use crate::exec_console::{ConsoleFollower, ConsoleMode};
pub use crate::exec_console::Output;
use std::io::{BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Which kernel runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKernel {
    Lamina,
    /// Debian's Linux kernel in the same QEMU configuration (`--linux`).
    Linux,
    /// Debian's Linux booted with `mitigations=off` (benchmarks).
    LinuxWithoutMitigations,
}

/// A host file copied into the guest's initramfs (`--file HOST[:GUEST]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCopy {
    pub host: PathBuf,
    /// Absolute path in the guest; `None`: the same path as on the host.
    pub guest: Option<String>,
}

/// Everything `exec` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    pub machine: MachineOptions,
    pub kernel: GuestKernel,
    pub files: Vec<FileCopy>,
    pub program: PathBuf,
    pub program_arguments: Vec<String>,
    /// A disk image attached as `/dev/vda` (`--disk`).
    pub disk: Option<PathBuf>,
    /// Whether `/init` mounts that disk read-write at `/mnt` (`--disk`
    /// does, and unmounts it before power-off; `--raw-disk` attaches it
    /// unmounted).
    pub mount_disk: bool,
    /// Every write and flush the disk sees logged to this file by QEMU's
    /// `blklogwrites` driver (dm-log-writes format; the crash tier).
    pub disk_log: Option<PathBuf>,
    /// A virtio network card on QEMU's user network (restricted: nothing
    /// leaves this machine), with host ports forwarded to the guest
    /// (`--net`, `--port HOST:GUEST`); or frames over UDP to a host program.
    pub network: Option<crate::network::GuestNetwork>,
}

/// `cargo xtask exec ...`.
pub fn exec_command(mut arguments: Arguments) -> Outcome {
    let (request, trace) = parse_exec_command_line(&mut arguments)?;
    check_host_files_exist(&request)?;
    ensure_dependencies()?;
    let input = if std::io::stdin().is_terminal() {
        Input::Terminal
    } else {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).context(|| "reading standard input".to_string())?;
        if bytes.len() > MAX_PIPED_INPUT {
            return Err(Failure::usage(format!(
                "standard input holds {} bytes; `exec` passes at most {MAX_PIPED_INPUT} (it travels in the initramfs)",
                bytes.len()
            )));
        }
        Input::Pipe(bytes)
    };
    let status = match &trace {
        None => run_program(&request, input, Output::Stream, None)?,
        Some(file) => crate::syscall_traces::trace_program(&request, input, Output::Stream, crate::syscall_traces::Scope::Everything, file)?.0,
    };
    std::process::exit(status.exit_code);
}

/// Most bytes of piped standard input `exec` takes (they are a file of the
/// guest's initramfs, held in guest memory).
pub const MAX_PIPED_INPUT: usize = 64 << 20;

/// Where the program's standard streams are.
pub enum Input {
    /// On the guest console, which is this terminal: what is typed here
    /// reaches the program, which may use the tty as at a real console.
    Terminal,
    /// On the guest console with nothing typed (tests of the tty, whose
    /// output is read off the console).
    Console,
    /// Standard input is exactly these bytes, then end of file; standard
    /// output and error are pipes, kept apart (`lamina-exec: out|err`
    /// lines of base64 on the console, written by `/init`).
    Pipe(Vec<u8>),
}

/// How a program run ended.
pub struct ProgramRun {
    /// What the program wrote to standard output (piped), or to the console
    /// between the markers with `\r\n` turned into `\n`; when captured.
    pub output: Vec<u8>,
    /// What a piped program wrote to standard error, when captured.
    pub errors: Vec<u8>,
    pub exit_code: i32,
}

/// The guest's copy of piped standard input (`/init` looks for it).
const GUEST_STDIN: &str = "/etc/lamina-stdin";

/// Boots the guest kernel with `request`'s program run by `/init` and
/// passes its output on as `output` says. With a time limit, a guest that
/// has not finished by then is stopped; that, or a guest that stops without
/// the program's exit status, is an error.
pub fn run_program(request: &ExecRequest, input: Input, output: Output, time_limit: Option<Duration>) -> Outcome<ProgramRun> {
    let run = run_program_watched(request, input, output, Watch { time_limit, silence_limit: None })?;
    match run.end {
        GuestEnd::Exited(exit_code) => Ok(ProgramRun { output: run.output, errors: run.errors, exit_code }),
        GuestEnd::Stopped(why) => Err(Failure::failed(format!("{why}; it printed:\n{}", String::from_utf8_lossy(&run.output)))),
    }
}

/// How long a watched guest may run, and how long it may print nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watch {
    pub time_limit: Option<Duration>,
    pub silence_limit: Option<Duration>,
}

/// How a watched run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestEnd {
    /// The program's exit status, as `/init` reported it.
    Exited(i32),
    /// Stopped by a limit or ended without a status (a kernel panic, a
    /// reset): why.
    Stopped(String),
}

/// A run with what the program printed up to its end, however it ended.
pub struct WatchedRun {
    pub output: Vec<u8>,
    pub errors: Vec<u8>,
    pub end: GuestEnd,
}

/// [`run_program`], keeping what was printed when a limit of `watch`
/// stops the guest or the guest dies (suites resume after the test that
/// was running).
pub fn run_program_watched(request: &ExecRequest, input: Input, output: Output, watch: Watch) -> Outcome<WatchedRun> {
    run_guest(request, input, output, watch, Tracing::Off).map(|(run, _)| run)
}

/// Whether the guest kernel records the program's system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracing {
    Off,
    /// Lamina booted with `trace`: its `lamina-trace:` lines are kept.
    On,
}

/// [`run_program`] on Lamina with the system-call tracer on (icount, so
/// that its clock counts instructions): the run, and the tracer's console
/// lines without their `lamina-trace: ` prefix.
pub fn run_program_traced(request: &ExecRequest, input: Input, output: Output, time_limit: Option<Duration>) -> Outcome<(ProgramRun, Vec<String>)> {
    if request.kernel != GuestKernel::Lamina {
        return Err(Failure::usage("--trace needs Lamina (not --linux): the tracer is Lamina's"));
    }
    let mut request = request.clone();
    request.machine.counting = crate::machine_options::InstructionCounting::On;
    request.machine.validate()?;
    let (run, lines) = run_guest(&request, input, output, Watch { time_limit, silence_limit: None }, Tracing::On)?;
    match run.end {
        GuestEnd::Exited(exit_code) => Ok((ProgramRun { output: run.output, errors: run.errors, exit_code }, lines)),
        GuestEnd::Stopped(why) => Err(Failure::failed(format!("{why}; it printed:\n{}", String::from_utf8_lossy(&run.output)))),
    }
}

/// Boots the guest as [`run_program_watched`] says, with the tracer when
/// `tracing` says so; the run and the tracer's lines.
fn run_guest(request: &ExecRequest, input: Input, output: Output, watch: Watch, tracing: Tracing) -> Outcome<(WatchedRun, Vec<String>)> {
    // Runs may overlap (a suite runs both kernels at once): each its own files.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run = format!("{}-{}", std::process::id(), RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let program_guest = request.program.display().to_string();
    let mut files = vec![GuestFile { host: request.program.clone(), guest: program_guest.clone() }];
    // Dynamic programs' interpreter and libraries (the program's and any
    // `--file` program's), at their host paths.
    let programs = std::iter::once(&request.program).chain(request.files.iter().map(|copy| &copy.host));
    for library in programs.flat_map(|program| crate::shared_libraries::needed_by(program)) {
        let guest = library.display().to_string();
        if !files.iter().any(|file| file.guest == guest) {
            files.push(GuestFile { host: library, guest });
        }
    }
    for copy in &request.files {
        let guest = copy.guest.clone().unwrap_or_else(|| copy.host.display().to_string());
        let copied = if copy.host.is_dir() { directory_files(&copy.host, &guest)? } else { vec![GuestFile { host: copy.host.clone(), guest }] };
        // A later copy to the same guest path replaces the earlier one
        // (one archive entry per path: the guest sees the last).
        let replaced: std::collections::HashSet<&str> = copied.iter().map(|file| file.guest.as_str()).collect();
        files.retain(|file| !replaced.contains(file.guest.as_str()));
        files.extend(copied);
    }
    let mut stdin_file = None;
    if let Input::Pipe(bytes) = &input {
        let path = write_image(&format!("exec-{run}.stdin"), bytes)?;
        files.push(GuestFile { host: path.clone(), guest: GUEST_STDIN.to_string() });
        stdin_file = Some(path);
    }
    let disk = request.disk.as_deref().map(crate::disk_image::prepare).transpose()?;
    let mut modules: Vec<&str> = Vec::new();
    if disk.is_some() {
        modules.extend(crate::linux_modules::DISK_MODULES);
    }
    let mut net_marker = None;
    if request.network.is_some() {
        modules.extend(crate::network::NET_MODULES);
        let marker = write_image(&format!("exec-{run}.net"), crate::network::GUEST_ADDRESS.as_bytes())?;
        files.push(GuestFile { host: marker.clone(), guest: crate::network::NET_MARKER.to_string() });
        net_marker = Some(marker);
    }
    if !modules.is_empty() && request.kernel != GuestKernel::Lamina {
        files.extend(crate::linux_modules::guest_files(&modules, &crate::workspace::root().join("target"))?);
    }
    let mut disk_marker = None;
    if disk.is_some() && request.mount_disk {
        // /init mounts the disk read-write at /mnt when this file exists.
        let marker = write_image(&format!("exec-{run}.disk"), b"/dev/vda /mnt ext4 rw\n")?;
        files.push(GuestFile { host: marker.clone(), guest: "etc/lamina-disk".to_string() });
        disk_marker = Some(marker);
    }
    let mut init = vec![program_guest];
    init.extend(request.program_arguments.iter().cloned());
    let archive = build_initramfs(&files, Some(&init));
    for path in stdin_file.iter().chain(&disk_marker).chain(&net_marker) {
        let _ = std::fs::remove_file(path);
    }
    let name = format!("exec-{run}.cpio");
    let initramfs = write_image(&name, &archive?)?;
    let (kernel, command_line) = match request.kernel {
        GuestKernel::Lamina => (build_kernel(ImageKind::Normal)?, "quiet"),
        GuestKernel::Linux => (crate::linux_kernel::vmlinux()?, "console=ttyS0 quiet"),
        GuestKernel::LinuxWithoutMitigations => (crate::linux_kernel::vmlinux()?, "console=ttyS0 quiet mitigations=off"),
    };
    let medium_initramfs = initramfs.clone();
    let command_line = match tracing {
        Tracing::Off => command_line.to_string(),
        Tracing::On => format!("{command_line} trace"),
    };
    let medium = BootMedium::KernelWithInitramfs { kernel, initramfs, command_line };
    let mut command = qemu_command(&request.machine, &medium, Console::Piped);
    match (&disk, &request.disk_log) {
        (Some(image), Some(log)) => command.args(crate::disk_image::logged_qemu_arguments(image, log)),
        (Some(image), None) => command.args(crate::disk_image::qemu_arguments(image)),
        (None, _) => &mut command,
    };
    if let Some(network) = &request.network {
        command.args(crate::network::qemu_arguments(network));
    }
    command.stdout(Stdio::piped());
    let terminal = matches!(input, Input::Terminal);
    command.stdin(if terminal { Stdio::inherit() } else { Stdio::piped() });
    let mut child = command.spawn().context(|| "cannot start QEMU".to_string())?;
    let console_input = child.stdin.take();
    let stdout = child.stdout.take().ok_or_else(|| Failure::failed("no QEMU output pipe"))?;
    let mode = if matches!(input, Input::Pipe(_)) { ConsoleMode::Piped } else { ConsoleMode::Console };
    let (sender, receiver) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut console = std::io::BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match console.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if sender.send(line).is_err() => break,
                Ok(_) => {}
            }
        }
    });
    let mut follower = ConsoleFollower::new(mode, output);
    let end = watch_console(&receiver, &mut follower, watch);
    // A QEMU plugin (`cargo xtask profile`) writes its counts when QEMU
    // ends by itself: a kill would lose them.
    let plugged = std::env::var("LAMINA_QEMU_ARGS").is_ok_and(|arguments| arguments.contains("-plugin"));
    // The tracer reports as the guest powers off, after the program's end.
    let trace_lines = match tracing {
        Tracing::On if follower.finished() => crate::syscall_traces::collect_lines(&receiver),
        _ => Vec::new(),
    };
    if (disk.is_some() || plugged) && follower.finished() {
        // The program is done, but the guest still unmounts and syncs the
        // disk: let it power off by itself before QEMU is stopped.
        wait_for_power_off(&receiver);
    }
    // Open until here: a closed console input is no end of file for the
    // guest, but QEMU may stop reading the console when it sees one.
    drop(console_input);
    let _ = child.kill();
    let _ = child.wait();
    drop(receiver);
    let _ = reader.join();
    let _ = std::fs::remove_file(&medium_initramfs);
    let followed = follower.followed;
    let end = match (end?, followed.exit_code) {
        (_, Some(code)) => GuestEnd::Exited(code),
        (None, None) => GuestEnd::Stopped("the guest stopped without reporting the program's exit status".to_string()),
        (Some(why), None) => GuestEnd::Stopped(why),
    };
    Ok((WatchedRun { output: followed.output, errors: followed.errors, end }, trace_lines))
}

/// Longest a guest may take from the program's end to its power-off.
pub(crate) const SHUTDOWN_LIMIT: Duration = Duration::from_secs(60);

/// Waits until the console closes (QEMU ended) or [`SHUTDOWN_LIMIT`]
/// passed; what the guest prints meanwhile is not the program's.
fn wait_for_power_off(lines: &std::sync::mpsc::Receiver<Vec<u8>>) {
    let deadline = Instant::now() + SHUTDOWN_LIMIT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if let Err(std::sync::mpsc::RecvTimeoutError::Disconnected) = lines.recv_timeout(left) {
            return;
        }
    }
}

/// Feeds console lines to `follower` until the program's exit marker, the
/// console's end, or a limit of `watch`; `Some(why)` when a limit stopped it.
fn watch_console(lines: &std::sync::mpsc::Receiver<Vec<u8>>, follower: &mut ConsoleFollower, watch: Watch) -> Outcome<Option<String>> {
    use std::sync::mpsc::RecvTimeoutError;
    let started = Instant::now();
    while !follower.finished() {
        let now = Instant::now();
        let total_left = watch.time_limit.map(|limit| limit.saturating_sub(now - started));
        let wait = match (total_left, watch.silence_limit) {
            (Some(total), Some(silence)) => total.min(silence),
            (Some(total), None) => total,
            (None, Some(silence)) => silence,
            (None, None) => Duration::MAX,
        };
        match lines.recv_timeout(wait) {
            Ok(line) => follower.feed(&line).map_err(Failure::failed)?,
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
            Err(RecvTimeoutError::Timeout) => {
                return Ok(Some(match total_left {
                    Some(total) if total <= wait => format!("the guest did not finish within {:?}", watch.time_limit.unwrap_or_default()),
                    _ => format!("the guest printed nothing for {:?}", watch.silence_limit.unwrap_or_default()),
                }))
            }
        }
    }
    Ok(None)
}

/// Reads `[flags] -- PROGRAM [ARGS...]` (without `--trace`).
pub fn parse_exec_arguments(arguments: &mut Arguments) -> Outcome<ExecRequest> {
    match parse_exec_command_line(arguments)? {
        (request, None) => Ok(request),
        (_, Some(_)) => Err(Failure::usage("only `cargo xtask exec` takes --trace")),
    }
}

/// Reads `[flags] -- PROGRAM [ARGS...]`: the request, and the file
/// `--trace FILE` names (which implies `--icount` and refuses `--linux`).
pub fn parse_exec_command_line(arguments: &mut Arguments) -> Outcome<(ExecRequest, Option<PathBuf>)> {
    let (mut machine, mut kernel, mut files, mut disk, mut mount_disk) =
        (MachineOptions::default(), GuestKernel::Lamina, Vec::new(), None, false);
    let mut trace = None;
    let mut network: Option<Vec<crate::network::PortForward>> = None;
    loop {
        match arguments.next_argument()? {
            Some(Argument::Separator) => break,
            Some(Argument::Flag(flag)) if machine.take_flag(&flag, arguments)? => {}
            Some(Argument::Flag(flag)) if flag == "--linux" => kernel = GuestKernel::Linux,
            Some(Argument::Flag(flag)) if flag == "--file" => {
                files.push(parse_file_copy(&arguments.value(&flag)?)?)
            }
            Some(Argument::Flag(flag)) if flag == "--trace" => trace = Some(PathBuf::from(arguments.value(&flag)?)),
            Some(Argument::Flag(flag)) if flag == "--net" => {
                network.get_or_insert_with(Vec::new);
            }
            Some(Argument::Flag(flag)) if flag == "--port" => {
                let forward = crate::network::parse_port_forward(&arguments.value(&flag)?)?;
                network.get_or_insert_with(Vec::new).push(forward);
            }
            Some(Argument::Flag(flag)) if flag == "--disk" || flag == "--raw-disk" => {
                disk = Some(PathBuf::from(arguments.value(&flag)?));
                mount_disk = flag == "--disk";
            }
            Some(Argument::Positional(program)) => {
                return Err(Failure::usage(format!(
                    "put the program after `--`: `cargo xtask exec -- {program}`"
                )))
            }
            Some(other) => return Err(unexpected("exec", other)),
            None => {
                return Err(Failure::usage(
                    "`cargo xtask exec` needs `-- PROGRAM [ARGS...]`",
                ))
            }
        }
    }
    if trace.is_some() {
        if kernel != GuestKernel::Lamina {
            return Err(Failure::usage("--trace needs Lamina (not --linux): the tracer is Lamina's"));
        }
        machine.counting = crate::machine_options::InstructionCounting::On;
    }
    machine.validate()?;
    let mut rest = arguments.rest().into_iter();
    let program = rest
        .next()
        .ok_or_else(|| Failure::usage("no PROGRAM after `--`"))?;
    let request = ExecRequest {
        machine,
        kernel,
        files,
        program: program.into(),
        program_arguments: rest.collect(),
        disk,
        mount_disk,
        disk_log: None,
        network: network.map(crate::network::GuestNetwork::User),
    };
    Ok((request, trace))
}

/// `HOST` or `HOST:GUEST`, GUEST absolute.
fn parse_file_copy(text: &str) -> Outcome<FileCopy> {
    let (host, guest) = match text.split_once(':') {
        Some((host, guest)) => (host, Some(guest.to_string())),
        None => (text, None),
    };
    if host.is_empty() {
        return Err(Failure::usage(format!(
            "--file `{text}` names no host file"
        )));
    }
    if guest.as_ref().is_some_and(|guest| !guest.starts_with('/')) {
        return Err(Failure::usage(format!(
            "--file `{text}`: the guest path must be absolute"
        )));
    }
    Ok(FileCopy {
        host: host.into(),
        guest,
    })
}

/// Every file under the host directory `host` (symlinks followed), at the
/// same place under `guest`, in a stable order.
fn directory_files(host: &Path, guest: &str) -> Outcome<Vec<GuestFile>> {
    let mut found = Vec::new();
    let mut pending = vec![(host.to_path_buf(), guest.trim_end_matches('/').to_string())];
    while let Some((directory, guest_directory)) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&directory)
            .context(|| format!("listing {}", directory.display()))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            let (host_path, guest_path) = (entry.path(), format!("{guest_directory}/{}", entry.file_name().to_string_lossy()));
            if host_path.is_dir() {
                pending.push((host_path, guest_path));
            } else if host_path.is_file() {
                found.push(GuestFile { host: host_path, guest: guest_path });
            }
        }
    }
    Ok(found)
}

/// The program must be a file on the host; every `--file` a file or a
/// directory (copied whole).
fn check_host_files_exist(request: &ExecRequest) -> Outcome {
    if !request.program.is_file() {
        return Err(Failure::usage(format!("no such host file: {}", request.program.display())));
    }
    for path in request.files.iter().map(|copy| copy.host.as_path()) {
        if !path.is_file() && !path.is_dir() {
            return Err(Failure::usage(format!(
                "no such host file: {}",
                path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine_options::{Accelerator, InstructionCounting};

    fn parse(list: &[&str]) -> Outcome<ExecRequest> {
        parse_exec_arguments(&mut Arguments::new(
            list.iter().map(|text| text.to_string()),
        ))
    }

    #[test]
    fn a_bare_program_gets_the_default_machine() {
        let request = parse(&["--", "/bin/true"]).unwrap();
        assert_eq!(request.machine, MachineOptions::default());
        assert_eq!(
            (request.kernel, request.program.as_path()),
            (GuestKernel::Lamina, Path::new("/bin/true"))
        );
        assert!(request.files.is_empty() && request.program_arguments.is_empty());
    }

    #[test]
    fn every_flag_is_read_and_program_arguments_are_kept_verbatim() {
        let request = parse(&[
            "--smp",
            "4",
            "--mem=512",
            "--accel",
            "tcg",
            "--icount",
            "--linux",
            "--file",
            "data.txt",
            "--file=/etc/hosts:/etc/hosts.copy",
            "--",
            "/bin/echo",
            "--smp",
            "--",
            "x",
        ])
        .unwrap();
        assert_eq!(request.machine.cpu_count, 4);
        assert_eq!(request.machine.memory_mib, 512);
        assert_eq!(request.machine.accelerator, Accelerator::Tcg);
        assert_eq!(request.machine.counting, InstructionCounting::On);
        assert_eq!(request.kernel, GuestKernel::Linux);
        assert_eq!(
            request.files,
            [
                FileCopy {
                    host: "data.txt".into(),
                    guest: None
                },
                FileCopy {
                    host: "/etc/hosts".into(),
                    guest: Some("/etc/hosts.copy".into())
                },
            ]
        );
        assert_eq!(request.program_arguments, ["--smp", "--", "x"]);
    }

    #[test]
    fn bad_command_lines_are_usage_errors() {
        let bad: &[&[&str]] = &[
            &[],
            &["/bin/true"],
            &["--"],
            &["--frobnicate", "--", "/bin/true"],
            &["--smp", "0", "--", "/bin/true"],
            &["--accel", "hvf", "--", "/bin/true"],
            &["--accel", "kvm", "--icount", "--", "/bin/true"],
            &["--file", "--", "/bin/true"],
            &["--file", ":/x", "--", "/bin/true"],
            &["--file", "a:relative", "--", "/bin/true"],
            &["--linux=yes", "--", "/bin/true"],
            &["--mem"],
        ];
        for list in bad {
            assert!(
                matches!(parse(list), Err(Failure::Usage(_))),
                "{list:?} was accepted"
            );
        }
    }

    #[test]
    fn trace_implies_icount_and_needs_lamina() {
        let line = |list: &[&str]| parse_exec_command_line(&mut Arguments::new(list.iter().map(|text| text.to_string())));
        let (request, trace) = line(&["--trace", "out.trace", "--", "/bin/true"]).unwrap();
        assert_eq!((request.machine.counting, trace), (InstructionCounting::On, Some(PathBuf::from("out.trace"))));
        assert_eq!(line(&["--", "/bin/true"]).unwrap().1, None);
        for bad in [&["--trace", "t", "--linux", "--", "/bin/true"][..], &["--trace", "t", "--accel", "kvm", "--", "/bin/true"], &["--trace"]] {
            assert!(matches!(line(bad), Err(Failure::Usage(_))), "{bad:?} was accepted");
        }
        assert!(matches!(parse(&["--trace", "t", "--", "/bin/true"]), Err(Failure::Usage(_))));
    }

    #[test]
    fn a_missing_host_file_is_a_usage_error() {
        let missing = exec_command(Arguments::new([
            "--".to_string(),
            "/no/such/program".to_string(),
        ]));
        assert!(matches!(missing, Err(Failure::Usage(_))));
    }
}
