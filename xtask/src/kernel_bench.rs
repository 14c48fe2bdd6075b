//! Benchmarks measured inside the kernel (`kbench` image): boots it under
//! `-icount shift=0,sleep=off` (records in guest instructions) and under
//! multi-threaded TCG (records in wall-clock ns and ratios), and turns its
//! `kbench: {json}` lines into records.

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
const ICOUNT_CPUS: u32 = 2;
const WALL_CPUS: u32 = 8;

/// Records of `group` from both kbench boots.
pub fn run_kernel_group(group: &str) -> Outcome<Vec<BenchmarkRecord>> {
    let image = build_kernel(ImageKind::Bench)?;
    let mut records = Vec::new();
    for (counting, cpus, mode, accelerator) in [
        (InstructionCounting::On, ICOUNT_CPUS, "icount", "tcg-icount"),
        (InstructionCounting::Off, WALL_CPUS, "wall", "tcg"),
    ] {
        let mut machine = MachineOptions::with(cpus, 256);
        machine.counting = counting;
        let medium = BootMedium::KernelWithCommandLine(image.clone(), format!("kbench={mode}"));
        let mut session = QemuSession::start(&machine, &medium, TIME_LIMIT)?;
        session
            .wait_for_text("kbench: done", 1)
            .map_err(|failure| {
                Failure::failed(format!(
                    "kbench ({mode}) did not finish: {failure:?}\n{}",
                    session.log()
                ))
            })?;
        let log = session.log();
        records.extend(parse_records(&log, group, cpus, accelerator)?);
    }
    Ok(records)
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
