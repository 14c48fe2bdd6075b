//! The QEMU command line for each way we boot Lamina, and what QEMU's exit
//! status means.

use crate::machine_options::{Accelerator, InstructionCounting, MachineOptions, TranslatorThreads};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const QEMU: &str = "qemu-system-x86_64";
/// Minimal firmware that boots an ELF kernel through PVH quickly.
pub const QBOOT: &str = "/usr/share/qemu/qboot.rom";
/// UEFI firmware for the ISO test.
pub const OVMF: &str = "/usr/share/ovmf/OVMF.fd";

/// Exit status when the kernel writes 0x10 to isa-debug-exit: all tests passed.
/// The monitor's `poweroff` may also end with it.
pub const EXIT_PASSED: i32 = (0x10 << 1) | 1;
/// Exit status for 0x11: a test failed or the kernel panicked.
pub const EXIT_FAILED: i32 = (0x11 << 1) | 1;
/// Exit status for 0x12: a fatal boot error such as too little memory.
pub const EXIT_BOOT_ERROR: i32 = (0x12 << 1) | 1;

/// What QEMU starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootMedium {
    /// The ELF kernel itself, booted through PVH by qboot.
    Kernel(PathBuf),
    /// The ELF kernel with a kernel command line (`-append`).
    KernelWithCommandLine(PathBuf, String),
    /// A GRUB CD image, booted by the given firmware.
    Cdrom(PathBuf, Firmware),
    /// The ELF kernel, an initramfs (`-initrd`) and a command line.
    KernelWithInitramfs { kernel: PathBuf, initramfs: PathBuf, command_line: String },
}

/// The PC firmware for a CD boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Firmware {
    /// QEMU's default BIOS.
    SeaBios,
    /// UEFI.
    Ovmf,
}

/// Who is on the other end of the serial port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Console {
    /// A person at a terminal: serial muxed with the QEMU monitor (Ctrl-A x quits).
    Interactive,
    /// xtask through pipes: serial only, no monitor.
    Piped,
}

/// QEMU's arguments for booting `medium` on `machine`.
pub fn qemu_arguments(
    machine: &MachineOptions,
    medium: &BootMedium,
    console: Console,
) -> Vec<String> {
    let mut arguments = vec!["-M".to_string(), "pc".to_string()];
    arguments.extend(firmware_arguments(medium));
    arguments.extend(processor_arguments(machine));
    // No network card unless one is asked for: `-M pc` would add an e1000
    // on QEMU's unrestricted user network, and a Linux guest drives it.
    arguments.extend(["-no-reboot", "-display", "none", "-nic", "none"].map(String::from));
    arguments.extend(
        console_arguments(console)
            .iter()
            .map(|word| word.to_string()),
    );
    arguments.extend(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"].map(String::from));
    arguments.extend(medium_arguments(medium, machine));
    arguments
}

fn firmware_arguments(medium: &BootMedium) -> Vec<String> {
    match medium {
        BootMedium::Kernel(_) | BootMedium::KernelWithCommandLine(..) | BootMedium::KernelWithInitramfs { .. } => {
            vec!["-bios".into(), QBOOT.into()]
        }
        BootMedium::Cdrom(_, Firmware::Ovmf) => vec!["-bios".into(), OVMF.into()],
        BootMedium::Cdrom(_, Firmware::SeaBios) => vec![],
    }
}

fn processor_arguments(machine: &MachineOptions) -> Vec<String> {
    let (cpu, accelerator) = match (machine.accelerator, machine.counting) {
        (Accelerator::Kvm, _) => ("host", "kvm"),
        // Instruction counting needs the single-threaded translator.
        (Accelerator::Tcg, InstructionCounting::On) => ("max", "tcg,thread=single"),
        (Accelerator::Tcg, InstructionCounting::Off) if machine.cpu_count > 1 => match machine.translator_threads {
            TranslatorThreads::PerCpu => ("max", "tcg,thread=multi"),
            TranslatorThreads::One => ("max", "tcg,thread=single"),
        },
        (Accelerator::Tcg, InstructionCounting::Off) => ("max", "tcg"),
    };
    let mut arguments = vec!["-cpu".to_string(), cpu.to_string()];
    arguments.extend(["-smp".to_string(), machine.cpu_count.to_string()]);
    arguments.extend(["-m".to_string(), format!("{}M", machine.memory_mib)]);
    arguments.extend(["-accel".to_string(), accelerator.to_string()]);
    if machine.counting == InstructionCounting::On {
        arguments.extend(["-icount".to_string(), "shift=0,sleep=off".to_string()]);
    }
    arguments
}

fn console_arguments(console: Console) -> &'static [&'static str] {
    match console {
        Console::Interactive => &["-serial", "mon:stdio"],
        Console::Piped => &["-serial", "stdio", "-monitor", "none"],
    }
}

