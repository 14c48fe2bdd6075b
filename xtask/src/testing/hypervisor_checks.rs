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
//! timed by the VMM's PIT, on both kernels. Then several guests at once on Lamina: two Linux guests, each
//! VMM pinned to its own CPU, with a careless VMM (triple faults, random
//! state, a VMM killed mid-`KVM_RUN`, a guest reaching outside its memory)
//! running beside them; both guests must still reach their init.

use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output, ProgramRun};
use crate::failure::Outcome;
use crate::machine_options::{MachineOptions, TranslatorThreads};
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
    tally.record("hypervisor: two Linux guests at once on two CPUs, a careless VMM beside them", several_guests().map_err(|failure| failure.to_string()));
    tally.record("hypervisor: an interrupt reaches the guest once, through a spin with IF off (one translator thread)", match interrupt_once() {
        Ok(run) if run.exit_code == 0 && String::from_utf8_lossy(&run.output).ends_with("\n0 failures\n") => Ok(()),
        Ok(run) => Err(format!("exit {}\n{}{}", run.exit_code, String::from_utf8_lossy(&run.output), String::from_utf8_lossy(&run.errors))),
        Err(failure) => Err(failure.to_string()),
    });
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
    let request = guest_request(MachineOptions::default(), kernel, files, program, Vec::new());
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}

/// `kvm_interrupt_once` on Lamina, under QEMU with one translator thread
/// and two CPUs: there QEMU stops the running CPU every 100 ms to switch,
/// which is when QEMU 7.2 re-delivered an interrupt given through EVENTINJ
/// (the program's comment and docs/hypervisor.md tell the story).
fn interrupt_once() -> Outcome<ProgramRun> {
    let program = crate::guest_programs::compile_c("user/tests/kvm/kvm_interrupt_once.c", "kvm_interrupt_once")?;
    let request = guest_request(MachineOptions { translator_threads: TranslatorThreads::One, ..MachineOptions::with(2, 512) }, GuestKernel::Lamina, Vec::new(), program, Vec::new());
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}

/// A run of `program` with `arguments` on `kernel`, with `files`, no disk
/// and no network.
fn guest_request(machine: MachineOptions, kernel: GuestKernel, files: Vec<FileCopy>, program: std::path::PathBuf, arguments: Vec<String>) -> ExecRequest {
    ExecRequest { machine, kernel, files, program, program_arguments: arguments, disk: None, mount_disk: false, disk_log: None, network: None }
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
    let request = guest_request(MachineOptions::with(1, 512), kernel, files, crate::guest_programs::vmm()?, ["--kernel", "/vmlinux", "--initrd", "/shell.cpio", "--mem", "128", "--cmdline", SHELL_COMMAND_LINE].map(String::from).to_vec());
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
    let request = guest_request(MachineOptions::with(2, 1024), kernel, files, crate::guest_programs::vmm()?, ["--kernel", "/vmlinux", "--initrd", "/guest.cpio", "--cmdline", GUEST_COMMAND_LINE].map(String::from).to_vec());
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(GUEST_TIME_LIMIT))
}

/// Two VMMs pinned to CPUs 0 and 1 boot Linux at once while
/// `kvm_bad_vmm` runs its cases on CPU 1; the script prints each one's
/// output after a `== name (exit N)` line.
const SEVERAL_GUESTS_SCRIPT: &str = r#"C="$1"
/bin/busybox taskset -c 0 /vmm --kernel /vmlinux --initrd /guest.cpio --mem 128 --cmdline "$C" > /tmp/first 2>&1 &
first=$!
/bin/busybox taskset -c 1 /vmm --kernel /vmlinux --initrd /guest.cpio --mem 128 --cmdline "$C" > /tmp/second 2>&1 &
second=$!
KVM_BAD_VMM_SHARED=1 /bin/busybox taskset -c 1 /kvm_bad_vmm > /tmp/careless 2>&1
careless=$?
wait $first; first_exit=$?
wait $second; second_exit=$?
echo "== first (exit $first_exit)"; cat /tmp/first
echo "== second (exit $second_exit)"; cat /tmp/second
echo "== careless (exit $careless)"; cat /tmp/careless
"#;

/// Runs [`SEVERAL_GUESTS_SCRIPT`] on Lamina and checks each part. QEMU's
/// translator runs on one thread here: with a thread per CPU, QEMU 7.2
/// itself corrupted a guest's VMCB when another CPU entered and left
/// guests quickly (docs/hypervisor.md).
fn several_guests() -> Outcome {
    let mut files = guest_files()?;
    files.push(FileCopy { host: crate::guest_programs::vmm()?, guest: Some("/vmm".into()) });
    let careless = crate::guest_programs::compile_c("user/tests/native/kvm_bad_vmm.c", "kvm_bad_vmm")?;
    files.push(FileCopy { host: careless, guest: Some("/kvm_bad_vmm".into()) });
    let request = guest_request(MachineOptions { translator_threads: TranslatorThreads::One, ..MachineOptions::with(2, 1024) }, GuestKernel::Lamina, files, "/bin/sh".into(), ["-c", SEVERAL_GUESTS_SCRIPT, "several-guests", GUEST_COMMAND_LINE].map(String::from).to_vec());
    let run = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(GUEST_TIME_LIMIT))?;
    let output = String::from_utf8_lossy(&run.output).into_owned();
    check_several_guests(&output).map_err(|why| crate::failure::Failure::failed(format!("{why}\n{output}{}", String::from_utf8_lossy(&run.errors))))
}

/// What each part of [`SEVERAL_GUESTS_SCRIPT`]'s output must show.
fn check_several_guests(output: &str) -> Result<(), String> {
    let part = |name: &str| -> Result<&str, String> {
        let start = output.find(&format!("== {name} (exit 0)\n")).ok_or_else(|| format!("{name}: no part, or its exit was not 0"))?;
        let rest = &output[start..];
        let body = &rest[rest.find('\n').map_or(rest.len(), |at| at + 1)..];
        Ok(body.find("\n== ").map_or(body, |end| &body[..=end]))
    };
    for guest in ["first", "second"] {
        let text = part(guest)?;
        if !text.contains(GUEST_LINE) || !text.contains("vmm: the guest halted with interrupts off") {
            return Err(format!("{guest}: the guest did not reach its init and power off"));
        }
    }
    let careless = part("careless")?;
    if !careless.contains("\n0 failures") || careless.contains("FAIL ") {
        return Err("careless: kvm_bad_vmm's checks failed".into());
    }
    Ok(())
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

    #[test]
    fn several_guests_want_both_inits_and_a_clean_careless_vmm() {
        let good = format!(
            "== first (exit 0)\n{GUEST_LINE}\nvmm: the guest halted with interrupts off\n== second (exit 0)\n{GUEST_LINE}\nvmm: the guest halted with interrupts off\n== careless (exit 0)\nok   x\n0 failures\n"
        );
        assert_eq!(check_several_guests(&good), Ok(()));
        assert!(check_several_guests(&good.replace("second (exit 0)", "second (exit 5)")).is_err());
        assert!(check_several_guests(&good.replacen(GUEST_LINE, "", 2).replacen(GUEST_LINE, GUEST_LINE, 1)).is_err());
        assert!(check_several_guests(&good.replace("0 failures", "1 failures")).is_err());
        let first_only = good.replacen(&format!("{GUEST_LINE}\nvmm: the guest halted with interrupts off\n== second"), "vmm: the guest shut down (triple fault)\n== second", 1);
        assert!(check_several_guests(&first_only).is_err());
    }
}
