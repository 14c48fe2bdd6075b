//! `cargo xtask exec`: run one static Linux program as the first user process.
//!
//! Builds an initramfs with BusyBox, the program at its host path and the
//! `--file` copies, boots it with the program as process 1, passes this
//! terminal's input through, prints the program's output (nothing of the
//! boot) and exits with the program's exit status. The guest marks the
//! program's start and end on the console with `lamina-exec: start` and
//! `lamina-exec: exit N`.

use crate::arguments::{unexpected, Argument, Arguments};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Context, Failure, Outcome};
use crate::guest_files::{build_initramfs, write_image, GuestFile};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{qemu_command, BootMedium, Console};
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

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
}

/// `cargo xtask exec ...`.
pub fn exec_command(mut arguments: Arguments) -> Outcome {
    let request = parse_exec_arguments(&mut arguments)?;
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
    let status = run_program(&request, input, Output::Stream, None)?;
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

/// What happens to what the program writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// To xtask's stdout (and stderr, for a piped program) as it comes.
    Stream,
    /// Kept in [`ProgramRun`].
    Capture,
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
/// has not finished by then is stopped.
pub fn run_program(request: &ExecRequest, input: Input, output: Output, time_limit: Option<std::time::Duration>) -> Outcome<ProgramRun> {
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
        if copy.host.is_dir() {
            files.extend(directory_files(&copy.host, &guest)?);
        } else {
            files.push(GuestFile { host: copy.host.clone(), guest });
        }
    }
    let mut stdin_file = None;
    if let Input::Pipe(bytes) = &input {
        let path = write_image(&format!("exec-{}.stdin", std::process::id()), bytes)?;
        files.push(GuestFile { host: path.clone(), guest: GUEST_STDIN.to_string() });
        stdin_file = Some(path);
    }
    let mut init = vec![program_guest];
    init.extend(request.program_arguments.iter().cloned());
    let archive = build_initramfs(&files, Some(&init));
    if let Some(path) = &stdin_file {
        let _ = std::fs::remove_file(path);
    }
    let name = format!("exec-{}.cpio", std::process::id());
    let initramfs = write_image(&name, &archive?)?;
    let (kernel, command_line) = match request.kernel {
        GuestKernel::Lamina => (build_kernel(ImageKind::Normal)?, "quiet"),
        GuestKernel::Linux => (crate::linux_kernel::vmlinux()?, "console=ttyS0 quiet"),
        GuestKernel::LinuxWithoutMitigations => (crate::linux_kernel::vmlinux()?, "console=ttyS0 quiet mitigations=off"),
    };
    let medium_initramfs = initramfs.clone();
    let medium = BootMedium::KernelWithInitramfs { kernel, initramfs, command_line: command_line.to_string() };
    let mut command = qemu_command(&request.machine, &medium, Console::Piped);
    command.stdout(Stdio::piped());
    let terminal = matches!(input, Input::Terminal);
    command.stdin(if terminal { Stdio::inherit() } else { Stdio::piped() });
    let mut child = command.spawn().context(|| "cannot start QEMU".to_string())?;
    let console_input = child.stdin.take();
    let stdout = child.stdout.take().ok_or_else(|| Failure::failed("no QEMU output pipe"))?;
    let mode = if matches!(input, Input::Pipe(_)) { ConsoleMode::Piped } else { ConsoleMode::Console };
    let (sender, receiver) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let _ = sender.send(follow_console(stdout, mode, output));
    });
    let finished = match time_limit {
        Some(limit) => receiver.recv_timeout(limit).ok(),
        None => receiver.recv().ok(),
    };
    // Open until here: a closed console input is no end of file for the
    // guest, but QEMU may stop reading the console when it sees one.
    drop(console_input);
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    let _ = std::fs::remove_file(&medium_initramfs);
    let Some(followed) = finished else {
        return Err(Failure::failed(format!("the guest did not finish within {time_limit:?}")));
    };
    let followed = followed.map_err(Failure::failed)?;
    let exit_code = followed.exit_code.ok_or_else(|| Failure::failed(format!(
        "the guest stopped without reporting the program's exit status; it printed:\n{}",
        String::from_utf8_lossy(&followed.output)
    )))?;
    Ok(ProgramRun { output: followed.output, errors: followed.errors, exit_code })
}

/// How `/init` runs the program (see `user/init/init.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConsoleMode {
    /// Its output is the console itself.
    Console,
    /// Its output arrives as `lamina-exec: out|err BASE64` lines; any other
    /// console line (a kernel message) is not the program's.
    Piped,
}

/// What the console said between the markers.
#[derive(Debug, Default, PartialEq, Eq)]
struct Followed {
    output: Vec<u8>,
    errors: Vec<u8>,
    exit_code: Option<i32>,
}

const MARKER: &str = "lamina-exec: ";