/// The kernel command line `base` with the machine's `groups=N` added
/// when it asks for more than one group.
fn with_groups(base: &str, machine: &MachineOptions) -> String {
    match machine.groups {
        0 | 1 => base.to_string(),
        groups if base.is_empty() => format!("groups={groups}"),
        groups => format!("{base} groups={groups}"),
    }
}

fn medium_arguments(medium: &BootMedium, machine: &MachineOptions) -> Vec<String> {
    let (flag, path) = match medium {
        BootMedium::Kernel(path) if machine.groups > 1 => {
            return ["-kernel".to_string(), path.display().to_string(), "-append".to_string(), with_groups("", machine)].to_vec();
        }
        BootMedium::Kernel(path) => ("-kernel", path),
        BootMedium::KernelWithCommandLine(path, command_line) => {
            let kernel = ["-kernel".to_string(), path.display().to_string()];
            return [kernel, ["-append".to_string(), with_groups(command_line, machine)]].concat();
        }
        BootMedium::Cdrom(path, _) => ("-cdrom", path),
        BootMedium::KernelWithInitramfs { kernel, initramfs, command_line } => {
            return [
                "-kernel".to_string(),
                kernel.display().to_string(),
                "-initrd".to_string(),
                initramfs.display().to_string(),
                "-append".to_string(),
                with_groups(command_line, machine),
            ]
            .to_vec();
        }
    };
    vec![flag.to_string(), path.display().to_string()]
}

/// The QEMU command. Under `setpriv --pdeathsig KILL` when available, so that
/// QEMU dies with xtask even if xtask is killed.
pub fn qemu_command(machine: &MachineOptions, medium: &BootMedium, console: Console) -> Command {
    let mut arguments = qemu_arguments(machine, medium, console);
    arguments.extend(developer_arguments());
    if !Path::new("/usr/bin/setpriv").is_file() {
        let mut command = Command::new(QEMU);
        command.args(arguments);
        return command;
    }
    let mut command = Command::new("/usr/bin/setpriv");
    command
        .args(["--pdeathsig", "KILL", "--", QEMU])
        .args(arguments);
    command
}

