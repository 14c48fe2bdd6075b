//! `cargo xtask run`: builds the kernel and an initramfs with BusyBox and
//! boots them in QEMU into a shell on this terminal (Ctrl-A x quits,
//! Ctrl-A c for QEMU's monitor).

use crate::arguments::{unexpected, Argument, Arguments};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Context, Failure, Outcome};
use crate::guest_files::{build_initramfs, write_image};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, qemu_command, BootMedium, Console, EXIT_PASSED};
use crate::workspace;

/// `cargo xtask run [--smp N] [--mem MiB] [--accel tcg|kvm] [--icount]`.
pub fn run_command(mut arguments: Arguments) -> Outcome {
    let machine = parse_run_arguments(&mut arguments)?;
    ensure_dependencies()?;
    let image = build_kernel(ImageKind::Normal)?;
    let initramfs = write_image("shell.cpio", &build_initramfs(&[], None)?)?;
    let medium = BootMedium::KernelWithInitramfs { kernel: image, initramfs, command_line: String::new() };
    let mut command = qemu_command(&machine, &medium, Console::Interactive);
    println!("xtask: booting with {}", workspace::describe(&command));
    println!("xtask: press Ctrl-A x to quit QEMU");
    let status = command
        .status()
        .context(|| "cannot start QEMU".to_string())?;
    match status.code() {
        Some(0) | Some(EXIT_PASSED) => Ok(()),
        code => Err(Failure::failed(format!(
            "QEMU exited with {}",
            describe_exit_status(code)
        ))),
    }
}

fn parse_run_arguments(arguments: &mut Arguments) -> Outcome<MachineOptions> {
    let mut machine = MachineOptions::default();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if machine.take_flag(&flag, arguments)? => {}
            other => return Err(unexpected("run", other)),
        }
    }
    machine.validate()?;
    Ok(machine)
}
