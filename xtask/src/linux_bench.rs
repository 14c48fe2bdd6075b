//! Benchmarks side by side with Linux (Biscuit's method): the same static
//! programs (`user/bench/*.c`) on Lamina, on Debian's Linux and on Linux
//! with `mitigations=off`, in the same QEMU configuration, in one run.
//!
//! Every record is taken twice: in guest instructions per operation under
//! `-icount shift=0,sleep=off` (deterministic; one CPU on every kernel,
//! because Linux's secondary-CPU bring-up does not finish under icount in
//! this QEMU) and in wall-clock nanoseconds under multi-threaded TCG with
//! two CPUs (median of several boots; name suffix `_wall`).

use crate::bench_results::BenchmarkRecord;
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Failure, Outcome};
use crate::guest_programs::compile_c;
use crate::machine_options::{InstructionCounting, MachineOptions};
use crate::statistics::summarize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const KERNELS: [GuestKernel; 3] = [GuestKernel::Lamina, GuestKernel::Linux, GuestKernel::LinuxWithoutMitigations];
/// Boots per kernel for the wall-clock figures.
const WALL_RUNS: usize = 3;
const TIME_LIMIT: Duration = Duration::from_secs(900);

/// One program's figures: name -> value, per kernel.
pub type Figures = BTreeMap<String, f64>;

/// The `syscalls` group.
pub fn run_syscalls_group() -> Outcome<Vec<BenchmarkRecord>> {
    let program = compile_c("user/bench/syscalls.c", "bench-syscalls")?;
    measure("syscalls", &|kernel, machine| syscalls_request(&program, "all", kernel, machine))
}

/// `user/bench/syscalls.c` (built at `program`) as `/bench/syscalls`,
/// running the records `names` lists (`all`, or names joined by commas).
pub fn syscalls_request(program: &Path, names: &str, kernel: GuestKernel, machine: MachineOptions) -> ExecRequest {
    ExecRequest {
        machine,
        kernel,
        files: vec![FileCopy { host: program.to_path_buf(), guest: Some("/bench/syscalls".to_string()) }],
        program: program.to_path_buf(),
        program_arguments: vec![names.to_string()],
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    }
}

/// Lamina's figures of the `syscalls` records `names` lists, in guest
/// instructions per operation (one CPU under icount, as [`measure`]).
pub fn lamina_instruction_counts(names: &str) -> Outcome<Figures> {
    let program = compile_c("user/bench/syscalls.c", "bench-syscalls")?;
    figures(&syscalls_request(&program, names, GuestKernel::Lamina, counted_machine()))
}

/// The machine of the instruction counts: one CPU (see the module comment).
fn counted_machine() -> MachineOptions {
    // 1 GiB: Lamina's tmpfs keeps file data on the kernel heap (1/16 of memory).
    let mut counted = MachineOptions::with(1, 1024);
    counted.counting = InstructionCounting::On;
    counted
}

/// CPU counts the `scaling` group boots with.
const SCALING_CPUS: [u32; 4] = [1, 2, 4, 8];
/// How long each operation runs in the `scaling` program (ms).
const SCALING_MILLISECONDS: &str = "1000";

/// The `scaling` group: `user/bench/scaling.c` (one pinned worker per CPU
/// repeating page faults, mmap/munmap, open/close, pipe round trips and
/// futex wakes) on 1, 2, 4 and 8 CPUs, wall time under MTTCG, as operations
/// per second; a record per operation and CPU count (`scale_pipe_4cpu`).
/// These machines have 2 host cores: past 2 CPUs the vCPUs share them, so
/// a flat line there is the host's, and the ratio to Linux is what compares.
/// One boot per kernel and count (no spread: read the ratios, not the digits).
pub fn run_scaling_group() -> Outcome<Vec<BenchmarkRecord>> {
    let program = compile_c("user/bench/scaling.c", "bench-scaling")?;
    let mut records = Vec::new();
    for cpus in SCALING_CPUS {
        let mut per_kernel: Vec<Figures> = Vec::new();
        for kernel in KERNELS {
            eprintln!("xtask: scaling: {kernel:?}, {cpus} CPU(s)");
            per_kernel.push(figures(&ExecRequest {
                machine: MachineOptions::with(cpus, 1024),
                kernel,
                files: Vec::new(),
                program: program.clone(),
                program_arguments: vec![SCALING_MILLISECONDS.to_string()],
                disk: None,
                mount_disk: false,
                disk_log: None,
                network: None,
            })?);
        }
        records.extend(scaling_records(&per_kernel, cpus));
    }
    Ok(records)
}

