//! Benchmarks measured inside the kernel (`kbench` image): boots it under
//! `-icount shift=0,sleep=off` (records in guest instructions) and under
//! multi-threaded TCG (records in wall-clock ns and ratios), and turns its
//! `kbench: {json}` lines into records.

use std::sync::Mutex;
use std::time::Duration;

use crate::bench_results::BenchmarkRecord;
use crate::failure::{Failure, Outcome};
use crate::json::Value;
use crate::json_parser;
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::{InstructionCounting, MachineOptions};
use crate::qemu_command::BootMedium;
use crate::qemu_session::QemuSession;

const TIME_LIMIT: Duration = Duration::from_secs(600);

/// How many vCPUs a boot gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cpus {
    Exactly(u32),
    /// As many as the host has cores, from 2 to 8: the server/client
    /// speedup is about parallelism, and vCPUs beyond the host's cores only
    /// measure the host scheduler (a FIFO lock handing over to a vCPU thread
    /// the host has descheduled; the big-lock image on 8 vCPUs over 2 cores
    /// did not finish in 10 minutes).
    HostCores,
}

impl Cpus {
    fn count(self) -> u32 {
        match self {
            Self::Exactly(count) => count,
            Self::HostCores => std::thread::available_parallelism()
                .map_or(2, |cores| cores.get() as u32)
                .clamp(2, 8),
        }
    }
}

/// One boot of a benchmark image.
struct KernelBenchRun {
    image: ImageKind,
    counting: InstructionCounting,
    cpus: Cpus,
    /// The `kbench=` mode on the kernel command line: which benchmarks run.
    mode: &'static str,
    accelerator: &'static str,
    /// The only group with records from this boot, or `None` for all.
    only_group: Option<&'static str>,
    /// Booted as one CPU group per CPU (issue 20) instead of one kernel.
    group_per_cpu: bool,
}

/// The boots, in order: the fine-grained image under icount (instruction
/// counts) and under multi-threaded TCG on 8 vCPUs (wake-up latency, lock
/// efficiency), then mC2's server/client benchmark on the fine-grained and
/// the big-kernel-lock image, on as many vCPUs as the host has cores; the
/// multikernel and cost-model boots have their own groups.
const RUNS: [KernelBenchRun; 8] = [
    KernelBenchRun {
        image: ImageKind::Bench,
        counting: InstructionCounting::On,
        cpus: Cpus::Exactly(2),
        mode: "icount",
        accelerator: "tcg-icount",
        only_group: None,
        group_per_cpu: false,
    },
    KernelBenchRun {
        image: ImageKind::Bench,
        counting: InstructionCounting::Off,
        cpus: Cpus::Exactly(8),
        mode: "wall",
        accelerator: "tcg",
        only_group: None,
        group_per_cpu: false,
    },
    KernelBenchRun {
        image: ImageKind::Bench,
        counting: InstructionCounting::Off,
        cpus: Cpus::HostCores,
        mode: "serverclient",
        accelerator: "tcg",
        only_group: Some("sched"),
        group_per_cpu: false,
    },
    KernelBenchRun {
        image: ImageKind::Bench,
        counting: InstructionCounting::On,
        cpus: Cpus::Exactly(4),
        mode: "multikernel",
        accelerator: "tcg-icount",
        only_group: Some("multikernel"),
        group_per_cpu: false,
    },
    // The scale simulator's cost model: 2 vCPUs for its cross-CPU wake-up.
    KernelBenchRun {
        image: ImageKind::Bench,
        counting: InstructionCounting::On,
        cpus: Cpus::Exactly(2),
        mode: "costs",
        accelerator: "tcg-icount",
        only_group: Some("costs"),
        group_per_cpu: false,
    },
    // mC2's pairs as one kernel, then with each pair in its own CPU group.
    pairs_run(false),
    pairs_run(true),
    KernelBenchRun {
        image: ImageKind::BenchBigLock,
        counting: InstructionCounting::Off,
        cpus: Cpus::HostCores,
        mode: "serverclient",
        accelerator: "tcg",
        only_group: Some("sched"),
        group_per_cpu: false,
    },
];

/// The boot of mC2's server/client pairs for the `multikernel` group, as
/// one kernel or with one CPU group per CPU.
const fn pairs_run(group_per_cpu: bool) -> KernelBenchRun {
    KernelBenchRun {
        image: ImageKind::Bench,
        counting: InstructionCounting::Off,
        cpus: Cpus::HostCores,
        mode: "pairs",
        accelerator: "tcg",
        only_group: Some("multikernel"),
        group_per_cpu,
    }
}

