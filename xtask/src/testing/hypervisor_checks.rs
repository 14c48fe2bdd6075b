//! Part of tier 4: the hypervisor (issue 24) through Linux's KVM interface.
//! `user/tests/kvm/kvm_basic.c` (system, VM and vCPU ioctls and their
//! errnos, memory slots, a real-mode and a long-mode guest's port I/O,
//! `hlt` and MMIO exits) runs on Lamina's `/dev/kvm` and on Debian's Linux
//! with its KVM modules loaded (`-cpu max` gives the Linux guest nested
//! SVM under TCG); the outputs must be equal line for line, and the
//! program's own checks must pass. And the VMM in the tree (`user/vmm`)
//! boots Debian's Linux (`target/linux/vmlinux`) through its PVH entry to
//! an init that prints a line, on both kernels: on Lamina that is Linux
//! under Lamina's hypervisor under TCG, on Linux the same VMM under a
//! real KVM. A second guest runs BusyBox as its init, its shell's output
//! going through the guest's interrupt-driven serial driver and a `sleep`
//! timed by the VMM's PIT, on both kernels. (Several guests at once are
//! not checked here yet: docs/hypervisor.md tells why.)

use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output, ProgramRun};
use crate::failure::Outcome;
use crate::machine_options::MachineOptions;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(300);
/// What Linux must load for `/dev/kvm` (its dependencies come along).
const KVM_MODULES: [&str; 1] = ["kvm_amd"];

/// What the guest's init prints (user/vmm/guest/init.c).
const GUEST_LINE: &str = "guest init: hello from Linux's init inside the VMM";
/// The guest kernel's command line: the early serial console kept (it
/// polls; the VMM has no interrupt controller yet), no devices to probe.
const GUEST_COMMAND_LINE: &str = "earlyprintk=serial,ttyS0,keep noapic nolapic nosmp acpi=off pci=off tsc=reliable lpj=1000000 reboot=t panic=-1 quiet";
const GUEST_TIME_LIMIT: Duration = Duration::from_secs(600);

pub fn run_hypervisor_checks(tally: &mut Tally) {
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        tally.record(&format!("hypervisor: the VMM boots Linux to its init ({kernel:?})"), match boot_linux_guest(kernel) {
            Ok(run) if run.exit_code == 0 && String::from_utf8_lossy(&run.output).contains(GUEST_LINE) => Ok(()),
            Ok(run) => {
                let output = String::from_utf8_lossy(&run.output);
                let tail: Vec<&str> = output.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
                Err(format!("exit {}\n{}\n{}", run.exit_code, tail.join("\n"), String::from_utf8_lossy(&run.errors)))
            }
            Err(failure) => Err(failure.to_string()),
        });
    }
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        tally.record(&format!("hypervisor: a Linux guest's shell runs on its serial console, its timer ticking ({kernel:?})"), shell_guest(kernel).map_err(|failure| failure.to_string()));
    }
    let runs = [GuestKernel::Lamina, GuestKernel::Linux].map(|kernel| (kernel, run(kernel)));
    for (kernel, run) in &runs {
        tally.record(&format!("hypervisor: kvm_basic's checks pass ({kernel:?})"), match run {
            Ok(run) if run.exit_code == 0 && String::from_utf8_lossy(&run.output).ends_with("PASS: 0 failures\n") => Ok(()),
            Ok(run) => Err(format!("exit {}\n{}{}", run.exit_code, String::from_utf8_lossy(&run.output), String::from_utf8_lossy(&run.errors))),
            Err(failure) => Err(failure.to_string()),
        });
    }
    if let [(_, Ok(lamina)), (_, Ok(linux))] = &runs {
        let (ours, theirs) = (String::from_utf8_lossy(&lamina.output), String::from_utf8_lossy(&linux.output));
        tally.record("hypervisor: kvm_basic (Lamina = Linux)", super::user_space::compare("kvm_basic", Some(&format!("{ours}--- exit {}\n", lamina.exit_code)), &format!("{theirs}--- exit {}\n", linux.exit_code)));
    }
}