/// One record per operation of a `scaling` run on `cpus` CPUs; `per_kernel`
/// in [`KERNELS`] order.
fn scaling_records(per_kernel: &[Figures], cpus: u32) -> Vec<BenchmarkRecord> {
    let Some(first) = per_kernel.first() else { return Vec::new() };
    first
        .keys()
        .map(|name| {
            let value = |index: usize| per_kernel.get(index).and_then(|figures| figures.get(name)).copied();
            BenchmarkRecord {
                group: "scaling".to_string(),
                name: format!("{name}_{cpus}cpu"),
                unit: "ops/s".to_string(),
                lamina: value(0),
                linux: value(1),
                linux_no_mitigations: value(2),
                cpu_count: cpus,
                accelerator: "tcg".to_string(),
                runs: 1,
                spread: 0.0,
            }
        })
        .collect()
}

/// The `apps` group: `user/bench/apps.sh` (shell loop, tar + gzip of a
/// 16 MiB tree, sha256 of 64 MiB, a fan-out of processes over the CPUs),
/// timed per workload by the `syscalls` program's `timed` mode.
pub fn run_apps_group() -> Outcome<Vec<BenchmarkRecord>> {
    let program = compile_c("user/bench/syscalls.c", "bench-syscalls")?;
    let script = crate::workspace::root().join("user/bench/apps.sh");
    let request = |kernel, machine| ExecRequest {
        machine,
        kernel,
        files: vec![
            FileCopy { host: program.clone(), guest: Some("/bench/syscalls".to_string()) },
            FileCopy { host: script.clone(), guest: Some("/bench/apps.sh".to_string()) },
        ],
        program: "/bin/busybox".into(),
        program_arguments: vec!["sh".to_string(), "/bench/apps.sh".to_string()],
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    let mut records = measure("apps", &|kernel, machine| request(kernel, machine))?;
    // Wall time as throughput, as the issue asks: runs per second.
    for record in records.iter_mut().filter(|record| record.unit == "ns") {
        let throughput = |value: Option<f64>| value.map(|nanoseconds| 1e9 / nanoseconds);
        record.unit = "ops/s".to_string();
        record.lamina = throughput(record.lamina);
        record.linux = throughput(record.linux);
        record.linux_no_mitigations = throughput(record.linux_no_mitigations);
    }
    Ok(records)
}

/// Whether a group is measured in guest instructions too. Not for disk
/// I/O: under `-icount sleep=off` an idle CPU's clock jumps to its next
/// timer deadline while a request is in flight, so a wait for the disk
/// counts as the distance to whatever timer the kernel armed, not as the
/// disk's time.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    InstructionsAndWall,
    WallOnly,
}

/// Runs the group's program on every kernel, with instruction counting
/// (once; deterministic) and with wall time (`WALL_RUNS` boots).
pub fn measure(group: &str, request: &dyn Fn(GuestKernel, MachineOptions) -> ExecRequest) -> Outcome<Vec<BenchmarkRecord>> {
    measure_as(group, request, Counting::InstructionsAndWall)
}

/// [`measure`], choosing whether instructions are counted.
pub fn measure_as(group: &str, request: &dyn Fn(GuestKernel, MachineOptions) -> ExecRequest, counting: Counting) -> Outcome<Vec<BenchmarkRecord>> {
    let counted = counted_machine();
    let wall = MachineOptions::with(2, 1024);
    let mut records = Vec::new();
    let mut instructions: Vec<Figures> = Vec::new();
    for kernel in KERNELS.into_iter().filter(|_| counting == Counting::InstructionsAndWall) {
        eprintln!("xtask: {group}: {kernel:?}, instruction counts");
        instructions.push(figures(&request(kernel, counted))?);
    }
    for name in instructions.first().map(|figures| figures.keys().cloned().collect::<Vec<_>>()).unwrap_or_default().iter() {
        let value = |index: usize| instructions[index].get(name).copied();
        records.push(BenchmarkRecord {
            group: group.to_string(),
            name: name.clone(),
            unit: "instructions".to_string(),
            lamina: value(0),
            linux: value(1),
            linux_no_mitigations: value(2),
            cpu_count: 1,
            accelerator: "tcg-icount".to_string(),
            runs: 1,
            spread: 0.0,
        });
    }
    let mut samples: Vec<BTreeMap<String, Vec<f64>>> = vec![BTreeMap::new(); KERNELS.len()];
    for run in 0..WALL_RUNS {
        for (index, kernel) in KERNELS.into_iter().enumerate() {
            eprintln!("xtask: {group}: {kernel:?}, wall time, run {}", run + 1);
            for (name, value) in figures(&request(kernel, wall))? {
                samples[index].entry(name).or_default().push(value);
            }
        }
    }
    for name in samples[0].keys() {
        let summary = |index: usize| samples[index].get(name).and_then(|values| summarize(values));
        let spread = (0..KERNELS.len()).filter_map(summary).map(|summary| summary.spread).fold(0.0, f64::max);
        records.push(BenchmarkRecord {
            group: group.to_string(),
            name: format!("{name}_wall"),
            unit: "ns".to_string(),
            lamina: summary(0).map(|summary| summary.median),
            linux: summary(1).map(|summary| summary.median),
            linux_no_mitigations: summary(2).map(|summary| summary.median),
            cpu_count: 2,
            accelerator: "tcg".to_string(),
            runs: WALL_RUNS,
            spread,
        });
    }
    Ok(records)
}