/// More QEMU arguments from `LAMINA_QEMU_ARGS` (split at spaces), for a
/// developer's debugging: `-s` for gdb, `-monitor unix:PATH,server,nowait`
/// for sampling with `info registers` (see `docs/benchmarks.md`).
fn developer_arguments() -> Vec<String> {
    std::env::var("LAMINA_QEMU_ARGS").map(|text| text.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

/// A person-readable meaning of QEMU's exit status.
pub fn describe_exit_status(code: Option<i32>) -> String {
    match code {
        Some(EXIT_PASSED) => "33: the kernel reported success (0x10)".into(),
        Some(EXIT_FAILED) => "35: the kernel reported a test failure or panic (0x11)".into(),
        Some(EXIT_BOOT_ERROR) => "37: the kernel reported a fatal boot error (0x12)".into(),
        Some(0) => {
            "0: QEMU shut down (ACPI power-off, or a reset/triple fault under -no-reboot)".into()
        }
        Some(other) => format!("{other}: QEMU itself failed"),
        None => "killed by a signal".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(machine: MachineOptions, medium: BootMedium, console: Console) -> String {
        qemu_arguments(&machine, &medium, console).join(" ")
    }

    #[test]
    fn the_standard_direct_boot_matches_the_interface() {
        let line = joined(
            MachineOptions::with(4, 256),
            BootMedium::Kernel("k".into()),
            Console::Piped,
        );
        assert_eq!(
            line,
            "-M pc -bios /usr/share/qemu/qboot.rom -cpu max -smp 4 -m 256M -accel tcg,thread=multi \
             -no-reboot -display none -nic none -serial stdio -monitor none \
             -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel k"
        );
    }

    #[test]
    fn groups_reach_the_kernel_command_line() {
        let grouped = MachineOptions { groups: 2, ..MachineOptions::with(4, 256) };
        let bare = joined(grouped, BootMedium::Kernel("k".into()), Console::Piped);
        assert!(bare.ends_with("-kernel k -append groups=2"), "{bare}");
        let medium = BootMedium::KernelWithInitramfs { kernel: "k".into(), initramfs: "i".into(), command_line: "root=/dev/vda".into() };
        let line = joined(grouped, medium.clone(), Console::Piped);
        assert!(line.ends_with("-append root=/dev/vda groups=2"), "{line}");
        let single = joined(MachineOptions::with(4, 256), medium, Console::Piped);
        assert!(single.ends_with("-append root=/dev/vda"), "{single}");
    }

    #[test]
    fn one_cpu_uses_plain_tcg_and_icount_forces_single_thread() {
        let line = joined(
            MachineOptions::with(1, 64),
            BootMedium::Kernel("k".into()),
            Console::Piped,
        );
        assert!(line.contains("-accel tcg -no-reboot"), "{line}");
        let counted = MachineOptions {
            counting: InstructionCounting::On,
            ..MachineOptions::with(2, 64)
        };
        let line = joined(counted, BootMedium::Kernel("k".into()), Console::Piped);
        assert!(
            line.contains("-accel tcg,thread=single -icount shift=0,sleep=off"),
            "{line}"
        );
        let one_thread = MachineOptions { translator_threads: TranslatorThreads::One, ..MachineOptions::with(2, 64) };
        let line = joined(one_thread, BootMedium::Kernel("k".into()), Console::Piped);
        assert!(line.contains("-smp 2 -m 64M -accel tcg,thread=single -no-reboot"), "{line}");
    }

    #[test]
    fn kvm_uses_the_host_cpu() {
        let kvm = MachineOptions {
            accelerator: Accelerator::Kvm,
            ..MachineOptions::default()
        };
        let line = joined(kvm, BootMedium::Kernel("k".into()), Console::Interactive);
        assert!(
            line.contains("-cpu host -smp 2 -m 256M -accel kvm"),
            "{line}"
        );
        assert!(
            line.contains("-serial mon:stdio -device") && !line.contains("-monitor"),
            "{line}"
        );
    }

    #[test]
    fn cd_boots_choose_their_firmware() {
        let seabios = joined(
            MachineOptions::default(),
            BootMedium::Cdrom("i.iso".into(), Firmware::SeaBios),
            Console::Piped,
        );
        assert!(
            !seabios.contains("-bios") && seabios.ends_with("-cdrom i.iso"),
            "{seabios}"
        );
        let ovmf = joined(
            MachineOptions::default(),
            BootMedium::Cdrom("i.iso".into(), Firmware::Ovmf),
            Console::Piped,
        );
        assert!(
            ovmf.starts_with("-M pc -bios /usr/share/ovmf/OVMF.fd"),
            "{ovmf}"
        );
    }
}