fn run(kernel: GuestKernel) -> Outcome<ProgramRun> {
    let program = crate::guest_programs::compile_c("user/tests/kvm/kvm_basic.c", "kvm_basic")?;
    let files = kvm_modules(kernel)?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files,
        program,
        program_arguments: Vec::new(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}

/// On Linux, the KVM modules (and what they need) for the initramfs;
/// Lamina needs none.
fn kvm_modules(kernel: GuestKernel) -> Outcome<Vec<FileCopy>> {
    if kernel != GuestKernel::Linux {
        return Ok(Vec::new());
    }
    let scratch = crate::workspace::root().join("target");
    Ok(crate::linux_modules::guest_files(&KVM_MODULES, &scratch)?.into_iter().map(|file| FileCopy { host: file.host, guest: Some(file.guest) }).collect())
}

/// The files a guest boot needs beside the VMM: the kernel at /vmlinux,
/// the one-program initramfs at /guest.cpio.
fn guest_files() -> Outcome<Vec<FileCopy>> {
    let vmlinux = crate::linux_kernel::vmlinux()?;
    let init = crate::guest_programs::compile_c("user/vmm/guest/init.c", "vmm-guest-init")?;
    let init_bytes = std::fs::read(&init).map_err(|error| crate::failure::Failure::failed(format!("{}: {error}", init.display())))?;
    let mut archive = initramfs::Writer::new();
    archive.directory("dev", 0o755);
    archive.entry("dev/kmsg", 0o020_600, (1, 11), &[]);
    archive.file("init", 0o755, &init_bytes);
    let image = crate::guest_files::write_image("vmm-guest.cpio", &archive.finish())?;
    Ok(vec![
        FileCopy { host: vmlinux, guest: Some("/vmlinux".into()) },
        FileCopy { host: image, guest: Some("/guest.cpio".into()) },
    ])
}

/// The shell guest's command line: its console is the 8250 driver on
/// ttyS0, driven by interrupts through the VMM's PIC; the PIT is its clock.
const SHELL_COMMAND_LINE: &str = "console=ttyS0 earlyprintk=serial,ttyS0 noapic nolapic nosmp acpi=off pci=off tsc=reliable lpj=1000000 reboot=t panic=-1 no_timer_check quiet";

/// The VMM booting Linux with BusyBox as its init (`user/vmm/guest/shell-init.sh`).
fn shell_guest(kernel: GuestKernel) -> Outcome {
    let mut archive = initramfs::Writer::new();
    for directory in ["bin", "dev", "proc"] {
        archive.directory(directory, 0o755);
    }
    archive.entry("dev/console", 0o020_600, (5, 1), &[]);
    let read = |path: &std::path::Path| std::fs::read(path).map_err(|error| crate::failure::Failure::failed(format!("{}: {error}", path.display())));
    archive.file("bin/busybox", 0o755, &read(std::path::Path::new(crate::guest_files::BUSYBOX))?);
    archive.file("init", 0o755, &read(&crate::workspace::root().join("user/vmm/guest/shell-init.sh"))?);
    let image = crate::guest_files::write_image("vmm-shell.cpio", &archive.finish())?;
    let mut files = vec![
        FileCopy { host: crate::linux_kernel::vmlinux()?, guest: Some("/vmlinux".into()) },
        FileCopy { host: image, guest: Some("/shell.cpio".into()) },
    ];
    files.extend(kvm_modules(kernel)?);
    let request = ExecRequest {
        machine: MachineOptions::with(1, 512),
        kernel,
        files,
        program: crate::guest_programs::vmm()?,
        program_arguments: ["--kernel", "/vmlinux", "--initrd", "/shell.cpio", "--mem", "128", "--cmdline", SHELL_COMMAND_LINE].map(String::from).to_vec(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    let run = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(GUEST_TIME_LIMIT))?;
    let output = String::from_utf8_lossy(&run.output).into_owned();
    let errors = String::from_utf8_lossy(&run.errors);
    if run.exit_code != 0 || !errors.contains("vmm: the guest halted with interrupts off") {
        return Err(crate::failure::Failure::failed(format!("exit {}\n{output}{errors}", run.exit_code)));
    }
    check_shell_output(&output).map_err(|why| crate::failure::Failure::failed(format!("{why}\n{output}{errors}")))
}

/// What the shell guest must have printed: its kernel, the initramfs's
/// top directory, and two uptimes at least 0.9 s apart around `sleep 1`.
fn check_shell_output(output: &str) -> Result<(), String> {
    if !output.lines().any(|line| line.starts_with("guest shell: Linux 6.") && line.ends_with(", 1 CPU")) {
        return Err("no `guest shell: Linux 6.x, 1 CPU` line".into());
    }
    for name in ["bin", "dev", "init", "proc"] {
        if !output.lines().any(|line| line.split_whitespace().any(|word| word == name)) {
            return Err(format!("`ls /` did not show {name}"));
        }
    }
    let uptime = |label: &str| -> Result<f64, String> {
        let line = output.lines().find_map(|line| line.trim_end().strip_prefix(label)).ok_or_else(|| format!("no `{label}` line"))?;
        line.trim().parse::<f64>().map_err(|_| format!("`{label}{line}` is not a number"))
    };
    let (before, after) = (uptime("uptime before: ")?, uptime("uptime after: ")?);
    if after - before < 0.9 {
        return Err(format!("sleep 1 took {:.2} s of the guest's time: its timer is not ticking", after - before));
    }
    Ok(())
}

/// The VMM booting Debian's vmlinux with a one-program initramfs.
fn boot_linux_guest(kernel: GuestKernel) -> Outcome<ProgramRun> {
    let mut files = guest_files()?;
    files.extend(kvm_modules(kernel)?);
    let request = ExecRequest {
        machine: MachineOptions::with(2, 1024),
        kernel,
        files,
        program: crate::guest_programs::vmm()?,
        program_arguments: ["--kernel", "/vmlinux", "--initrd", "/guest.cpio", "--cmdline", GUEST_COMMAND_LINE].map(String::from).to_vec(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(GUEST_TIME_LIMIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_guest_must_show_its_kernel_its_files_and_a_second_passing() {
        let good = "guest shell: Linux 6.1.0-57-amd64, 1 CPU\nbin   dev   init  proc  root\nuptime before: 5.07\nuptime after: 6.09\n";
        assert_eq!(check_shell_output(good), Ok(()));
        assert!(check_shell_output(&good.replace("6.09", "5.10")).is_err(), "a stopped clock");
        assert!(check_shell_output(&good.replace("proc", "prc")).is_err());
        assert!(check_shell_output(&good.replace("guest shell", "guest")).is_err());
        assert!(check_shell_output(&good.replace("uptime after: 6.09\n", "")).is_err());
    }
}
