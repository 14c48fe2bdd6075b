//! Allocation-failure injection (issue 23, `user/fuzz/allocation_failures.c`)
//! against Lamina: part of the user tier (and `--only fuzz`). The driver
//! records the allocation paths (frames, fallible heap sites) of a workload, then fails each path
//! once; the check passes when the driver says `inject: result ok` (every
//! run ended, no hang, the workload works again afterwards, free memory
//! back) and the kernel printed no alarm. The paths it covered are in its
//! output (`inject: N paths, ...`).

use std::time::Duration;

use super::fuzz_checks::{judge_console, run_on_console};
use super::tally::Tally;
use crate::failure::{Failure, Outcome};

/// Where the driver sits in the guest.
const GUEST_PATH: &str = "/tests/bin/allocation_failures";
/// Longest the whole walk may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(900);
/// Fewer recorded paths than this means the recording itself broke.
const MINIMUM_PATHS: u32 = 8;

pub fn run_allocation_failure_checks(tally: &mut Tally) {
    for cpus in [1, 2] {
        let name = format!("inject: each allocation path of a workload failed once on {cpus} CPU(s), Lamina keeps running and loses nothing");
        tally.record(&name, inject_once(cpus).map(|summary| println!("{summary}")).map_err(|failure| failure.to_string()));
    }
}

/// One walk over the paths; the driver's summary line on success.
fn inject_once(cpus: u32) -> Outcome<String> {
    let binary = crate::guest_programs::compile_c("user/fuzz/allocation_failures.c", "allocation_failures")?;
    let (output, exit_code) = run_on_console(binary, GUEST_PATH, cpus, &[], TIME_LIMIT)?;
    judge_console(&output, exit_code, "inject: result ok")?;
    let summary = summary_line(&output).ok_or_else(|| Failure::failed("the driver printed no summary"))?;
    let paths = paths_covered(summary).unwrap_or(0);
    if paths < MINIMUM_PATHS {
        return Err(Failure::failed(format!("only {paths} paths recorded (at least {MINIMUM_PATHS} expected): {summary}")));
    }
    Ok(summary.to_string())
}

fn summary_line(output: &str) -> Option<&str> {
    output.lines().map(str::trim).find(|line| line.starts_with("inject: ") && line.contains(" paths, "))
}

/// N of `inject: N paths, ...`.
fn paths_covered(summary: &str) -> Option<u32> {
    summary.strip_prefix("inject: ")?.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_gives_the_paths_covered() {
        let output = "inject: 14 allocation paths recorded\ninject: 14 paths, 14 failed once, 0 not reached again, 0 hangs; workload after them: exit 0\ninject: result ok\n";
        let summary = summary_line(output).unwrap();
        assert_eq!(paths_covered(summary), Some(14));
        assert_eq!(summary_line("inject: result ok\n"), None);
    }
}
