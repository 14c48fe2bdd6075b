//! `cargo xtask stress` (`make stress`): Debian's stress-ng over its CPU,
//! memory, process, pipe, signal, file-system, timer and network
//! stressors, one after another, on Lamina and on Debian's Linux in the
//! same QEMU configuration (both at once). Lamina passes when it neither
//! panicked nor hung, every stressor that succeeded on Linux succeeded on
//! it, no process was left over, and the free memory came back.
//!
//! stress-ng is Debian's binary package (dynamically linked against
//! glibc; its libraries go into the guest at their host paths), not a
//! static build of the source package: this mirror does not serve
//! stress-ng's source tarball (`apt-get source stress-ng` is a 404).
//! `dependencies.rs` installs the package.
//!
//! Never part of `make test`: its pass/fail needs minutes per run, and the
//! throughput it prints (bogo ops per second) is a figure, not a check.

use std::collections::BTreeMap;
use std::time::Duration;

use super::user_space::{runner_request, sections};
use crate::arguments::{unexpected, Argument, Arguments};
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Failure, Outcome};

const STRESS_NG: &str = "/usr/bin/stress-ng";
const RUNNER: &str = "/stress/run-all";

/// The stressors (stress-ng's names), each with its extra options, by
/// the class the issue names.
const STRESSORS: &[(&str, &str, &str)] = &[
    ("cpu", "cpu", ""),
    ("memory", "vm", "--vm-bytes 8M"),
    ("memory", "malloc", "--malloc-bytes 1M"),
    ("memory", "mmap", "--mmap-bytes 4M"),
    ("process", "fork", ""),
    ("process", "exec", ""),
    ("pipe", "pipe", ""),
    ("signal", "kill", ""),
    ("signal", "sigq", ""),
    ("signal", "sigsegv", ""),
    ("file system", "hdd", "--hdd-bytes 4M"),
    ("file system", "dir", ""),
    ("file system", "rename", ""),
    ("timer", "timer", "--timer-freq 1000"),
    ("timer", "clock", ""),
    ("network", "sock", ""),
    ("network", "udp", ""),
];

/// Memory lost over the whole run beyond which Lamina fails (KiB): room
/// for the caches a run legitimately keeps (page cache is counted apart).
const LOST_MEMORY_LIMIT_KIB: i64 = 4096;

pub fn stress_command(mut arguments: Arguments) -> Outcome {
    let (mut minutes, mut cpus) = (10u64, 4u32);
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--minutes" => minutes = arguments.number(&flag)?,
            Argument::Flag(flag) if flag == "--smp" => cpus = arguments.number(&flag)?,
            other => return Err(unexpected("stress", other)),
        }
    }
    if minutes == 0 || cpus == 0 {
        return Err(Failure::usage("stress: --minutes and --smp must be above 0"));
    }
    crate::dependencies::ensure_dependencies()?;
    let seconds_each = (minutes * 60 / STRESSORS.len() as u64).max(5);
    let request = request(seconds_each, cpus)?;
    crate::kernel_build::build_kernel(crate::kernel_build::ImageKind::Normal)?;
    crate::linux_kernel::vmlinux()?;
    // Each stressor's time, stress-ng's own start and end, boot: generous.
    let limit = Duration::from_secs(seconds_each * STRESSORS.len() as u64 * 2 + 600);
    println!("stress: {} stressors, {seconds_each} s each, {cpus} instances on {cpus} CPUs, Lamina and Linux at once", STRESSORS.len());
    let (lamina, linux) = std::thread::scope(|scope| {
        let lamina = scope.spawn(|| run_program(&ExecRequest { kernel: GuestKernel::Lamina, ..request.clone() }, Input::Console, Output::Capture, Some(limit)));
        let linux = run_program(&ExecRequest { kernel: GuestKernel::Linux, ..request.clone() }, Input::Console, Output::Capture, Some(limit));
        (lamina.join().unwrap_or_else(|_| Err(Failure::failed("the Lamina run panicked"))), linux)
    });
    let directory = crate::workspace::target_directory().join("stress");
    let _ = std::fs::create_dir_all(&directory);
    let keep = |name: &str, run: &Outcome<crate::exec::ProgramRun>| {
        let text = match run {
            Ok(run) => String::from_utf8_lossy(&run.output).into_owned(),
            Err(failure) => failure.to_string(),
        };
        let _ = std::fs::write(directory.join(name), text);
    };
    keep("lamina.txt", &lamina);
    keep("linux.txt", &linux);
    let lamina = lamina.map_err(|failure| Failure::failed(format!("stress: Lamina did not finish (panic or hang): {failure}")))?;
    let linux = linux?;
    let report = Report::of(&sections(&String::from_utf8_lossy(&lamina.output)), &sections(&String::from_utf8_lossy(&linux.output)));
    print!("{}", report.table(seconds_each, cpus));
    println!("stress: outputs in {}", directory.display());
    if report.problems.is_empty() {
        println!("stress: passed");
        Ok(())
    } else {
        Err(Failure::failed(format!("stress: {}", report.problems.join("; "))))
    }
}

