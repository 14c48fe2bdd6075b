//! `cargo xtask exec`: run one static Linux program as the first user process.
//!
//! The arguments are parsed and checked in full now; running the program
//! needs the user-space layer, so after checking we say so and exit with 2.

use crate::arguments::{unexpected, Argument, Arguments};
use crate::failure::{Failure, Outcome};
use crate::machine_options::MachineOptions;
use std::path::{Path, PathBuf};

/// Which kernel runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKernel {
    Lamina,
    /// Debian's Linux kernel in the same QEMU configuration (`--linux`).
    Linux,
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

/// What we print instead of running the program.
pub const NOT_YET: &str = "xtask exec: running user programs needs the user-space layer, \
which is not built yet (see issue \"User space and the Linux ABI\")";

/// `cargo xtask exec ...`.
pub fn exec_command(mut arguments: Arguments) -> Outcome {
    let request = parse_exec_arguments(&mut arguments)?;
    check_host_files_exist(&request)?;
    Err(Failure::Unsupported(NOT_YET.to_string()))
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
    fn a_valid_request_is_refused_honestly_with_status_2() {
        let refusal = exec_command(Arguments::new(["--".to_string(), "/bin/sh".to_string()]));
        assert_eq!(refusal, Err(Failure::Unsupported(NOT_YET.to_string())));
        assert_eq!(refusal.unwrap_err().exit_status(), 2);
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
