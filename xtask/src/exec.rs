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
use std::io::{BufRead, Read, Write};
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
    let status = run_program(&request, Input::Inherit, None)?;
    std::process::exit(status.exit_code);
}

/// Where the program's standard input comes from.
pub enum Input {
    /// This terminal (or whatever xtask's stdin is).
    Inherit,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
}

/// How a program run ended.
pub struct ProgramRun {
    /// What the program wrote (console output between the markers, with
    /// `\r\n` turned into `\n`), when captured.
    pub output: Vec<u8>,
    pub exit_code: i32,
}

/// Boots the guest kernel with `request`'s program run by `/init` and
/// streams its output to stdout (or captures it, with `Input::Bytes`).
/// With a time limit, a guest that has not finished by then is stopped.
pub fn run_program(request: &ExecRequest, input: Input, time_limit: Option<std::time::Duration>) -> Outcome<ProgramRun> {
    let program_guest = request.program.display().to_string();
    let mut files = vec![GuestFile { host: request.program.clone(), guest: program_guest.clone() }];
    for copy in &request.files {
        let guest = copy.guest.clone().unwrap_or_else(|| copy.host.display().to_string());
        files.push(GuestFile { host: copy.host.clone(), guest });
    }
    let mut init = vec![program_guest];
    init.extend(request.program_arguments.iter().cloned());
    let archive = build_initramfs(&files, Some(&init))?;
    let name = format!("exec-{}.cpio", std::process::id());
    let initramfs = write_image(&name, &archive)?;
    let (kernel, command_line) = match request.kernel {
        GuestKernel::Lamina => (build_kernel(ImageKind::Normal)?, "quiet"),
        GuestKernel::Linux => (crate::linux_kernel::vmlinux()?, "console=ttyS0 quiet"),
        GuestKernel::LinuxWithoutMitigations => (crate::linux_kernel::vmlinux()?, "console=ttyS0 quiet mitigations=off"),
    };
    let medium_initramfs = initramfs.clone();
    let medium = BootMedium::KernelWithInitramfs { kernel, initramfs, command_line: command_line.to_string() };
    let mut command = qemu_command(&request.machine, &medium, Console::Piped);
    command.stdout(Stdio::piped());
    let capture = matches!(input, Input::Bytes(_));
    command.stdin(if capture { Stdio::piped() } else { Stdio::inherit() });
    let mut child = command.spawn().context(|| "cannot start QEMU".to_string())?;
    if let (Input::Bytes(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
            // Keep the pipe open: closing it is not an end of file for the guest.
            std::thread::sleep(std::time::Duration::from_secs(3600));
        });
    }
    let stdout = child.stdout.take().ok_or_else(|| Failure::failed("no QEMU output pipe"))?;
    let (sender, receiver) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let _ = sender.send(follow_console(stdout, capture));
    });
    let finished = match time_limit {
        Some(limit) => receiver.recv_timeout(limit).ok(),
        None => receiver.recv().ok(),
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    let _ = std::fs::remove_file(&medium_initramfs);
    let Some((output, exit_code)) = finished else {
        return Err(Failure::failed(format!("the guest did not finish within {time_limit:?}")));
    };
    let exit_code = exit_code.ok_or_else(|| Failure::failed(format!(
        "the guest stopped without reporting the program's exit status; it printed:\n{}",
        String::from_utf8_lossy(&output)
    )))?;
    Ok(ProgramRun { output, exit_code })
}

/// Reads the console: drops everything before `lamina-exec: start`,
/// passes the rest through (or captures it) up to `lamina-exec: exit N`.
fn follow_console(stdout: impl Read, capture: bool) -> (Vec<u8>, Option<i32>) {
    let mut reader = std::io::BufReader::new(stdout);
    let mut started = false;
    let mut captured = Vec::new();
    let mut line = Vec::new();
    let mut out = std::io::stdout();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return (captured, None),
            Ok(_) => {}
        }
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
            line.push(b'\n');
        }
        let text = String::from_utf8_lossy(&line);
        let trimmed = text.trim_end();
        if !started {
            started = trimmed.ends_with("lamina-exec: start");
            continue;
        }
        if let Some(position) = trimmed.find("lamina-exec: exit ") {
            let before = &line[..position];
            if capture {
                captured.extend_from_slice(before);
            } else {
                let _ = out.write_all(before);
            }
            let code = trimmed[position + "lamina-exec: exit ".len()..].trim().parse().ok();
            let _ = out.flush();
            return (captured, code);
        }
        if capture {
            captured.extend_from_slice(&line);
        } else {
            let _ = out.write_all(&line);
            let _ = out.flush();
        }
    }
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

/// The program and every `--file` must be files on the host.
fn check_host_files_exist(request: &ExecRequest) -> Outcome {
    let hosts = request.files.iter().map(|copy| copy.host.as_path());
    for path in std::iter::once(request.program.as_path()).chain(hosts) {
        if !Path::new(path).is_file() {
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
        let (output, code) = follow_console(&console[..], true);
        assert_eq!((output.as_slice(), code), (&b"hello\nworld\n"[..], Some(3)));
        let unfinished = b"lamina-exec: start\npartial";
        assert_eq!(follow_console(&unfinished[..], true).1, None);
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