/// One boot's work: stress-ng, and a script that runs each stressor
/// between `=== name` markers, with the memory and processes before and
/// after.
fn request(seconds_each: u64, cpus: u32) -> Outcome<ExecRequest> {
    let mut script = format!(
        "#!/bin/sh\n# Runs each stressor between markers (xtask/src/testing/stress.rs).\n\
         mkdir -p /sys /tmp/stress && mount -t sysfs sysfs /sys 2>/dev/null\ncd /tmp/stress\n\
         field() {{ grep -E \"^$1:\" /proc/meminfo | tr -s ' ' | cut -d' ' -f2; }}\n\
         memory() {{ echo \"free $(field MemFree)\"; echo \"cached $(field Cached)\"; echo \"processes $(ls -d /proc/[0-9]* | wc -l)\"; echo \"files $(find /tmp/stress | wc -l)\"; }}\n\
         # stress-ng's own text and libraries are loaded (and cached) once first.\n\
         {STRESS_NG} --version >/dev/null 2>&1\n\
         at_start=$(ls -d /proc/[0-9]* | wc -l)\n\
         echo '=== before'\nmemory\n",
    );
    for (_, name, options) in STRESSORS {
        script.push_str(&format!(
            "echo '=== {name}'\n{STRESS_NG} --{name} {cpus} {options} -t {seconds_each}s --metrics-brief --temp-path /tmp/stress 2>&1\necho \"--- exit $?\"\n"
        ));
    }
    // Orphans of a stressor's children may still be ending: up to 10 s for
    // the process count to come back, then the figures.
    script.push_str(
        "waited=0\n\
         while [ \"$(ls -d /proc/[0-9]* | wc -l)\" -gt \"$at_start\" ] && [ $waited -lt 10 ]; do sleep 1; waited=$((waited + 1)); done\n\
         echo '=== after'\nmemory\nps -o pid,ppid,stat,args\n",
    );
    let mut request = runner_request(vec![FileCopy { host: STRESS_NG.into(), guest: None }], "stress-run-all", &script, RUNNER)?;
    request.machine.cpu_count = cpus;
    request.machine.memory_mib = 512;
    Ok(request)
}

/// What one kernel's run of one stressor showed.
#[derive(Debug, Default, PartialEq)]
struct StressorRun {
    exit: Option<i32>,
    /// Bogo operations per second of real time, as stress-ng reports.
    rate: Option<f64>,
}

impl StressorRun {
    fn of(name: &str, text: Option<&String>) -> Self {
        let Some(text) = text else { return Self::default() };
        let exit = text.lines().find_map(|line| line.strip_prefix("--- exit ")).and_then(|code| code.trim().parse().ok());
        // "stress-ng: metrc: [2] cpu   1123   10.05   9.29   0.07   111.70   119.99"
        let rate = text.lines().filter(|line| line.contains("metrc:")).find_map(|line| {
            let fields: Vec<&str> = line.split("] ").nth(1)?.split_whitespace().collect();
            (fields.first() == Some(&name) && fields.len() >= 6).then(|| fields[5].parse().ok()).flatten()
        });
        StressorRun { exit, rate }
    }

    fn shown(&self) -> String {
        match (self.exit, self.rate) {
            (Some(0), Some(rate)) => format!("ok, {rate:.1}/s"),
            (Some(0), None) => "ok".into(),
            (Some(code), _) => format!("exit {code}"),
            (None, _) => "no result".into(),
        }
    }
}

/// Both kernels' runs, and what is wrong with Lamina's.
struct Report {
    rows: Vec<(&'static str, &'static str, StressorRun, StressorRun)>,
    /// Lamina's free plus cached memory (KiB), processes and files in
    /// /tmp/stress, before and after.
    memory: [(Option<i64>, Option<i64>); 3],
    problems: Vec<String>,
}

