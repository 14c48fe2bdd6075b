//! The system-call fuzzer (issue 23, `user/fuzz/syscall_fuzz.c`) against
//! Lamina: part of the user tier (and `--only fuzz`), and `cargo xtask
//! fuzz` (`make fuzz`), which runs until stopped.
//!
//! A run passes when the fuzzer says `fuzz: result ok` (no worker that
//! SIGKILL could not end, no process left, no memory lost over the rounds
//! after the first) and the kernel said nothing alarming on the console:
//! no panic, no fault report, no `lamina: BUG` (a user copy under a
//! spinlock, say) and no `lamina: warning` (a frame kept that should have
//! gone back). The seeds of the tier are fixed, so a failure replays; the
//! fuzzer prints every worker seed it needs to replay one worker alone.

use std::time::{Duration, Instant};

use super::tally::Tally;
use crate::arguments::{unexpected, Argument, Arguments};
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Failure, Outcome};
use crate::machine_options::MachineOptions;

/// Where the fuzzer sits in the guest.
const GUEST_PATH: &str = "/tests/bin/syscall_fuzz";
/// Calls per run in `make test`, as the issue asks.
const TIER_CALLS: u64 = 100_000;
/// Longest one run may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(900);
/// What the kernel must never print during a run.
const ALARMS: [&str; 5] = ["PANIC", "FATAL:", "lamina: BUG", "lamina: warning", "backtrace:"];

/// One run: CPUs, seed, calls, rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuzzRun {
    pub cpus: u32,
    pub seed: u64,
    pub calls: u64,
    pub rounds: u32,
}

pub fn run_fuzz_checks(tally: &mut Tally) {
    for (cpus, seed) in [(2, 1), (4, 2)] {
        let run = FuzzRun { cpus, seed, calls: TIER_CALLS, rounds: 5 };
        let name = format!("fuzz: {} system calls on {cpus} CPUs (seed {seed}) leave Lamina running, leak-free and quiet", run.calls);
        tally.record(&name, fuzz_once(&run).map(|_| ()).map_err(|failure| failure.to_string()));
    }
}

/// Runs the fuzzer once; its output on success.
pub fn fuzz_once(run: &FuzzRun) -> Outcome<String> {
    let binary = crate::guest_programs::compile_c("user/fuzz/syscall_fuzz.c", "syscall_fuzz")?;
    let request = ExecRequest {
        machine: MachineOptions::with(run.cpus, 256),
        kernel: GuestKernel::Lamina,
        files: vec![FileCopy { host: binary, guest: Some(GUEST_PATH.to_string()) }],
        program: GUEST_PATH.into(),
        program_arguments: ["-s", &run.seed.to_string(), "-n", &run.calls.to_string(), "-r", &run.rounds.to_string(), "-L"]
            .map(str::to_string)
            .to_vec(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    // The console itself: kernel messages come with the fuzzer's lines.
    let result = run_program(&request, Input::Console, Output::Capture, Some(TIME_LIMIT))?;
    let output = String::from_utf8_lossy(&result.output).into_owned();
    judge(&output, result.exit_code).map(|()| output)
}

/// Whether a run's console says it passed.
fn judge(output: &str, exit_code: i32) -> Outcome {
    let failed = |why: &str| Err(Failure::failed(format!("{why}\n{}", tail(output, 60))));
    if let Some(alarm) = ALARMS.iter().find(|alarm| output.contains(*alarm)) {
        return failed(&format!("the kernel printed `{alarm}`"));
    }
    if !output.lines().any(|line| line.trim() == "fuzz: result ok") || exit_code != 0 {
        return failed(&format!("the fuzzer did not finish clean (exit code {exit_code})"));
    }
    Ok(())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `cargo xtask fuzz [--smp N] [--seed S] [--calls N] [--runs N]`: runs
/// the fuzzer with seeds S, S+1, … (a random start without `--seed`)
/// until a run fails or `--runs` runs passed (never, without it).
pub fn fuzz_command(mut arguments: Arguments) -> Outcome {
    let mut run = FuzzRun { cpus: 2, seed: random_seed(), calls: TIER_CALLS, rounds: 5 };
    let mut runs = u64::MAX;
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--smp" => run.cpus = number(&arguments.value(&flag)?, &flag)? as u32,
            Argument::Flag(flag) if flag == "--seed" => run.seed = number(&arguments.value(&flag)?, &flag)?,
            Argument::Flag(flag) if flag == "--calls" => run.calls = number(&arguments.value(&flag)?, &flag)?,
            Argument::Flag(flag) if flag == "--runs" => runs = number(&arguments.value(&flag)?, &flag)?,
            other => return Err(unexpected("fuzz", other)),
        }
    }
    if run.cpus == 0 || run.calls == 0 {
        return Err(Failure::usage("fuzz: --smp and --calls must be above 0"));
    }
    crate::dependencies::ensure_dependencies()?;
    for done in 0..runs {
        let started = Instant::now();
        println!("fuzz: run {} on {} CPUs, seed {}, {} calls", done + 1, run.cpus, run.seed, run.calls);
        match fuzz_once(&run) {
            Ok(output) => {
                let rounds = output.lines().filter(|line| line.starts_with("fuzz: round")).count();
                println!("fuzz: seed {} passed ({rounds} rounds, {} s)", run.seed, started.elapsed().as_secs());
            }
            Err(failure) => {
                println!("{failure}");
                return Err(Failure::failed(format!(
                    "fuzz: seed {} failed; again: cargo xtask fuzz --smp {} --seed {} --calls {} --runs 1",
                    run.seed, run.cpus, run.seed, run.calls
                )));
            }
        }
        run.seed += 1;
    }
    Ok(())
}

fn number(text: &str, flag: &str) -> Outcome<u64> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| Failure::usage(format!("{flag} takes a number, not `{text}`")))
}

/// A seed from the clock (printed with each run, so it replays).
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |since| since.as_nanos() as u64);
    nanos % 1_000_000_007 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_run_passes() {
        assert!(judge("fuzz: round 0\nfuzz: result ok\n", 0).is_ok());
    }

    #[test]
    fn kernel_alarms_and_unfinished_runs_fail() {
        assert!(judge("fuzz: result ok\nlamina: BUG: a user copy\n", 0).is_err());
        assert!(judge("fuzz: result ok\nlamina: warning: frame 0x1000 kept\n", 0).is_err());
        assert!(judge("PANIC on CPU 1\n", 0).is_err());
        assert!(judge("fuzz: round 0\n", 0).is_err());
        assert!(judge("fuzz: result FAIL\n", 1).is_err());
        assert!(judge("fuzz: result ok\n", 1).is_err());
    }

    #[test]
    fn seeds_read_in_decimal_and_hex() {
        assert_eq!(number("42", "--seed").unwrap(), 42);
        assert_eq!(number("0x2a", "--seed").unwrap(), 42);
        assert!(number("x", "--seed").is_err());
    }
}
