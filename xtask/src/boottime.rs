//! `cargo xtask boottime [--runs N] [--smp N]`: wall time from starting QEMU
//! to the monitor prompt, over several boots, recorded as benchmark
//! `boot/boot_to_prompt_smp<N>`.

use crate::arguments::{unexpected, Argument, Arguments};
use crate::bench_results::{save_records, BenchmarkRecord};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Failure, Outcome};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{BootMedium, EXIT_PASSED};
use crate::qemu_session::QemuSession;
use crate::serial_protocol::{POWEROFF, PROMPT};
use crate::statistics::summarize;
use std::path::Path;
use std::time::Duration;

/// Longest a single boot may take under TCG.
const BOOT_TIME_LIMIT: Duration = Duration::from_secs(120);

/// How many boots, on how many CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoottimeOptions {
    pub runs: usize,
    pub cpu_count: u32,
}

impl Default for BoottimeOptions {
    fn default() -> Self {
        BoottimeOptions {
            runs: 10,
            cpu_count: 2,
        }
    }
}

/// `cargo xtask boottime`.
pub fn boottime_command(mut arguments: Arguments) -> Outcome {
    let options = parse_boottime_arguments(&mut arguments)?;
    ensure_dependencies()?;
    let image = build_kernel(ImageKind::Normal)?;
    let record = measure_boot_time(&image, options)?;
    println!("results written to {}", save_records(&[record])?.display());
    Ok(())
}

fn parse_boottime_arguments(arguments: &mut Arguments) -> Outcome<BoottimeOptions> {
    let mut options = BoottimeOptions::default();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--runs" => options.runs = arguments.number(&flag)?,
            Argument::Flag(flag) if flag == "--smp" => {
                options.cpu_count = arguments.number(&flag)?
            }
            other => return Err(unexpected("boottime", other)),
        }
    }
    if options.runs == 0 {
        return Err(Failure::usage("--runs must be at least 1"));
    }
    MachineOptions::with(options.cpu_count, 256).validate()?;
    Ok(options)
}

/// Boots `image` `options.runs` times and summarizes the times to the prompt.
pub fn measure_boot_time(image: &Path, options: BoottimeOptions) -> Outcome<BenchmarkRecord> {
    let machine = MachineOptions::with(options.cpu_count, 256);
    let mut samples = Vec::new();
    for run in 1..=options.runs {
        let time = time_one_boot(image, &machine)?;
        println!("boot {run}/{}: {:.3} s", options.runs, time.as_secs_f64());
        samples.push(time.as_nanos() as f64);
    }
    let summary = summarize(&samples).expect("at least one run");
    let seconds = |nanoseconds: f64| nanoseconds / 1e9;
    println!(
        "boot to prompt, {} CPUs: min {:.3} s, median {:.3} s, max {:.3} s",
        options.cpu_count,
        seconds(summary.minimum),
        seconds(summary.median),
        seconds(summary.maximum)
    );
    Ok(BenchmarkRecord {
        group: "boot".into(),
        name: format!("boot_to_prompt_smp{}", options.cpu_count),
        unit: "ns".into(),
        lamina: Some(summary.median),
        linux: None,
        linux_no_mitigations: None,
        cpu_count: options.cpu_count,
        accelerator: "tcg".into(),
        runs: options.runs,
        spread: summary.spread,
    })
}

/// Time from spawning QEMU to the first prompt; then powers the guest off.
fn time_one_boot(image: &Path, machine: &MachineOptions) -> Outcome<Duration> {
    let mut session = QemuSession::start(
        machine,
        &BootMedium::Kernel(image.to_path_buf()),
        BOOT_TIME_LIMIT,
    )?;
    let failed = |session: &QemuSession, why: String| {
        Failure::failed(format!("{why}; serial log:\n{}", session.log()))
    };
    if let Err(why) = session.wait_for_text(PROMPT, 1) {
        return Err(failed(&session, format!("no prompt: {why}")));
    }
    let time = session.started().elapsed();
    session.send(POWEROFF)?;
    match session.wait_for_exit() {
        Ok(Some(0 | EXIT_PASSED)) => Ok(time),
        Ok(code) => Err(failed(
            &session,
            format!("poweroff ended QEMU with {code:?}"),
        )),
        Err(why) => Err(failed(
            &session,
            format!("poweroff did not end QEMU: {why}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Outcome<BoottimeOptions> {
        parse_boottime_arguments(&mut Arguments::new(
            list.iter().map(|text| text.to_string()),
        ))
    }

    #[test]
    fn defaults_and_flags() {
        assert_eq!(
            parse(&[]),
            Ok(BoottimeOptions {
                runs: 10,
                cpu_count: 2
            })
        );
        assert_eq!(
            parse(&["--runs", "3", "--smp=4"]),
            Ok(BoottimeOptions {
                runs: 3,
                cpu_count: 4
            })
        );
        for bad in [
            &["--runs", "0"][..],
            &["--smp", "0"],
            &["--mem", "8"],
            &["extra"],
        ] {
            assert!(
                matches!(parse(bad), Err(Failure::Usage(_))),
                "{bad:?} accepted"
            );
        }
    }
}