/// Boots `request` and reads its `bench NAME VALUE` lines.
fn figures(request: &ExecRequest) -> Outcome<Figures> {
    let run = run_program(request, Input::Console, Output::Capture, Some(TIME_LIMIT))?;
    let output = String::from_utf8_lossy(&run.output);
    let figures: Figures = output
        .lines()
        .filter_map(|line| {
            let mut words = line.strip_prefix("bench ")?.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.parse().ok()?))
        })
        .collect();
    if run.exit_code != 0 || figures.is_empty() {
        return Err(Failure::failed(format!("the benchmark program failed on {:?} (exit {}):\n{output}", request.kernel, run.exit_code)));
    }
    Ok(figures)
}

/// How much faster Lamina is than Linux (mitigations off, else default):
/// Linux's time over Lamina's, or Lamina's throughput over Linux's.
/// Above 1 means Lamina is faster.
pub fn ratio(record: &BenchmarkRecord) -> Option<f64> {
    let linux = record.linux_no_mitigations.or(record.linux)?;
    let lamina = record.lamina?;
    Some(if record.unit == "ops/s" { lamina / linux } else { linux / lamina })
}

/// A bar chart of the ratios as SVG.
pub fn chart(records: &[BenchmarkRecord]) -> String {
    let rows: Vec<(&BenchmarkRecord, f64)> = records.iter().filter_map(|record| ratio(record).map(|ratio| (record, ratio))).collect();
    let (width, row_height, label_width) = (900.0, 22.0, 330.0);
    let height = 40.0 + row_height * rows.len() as f64;
    let maximum = rows.iter().map(|(_, ratio)| *ratio).fold(2.0, f64::max);
    let scale = (width - label_width - 60.0) / maximum;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"10\" y=\"18\" font-size=\"14\">Linux (mitigations=off) / Lamina: above 1 means Lamina is faster</text>\n"
    );
    let one = label_width + scale;
    svg.push_str(&format!("<line x1=\"{one}\" y1=\"25\" x2=\"{one}\" y2=\"{height}\" stroke=\"black\" stroke-dasharray=\"4\"/>\n"));
    for (index, (record, ratio)) in rows.iter().enumerate() {
        let y = 30.0 + row_height * index as f64;
        let color = if *ratio >= 1.0 { "#4a8" } else { "#d64" };
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{}\">{} ({})</text><rect x=\"{label_width}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{}\">{ratio:.2}</text>\n",
            y + 14.0,
            record.name,
            record.unit,
            ratio * scale,
            row_height - 6.0,
            label_width + ratio * scale + 4.0,
            y + 14.0
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_records_are_named_by_cpu_count_and_keep_each_kernel_apart() {
        let figures = |value: f64| Figures::from([("scale_pipe".to_string(), value), ("scale_futex_wake".to_string(), value * 2.0)]);
        let records = scaling_records(&[figures(100.0), figures(300.0), figures(400.0)], 4);
        let pipe = records.iter().find(|record| record.name == "scale_pipe_4cpu").expect("a pipe record");
        assert_eq!((pipe.lamina, pipe.linux, pipe.linux_no_mitigations), (Some(100.0), Some(300.0), Some(400.0)));
        assert_eq!((pipe.unit.as_str(), pipe.cpu_count, pipe.group.as_str()), ("ops/s", 4, "scaling"));
        assert_eq!(ratio(pipe), Some(0.25), "throughput: Lamina over Linux without mitigations");
        assert_eq!(records.len(), 2);
        assert!(scaling_records(&[], 1).is_empty());
    }
}