impl Report {
    fn of(lamina: &BTreeMap<String, String>, linux: &BTreeMap<String, String>) -> Self {
        let mut problems = Vec::new();
        let mut rows = Vec::new();
        for &(class, name, _) in STRESSORS {
            let (on_lamina, on_linux) = (StressorRun::of(name, lamina.get(name)), StressorRun::of(name, linux.get(name)));
            if on_linux.exit == Some(0) && on_lamina.exit != Some(0) {
                problems.push(format!("{name} ({class}) succeeded on Linux but not on Lamina ({})", on_lamina.shown()));
            }
            rows.push((class, name, on_lamina, on_linux));
        }
        let figure = |runs: &BTreeMap<String, String>, section: &str, key: &str| -> Option<i64> {
            runs.get(section)?.lines().find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
        };
        // Free plus cached: the page cache may keep what stress-ng read.
        let available = |section: &str| Some(figure(lamina, section, "free ")? + figure(lamina, section, "cached ")?);
        let memory = [
            (available("before"), available("after")),
            (figure(lamina, "before", "processes "), figure(lamina, "after", "processes ")),
            (figure(lamina, "before", "files "), figure(lamina, "after", "files ")),
        ];
        match memory[0] {
            (Some(before), Some(after)) if before - after > LOST_MEMORY_LIMIT_KIB => problems.push(format!("Lamina's free and cached memory fell by {} KiB over the run", before - after)),
            (Some(_), Some(_)) => {}
            _ => problems.push("Lamina's free and cached memory before or after was not printed".into()),
        }
        match memory[1] {
            (Some(before), Some(after)) if after > before => problems.push(format!("{} processes left over on Lamina", after - before)),
            (Some(_), Some(_)) => {}
            _ => problems.push("Lamina's process count before or after was not printed".into()),
        }
        match memory[2] {
            (Some(before), Some(after)) if after > before => problems.push(format!("{} files left in /tmp/stress on Lamina", after - before)),
            (Some(_), Some(_)) => {}
            _ => problems.push("Lamina's file count before or after was not printed".into()),
        }
        Report { rows, memory, problems }
    }

    /// A Markdown table of every stressor on both kernels, with the ratio
    /// of their rates, then memory and processes.
    fn table(&self, seconds_each: u64, cpus: u32) -> String {
        let mut text = format!("\n| class | stressor ({seconds_each} s, {cpus} instances) | Lamina | Linux | Lamina/Linux |\n|---|---|---|---|---|\n");
        for (class, name, lamina, linux) in &self.rows {
            let ratio = match (lamina.rate, linux.rate) {
                (Some(ours), Some(theirs)) if theirs > 0.0 => format!("{:.2}", ours / theirs),
                _ => "-".into(),
            };
            text.push_str(&format!("| {class} | {name} | {} | {} | {ratio} |\n", lamina.shown(), linux.shown()));
        }
        let shown = |value: Option<i64>| value.map_or("?".to_string(), |value| value.to_string());
        text.push_str(&format!(
            "\nLamina: free and cached memory {} KiB before, {} KiB after; processes {} before, {} after; files in /tmp/stress {} before, {} after\n",
            shown(self.memory[0].0),
            shown(self.memory[0].1),
            shown(self.memory[1].0),
            shown(self.memory[1].1),
            shown(self.memory[2].0),
            shown(self.memory[2].1)
        ));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> BTreeMap<String, String> {
        sections(text)
    }

    #[test]
    fn a_stressor_line_gives_its_rate_and_exit() {
        let text = "=== cpu\nstress-ng: metrc: [2] stressor bogo ops\nstress-ng: metrc: [2] cpu                1123     10.05      9.29      0.07       111.70         119.99\n--- exit 0\n";
        let found = runs(text);
        assert_eq!(StressorRun::of("cpu", found.get("cpu")), StressorRun { exit: Some(0), rate: Some(111.70) });
        assert_eq!(StressorRun::of("pipe", found.get("pipe")), StressorRun::default());
    }

    #[test]
    fn lamina_fails_where_linux_succeeded_and_when_memory_or_processes_stay_behind() {
        let mut linux = String::from("=== before\nfree 400000\ncached 1000\nprocesses 2\nfiles 1\n");
        let mut lamina = String::from("=== before\nfree 400000\ncached 1000\nprocesses 2\nfiles 1\n");
        for (_, name, _) in STRESSORS {
            linux.push_str(&format!("=== {name}\n--- exit 0\n"));
            let code = if *name == "udp" { 2 } else { 0 };
            lamina.push_str(&format!("=== {name}\n--- exit {code}\n"));
        }
        linux.push_str("=== after\nfree 399000\ncached 1000\nprocesses 2\nfiles 1\n");
        lamina.push_str("=== after\nfree 390000\ncached 1000\nprocesses 3\nfiles 2\n");
        let report = Report::of(&runs(&lamina), &runs(&linux));
        assert_eq!(report.problems.len(), 4, "{:?}", report.problems);
        assert!(report.problems[0].starts_with("udp (network)"));
        assert!(report.problems[1].contains("fell by 10000 KiB"));
        assert!(report.problems[2].contains("1 processes left over"));
        assert!(report.problems[3].contains("1 files left"));
        let clean = lamina.replace("exit 2", "exit 0").replace("free 390000\ncached 1000\nprocesses 3\nfiles 2", "free 399500\ncached 1000\nprocesses 2\nfiles 1");
        assert!(Report::of(&runs(&clean), &runs(&linux)).problems.is_empty());
    }
}
