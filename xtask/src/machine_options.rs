//! The virtual machine's shape shared by `run`, `exec` and the tests:
//! `--smp N`, `--groups N`, `--mem MiB`, `--accel tcg|kvm`, `--icount` and
//! `--tcg-one-thread`.

use crate::arguments::Arguments;
use crate::failure::{Failure, Outcome};

/// How QEMU executes guest code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accelerator {
    /// QEMU's software translator; the default (the paravirtual KVM on our
    /// machines cannot run ring-3 system calls).
    Tcg,
    /// Hardware virtualization; only when asked for.
    Kvm,
}

/// Whether guest time follows the instruction count (`-icount shift=0,sleep=off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstructionCounting {
    Off,
    On,
}

/// How many host threads QEMU's translator runs the CPUs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranslatorThreads {
    /// One per CPU (`thread=multi`), the default with several CPUs.
    PerCpu,
    /// One for all CPUs, taking turns (`thread=single`). Several guests
    /// under Lamina's hypervisor need it: with one thread per CPU, QEMU
    /// 7.2 wrote host state into a running guest's VMCB
    /// (docs/hypervisor.md, "QEMU's TCG is not hardware").
    One,
}

/// Largest CPU count the `pc` machine accepts without extra options.
const MOST_CPUS: u32 = 255;

/// The machine QEMU emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineOptions {
    pub cpu_count: u32,
    /// Kernel instances (CPU groups, issue 20): `groups=N` on the kernel
    /// command line when above 1.
    pub groups: u32,
    pub memory_mib: u32,
    pub accelerator: Accelerator,
    pub counting: InstructionCounting,
    pub translator_threads: TranslatorThreads,
}

impl Default for MachineOptions {
    fn default() -> Self {
        MachineOptions {
            cpu_count: 2,
            groups: 1,
            memory_mib: 256,
            accelerator: Accelerator::Tcg,
            counting: InstructionCounting::Off,
            translator_threads: TranslatorThreads::PerCpu,
        }
    }
}

impl MachineOptions {
    /// A default machine with `cpu_count` CPUs and `memory_mib` MiB.
    pub fn with(cpu_count: u32, memory_mib: u32) -> Self {
        MachineOptions {
            cpu_count,
            memory_mib,
            ..MachineOptions::default()
        }
    }

    /// Reads the value of `flag` if it is one of ours; returns whether it was.
    pub fn take_flag(&mut self, flag: &str, arguments: &mut Arguments) -> Outcome<bool> {
        match flag {
            "--smp" => self.cpu_count = arguments.number(flag)?,
            "--groups" => self.groups = arguments.number(flag)?,
            "--mem" => self.memory_mib = arguments.number(flag)?,
            "--accel" => self.accelerator = parse_accelerator(&arguments.value(flag)?)?,
            "--icount" => self.counting = InstructionCounting::On,
            "--tcg-one-thread" => self.translator_threads = TranslatorThreads::One,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Refuses combinations QEMU cannot run.
    pub fn validate(&self) -> Outcome {
        if !(1..=MOST_CPUS).contains(&self.cpu_count) {
            return Err(Failure::usage(format!(
                "--smp must be 1 to {MOST_CPUS}, not {}",
                self.cpu_count
            )));
        }
        if self.groups == 0 || self.groups > self.cpu_count.min(64) {
            return Err(Failure::usage(format!(
                "--groups must be 1 to the CPU count ({}, at most 64), not {}",
                self.cpu_count, self.groups
            )));
        }
        if self.memory_mib == 0 {
            return Err(Failure::usage("--mem must be at least 1 MiB"));
        }
        if self.counting == InstructionCounting::On && self.accelerator == Accelerator::Kvm {
            return Err(Failure::usage("--icount needs --accel tcg"));
        }
        if self.translator_threads == TranslatorThreads::One && self.accelerator == Accelerator::Kvm {
            return Err(Failure::usage("--tcg-one-thread needs --accel tcg"));
        }
        Ok(())
    }
}

/// `tcg` or `kvm`.
pub fn parse_accelerator(text: &str) -> Outcome<Accelerator> {
    match text {
        "tcg" => Ok(Accelerator::Tcg),
        "kvm" => Ok(Accelerator::Kvm),
        other => Err(Failure::usage(format!(
            "--accel must be tcg or kvm, not `{other}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Outcome<MachineOptions> {
        let mut arguments = Arguments::new(list.iter().map(|text| text.to_string()));
        let mut options = MachineOptions::default();
        while let Some(crate::arguments::Argument::Flag(flag)) = arguments.next_argument()? {
            assert!(
                options.take_flag(&flag, &mut arguments)?,
                "unknown flag {flag}"
            );
        }
        options.validate().map(|()| options)
    }

    #[test]
    fn defaults_are_two_cpus_and_256_mib_under_tcg() {
        assert_eq!(parse(&[]), Ok(MachineOptions::with(2, 256)));
    }

    #[test]
    fn every_flag_is_read() {
        let options = parse(&["--smp", "8", "--groups", "4", "--mem=64", "--accel", "tcg", "--icount"]).unwrap();
        assert_eq!((options.cpu_count, options.groups, options.memory_mib), (8, 4, 64));
        assert_eq!(options.counting, InstructionCounting::On);
        assert_eq!(parse(&["--tcg-one-thread"]).unwrap().translator_threads, TranslatorThreads::One);
        assert_eq!(
            parse(&["--accel=kvm"]).unwrap().accelerator,
            Accelerator::Kvm
        );
    }

    #[test]
    fn impossible_machines_are_usage_errors() {
        for bad in [
            &["--smp", "0"][..],
            &["--smp", "256"],
            &["--mem", "0"],
            &["--accel", "hvf"],
            &["--groups", "0"],
            &["--smp", "2", "--groups", "3"],
        ] {
            assert!(
                matches!(parse(bad), Err(Failure::Usage(_))),
                "{bad:?} accepted"
            );
        }
        assert!(matches!(
            parse(&["--accel", "kvm", "--icount"]),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(parse(&["--accel", "kvm", "--tcg-one-thread"]), Err(Failure::Usage(_))));
    }
}