/// Groups measured only by boots of their own (no records in the others).
const DEDICATED_GROUPS: [&str; 2] = ["multikernel", "costs"];

/// Records of `group` from the kbench boots.
pub fn run_kernel_group(group: &str) -> Outcome<Vec<BenchmarkRecord>> {
    let mut records = Vec::new();
    for (index, run) in RUNS
        .iter()
        .enumerate()
        .filter(|(_, run)| run.only_group.map_or(!DEDICATED_GROUPS.contains(&group), |only| only == group))
    {
        let log = boot_once(index, run)?;
        records.extend(parse_records(&log, group, run.cpus.count(), run.accelerator)?);
    }
    Ok(records)
}

/// Logs of the boots done so far by this `xtask bench`: each boot runs
/// the benchmarks of every group, so groups after the first reuse it.
static LOGS: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

/// The log of `run` (the `index`-th of [`RUNS`]), booting it the first time.
fn boot_once(index: usize, run: &KernelBenchRun) -> Outcome<String> {
    let cached = LOGS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .find(|(done, _)| *done == index)
        .map(|(_, log)| log.clone());
    if let Some(log) = cached {
        return Ok(log);
    }
    let log = boot_and_collect(run)?;
    LOGS.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push((index, log.clone()));
    Ok(log)
}

/// Boots `run`'s image until it prints `kbench: done`; returns its log
/// (also kept in `target/kbench-<mode>-<image>.log`).
fn boot_and_collect(run: &KernelBenchRun) -> Outcome<String> {
    let image = build_kernel(run.image)?;
    let mut machine = MachineOptions::with(run.cpus.count(), 256);
    machine.counting = run.counting;
    if run.group_per_cpu {
        machine.groups = run.cpus.count();
    }
    let mode = run.mode;
    let medium = BootMedium::KernelWithCommandLine(image, format!("kbench={mode}"));
    let mut session = QemuSession::start(&machine, &medium, TIME_LIMIT)?;
    session
        .wait_for_text("kbench: done", 1)
        .map_err(|failure| {
            Failure::failed(format!(
                "kbench ({mode}, {:?}) did not finish: {failure:?}\n{}",
                run.image,
                session.log()
            ))
        })?;
    let log = session.log();
    let _ = std::fs::write(crate::workspace::target_directory().join(format!("kbench-{mode}-{:?}{}.log", run.image, if run.group_per_cpu { "-groups" } else { "" })), &log);
    Ok(log)
}

/// The records of `group` among the `kbench: {…}` lines of `log`.
fn parse_records(
    log: &str,
    group: &str,
    cpus: u32,
    accelerator: &str,
) -> Outcome<Vec<BenchmarkRecord>> {
    let mut records = Vec::new();
    for line in log
        .lines()
        .filter_map(|line| line.trim().strip_prefix("kbench: {"))
    {
        let value = json_parser::parse(&format!("{{{line}"))
            .map_err(|error| Failure::failed(format!("bad kbench line: {error}")))?;
        let text = |key: &str| value.text_field(key).unwrap_or_default().to_string();
        let number = |key: &str| match value.field(key) {
            Some(Value::Number(digits)) => digits.parse::<f64>().ok(),
            _ => None,
        };
        if text("group") != group {
            continue;
        }
        records.push(BenchmarkRecord {
            group: text("group"),
            name: text("name"),
            unit: text("unit"),
            lamina: number("value"),
            linux: None,
            linux_no_mitigations: None,
            cpu_count: cpus,
            accelerator: accelerator.to_string(),
            runs: number("runs").unwrap_or(1.0) as usize,
            spread: number("spread").unwrap_or(0.0),
        });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kbench_lines_become_records_of_their_group() {
        let log = "noise\nkbench: {\"group\": \"sched\", \"name\": \"yield_switch\", \"unit\": \"instructions\", \"value\": 465.5, \"runs\": 7, \"spread\": 0.0}\r\nkbench: {\"group\": \"locks\", \"name\": \"x\", \"unit\": \"ratio\", \"value\": 1.0, \"runs\": 3, \"spread\": 0.1}\n";
        let records = parse_records(log, "sched", 2, "tcg-icount").expect("valid lines");
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].name, "yield_switch");
        assert_eq!(records[0].lamina, Some(465.5));
        assert_eq!(records[0].runs, 7);
        assert!(parse_records("kbench: {\"group\": ", "sched", 2, "tcg").is_err());
    }
}