/// Reads the console: drops everything before `lamina-exec: start`, then
/// takes the program's output (as `mode` says it comes) up to
/// `lamina-exec: exit N`, streaming or capturing it. A piped stream line
/// that does not decode is an error: bytes would be lost.
fn follow_console(stdout: impl Read, mode: ConsoleMode, output: Output) -> Result<Followed, String> {
    let mut reader = std::io::BufReader::new(stdout);
    let mut started = false;
    let mut followed = Followed::default();
    let mut line = Vec::new();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut pass_on = |followed: &mut Followed, to_errors: bool, bytes: &[u8]| match (output, to_errors) {
        (Output::Capture, false) => followed.output.extend_from_slice(bytes),
        (Output::Capture, true) => followed.errors.extend_from_slice(bytes),
        (Output::Stream, false) => {
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
        (Output::Stream, true) => {
            let _ = err.write_all(bytes);
            let _ = err.flush();
        }
    };
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return Ok(followed),
            Ok(_) => {}
        }
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
            line.push(b'\n');
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        let trimmed = text.trim_end();
        if !started {
            started = trimmed.ends_with("lamina-exec: start");
            continue;
        }
        let marker = trimmed.find(MARKER);
        if let Some(code) = marker.and_then(|position| trimmed[position + MARKER.len()..].strip_prefix("exit ")) {
            if mode == ConsoleMode::Console {
                pass_on(&mut followed, false, &line[..marker.unwrap_or(0)]);
            }
            followed.exit_code = code.trim().parse().ok();
            return Ok(followed);
        }
        match mode {
            ConsoleMode::Console => pass_on(&mut followed, false, &line),
            ConsoleMode::Piped => {
                let Some(position) = marker else { continue };
                let rest = &trimmed[position + MARKER.len()..];
                let (to_errors, encoded) = match (rest.strip_prefix("out "), rest.strip_prefix("err ")) {
                    (Some(encoded), _) => (false, encoded),
                    (_, Some(encoded)) => (true, encoded),
                    _ => continue,
                };
                let bytes = decode_base64(encoded).ok_or_else(|| format!("a garbled output line on the console: {trimmed}"))?;
                pass_on(&mut followed, to_errors, &bytes);
            }
        }
    }
}

/// Standard base64 (with `=` padding); `None` for anything else.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let value = |byte: u8| match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut decoded = Vec::with_capacity(bytes.len() / 4 * 3);
    for (index, group) in bytes.chunks(4).enumerate() {
        let last = index + 1 == bytes.len() / 4;
        let padding = group.iter().rev().take_while(|&&byte| byte == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return None;
        }
        let mut word = 0u32;
        for &byte in &group[..4 - padding] {
            word = (word << 6) | u32::from(value(byte)?);
        }
        word <<= 6 * padding as u32;
        let three = [(word >> 16) as u8, (word >> 8) as u8, word as u8];
        decoded.extend_from_slice(&three[..3 - padding]);
    }
    Some(decoded)
}

/// Reads `[flags] -- PROGRAM [ARGS...]`.
pub fn parse_exec_arguments(arguments: &mut Arguments) -> Outcome<ExecRequest> {
    let (mut machine, mut kernel, mut files) =
        (MachineOptions::default(), GuestKernel::Lamina, Vec::new());
    loop {
        match arguments.next_argument()? {
            Some(Argument::Separator) => break,
            Some(Argument::Flag(flag)) if machine.take_flag(&flag, arguments)? => {}
            Some(Argument::Flag(flag)) if flag == "--linux" => kernel = GuestKernel::Linux,
            Some(Argument::Flag(flag)) if flag == "--file" => {
                files.push(parse_file_copy(&arguments.value(&flag)?)?)
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
    machine.validate()?;
    let mut rest = arguments.rest().into_iter();
    let program = rest
        .next()
        .ok_or_else(|| Failure::usage("no PROGRAM after `--`"))?;
    Ok(ExecRequest {
        machine,
        kernel,
        files,
        program: program.into(),
        program_arguments: rest.collect(),
    })
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
    fn the_console_is_read_between_the_markers() {
        let console = b"Lamina 0.1.0\r\nlamina-exec: start\r\nhello\r\nworld\nlamina-exec: exit 3\r\nafter\r\n";
        let followed = follow_console(&console[..], ConsoleMode::Console, Output::Capture).unwrap();
        assert_eq!((followed.output.as_slice(), followed.exit_code), (&b"hello\nworld\n"[..], Some(3)));
        let unfinished = b"lamina-exec: start\npartial";
        assert_eq!(follow_console(&unfinished[..], ConsoleMode::Console, Output::Capture).unwrap().exit_code, None);
    }

    #[test]
    fn piped_streams_are_decoded_apart_and_other_console_lines_ignored() {
        let console = b"boot noise\r\nlamina-exec: start\r\nlamina-exec: out aGVs\r\n[ 1.0] a kernel message\r\n\
lamina-exec: err ZXJy\nlamina-exec: out bG8K\nlamina-exec: out AA==\nlamina-exec: exit 7\n";
        let followed = follow_console(&console[..], ConsoleMode::Piped, Output::Capture).unwrap();
        assert_eq!(followed, Followed { output: b"hello\n\0".to_vec(), errors: b"err".to_vec(), exit_code: Some(7) });
        let garbled = b"lamina-exec: start\nlamina-exec: out aGV[x\n";
        assert!(follow_console(&garbled[..], ConsoleMode::Piped, Output::Capture).is_err());
    }

    #[test]
    fn base64_decodes_every_length_and_refuses_bad_text() {
        let cases: &[(&str, &[u8])] = &[("", b""), ("AA==", b"\0"), ("AAE=", b"\0\x01"), ("/+8A", b"\xff\xef\0"), ("aGVsbG8K", b"hello\n")];
        for (text, bytes) in cases {
            assert_eq!(decode_base64(text).as_deref(), Some(*bytes), "{text}");
        }
        for bad in ["A", "AA=A", "A===", "AA==AAAA", "A*AA"] {
            assert_eq!(decode_base64(bad), None, "{bad}");
        }
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
