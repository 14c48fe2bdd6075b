//! `cargo xtask run`: builds the kernel and an initramfs with BusyBox and
//! boots them in QEMU into a shell on this terminal (Ctrl-A x quits,
//! Ctrl-A c for QEMU's monitor). With `--disk PATH` (what `make run`
//! passes: `target/lamina-disk.img`) the root file system is the ext4 on
//! that image, made from the same tree on first use, so files made at the
//! shell are there at the next boot; `--disk none` keeps the root in memory.
//! Programs `cargo xtask apps` built are in `/usr/local/bin`.
//! The guest has a network card (its address by DHCP; `--port` forwards
//! host ports on 127.0.0.1 to it).

use crate::arguments::{unexpected, Argument, Arguments};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Context, Failure, Outcome};
use crate::guest_files::{build_initramfs, write_image};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, qemu_command, BootMedium, Console, EXIT_PASSED};
use crate::workspace;
use std::path::{Path, PathBuf};

/// `cargo xtask run [--smp N] [--mem MiB] [--accel tcg|kvm] [--icount] [--disk PATH|none] [--port HOST:GUEST[,…]]`:
/// always with a network card on QEMU's restricted user network.
pub fn run_command(mut arguments: Arguments) -> Outcome {
    let (machine, disk, forwards) = parse_run_arguments(&mut arguments)?;
    ensure_dependencies()?;
    let image = build_kernel(ImageKind::Normal)?;
    let shell = shell_boot(image, disk.as_deref())?;
    let mut command = qemu_command(&machine, &shell.medium, Console::Interactive);
    command.args(&shell.disk_arguments);
    command.args(crate::network::qemu_arguments(&crate::network::GuestNetwork::User(forwards.clone())));
    for forward in &forwards {
        println!("xtask: 127.0.0.1:{} on this machine reaches the guest's port {}", forward.host, forward.guest);
    }
    if let Some(disk) = &disk {
        println!("xtask: root file system: {} (files made at the shell are kept; DISK=none for a root in memory)", disk.display());
    }
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

/// What `make run` boots: the kernel with the shell's initramfs, and with
/// a disk its root file system (made from the same tree if missing).
pub struct ShellBoot {
    pub medium: BootMedium,
    /// QEMU's arguments attaching the disk (none without one).
    pub disk_arguments: Vec<String>,
}

/// The shell boot of `kernel`, its root on the ext4 image `disk` if given.
pub fn shell_boot(kernel: PathBuf, disk: Option<&Path>) -> Outcome<ShellBoot> {
    let tree = build_initramfs(&crate::apps::guest_apps(), None)?;
    let initramfs = write_image("shell.cpio", &tree)?;
    let disk = disk.map(|path| crate::disk_image::prepare_root(path, &tree)).transpose()?;
    let command_line = if disk.is_some() { "root=/dev/vda".to_string() } else { String::new() };
    let disk_arguments = disk.as_deref().map(crate::disk_image::qemu_arguments).unwrap_or_default();
    Ok(ShellBoot { medium: BootMedium::KernelWithInitramfs { kernel, initramfs, command_line }, disk_arguments })
}

fn parse_run_arguments(arguments: &mut Arguments) -> Outcome<(MachineOptions, Option<PathBuf>, Vec<crate::network::PortForward>)> {
    let mut machine = MachineOptions::default();
    let mut disk = None;
    let mut forwards = Vec::new();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if machine.take_flag(&flag, arguments)? => {}
            Argument::Flag(flag) if flag == "--disk" => {
                let path = arguments.value(&flag)?;
                disk = (path != "none" && !path.is_empty()).then(|| PathBuf::from(path));
            }
            Argument::Flag(flag) if flag == "--port" => {
                // Empty: none (what `make run` passes without PORTS).
                let value = arguments.value(&flag)?;
                for text in value.split([',', ' ']).filter(|text| !text.is_empty()) {
                    forwards.push(crate::network::parse_port_forward(text)?);
                }
            }
            other => return Err(unexpected("run", other)),
        }
    }
    machine.validate()?;
    Ok((machine, disk, forwards))
}
