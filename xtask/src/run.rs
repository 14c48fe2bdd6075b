//! `cargo xtask run`: builds the kernel and boots it in QEMU with the serial
//! console on this terminal (Ctrl-A x quits, Ctrl-A c for QEMU's monitor).

use crate::arguments::{unexpected, Argument, Arguments};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Context, Failure, Outcome};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, qemu_command, BootMedium, Console, EXIT_PASSED};
use crate::workspace;

/// `cargo xtask run [--smp N] [--mem MiB] [--accel tcg|kvm] [--icount]`.
pub fn run_command(mut arguments: Arguments) -> Outcome {
    let machine = parse_run_arguments(&mut arguments)?;
    ensure_dependencies()?;
    let image = build_kernel(ImageKind::Normal)?;
    let mut command = qemu_command(&machine, &BootMedium::Kernel(image), Console::Interactive);
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
