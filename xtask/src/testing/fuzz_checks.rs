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
    /// The fuzzer's focus mask (`-m`; 0: every call).
    pub mask: u64,
    pub calls: u64,
    pub rounds: u32,
}

pub fn run_fuzz_checks(tally: &mut Tally) {
    for (cpus, seed) in [(2, 1), (4, 2)] {
        let run = FuzzRun { cpus, seed, mask: 0, calls: TIER_CALLS, rounds: 5 };
        let name = format!("fuzz: {} system calls on {cpus} CPUs (seed {seed}) leave Lamina running, leak-free and quiet", run.calls);
        tally.record(&name, fuzz_once(&run).map(|_| ()).map_err(|failure| failure.to_string()));
    }
}

/// Runs the fuzzer once; its output on success.
pub fn fuzz_once(run: &FuzzRun) -> Outcome<String> {
    let binary = crate::guest_programs::compile_c("user/fuzz/syscall_fuzz.c", "syscall_fuzz")?;
    let arguments = ["-s", &run.seed.to_string(), "-m", &run.mask.to_string(), "-n", &run.calls.to_string(), "-r", &run.rounds.to_string(), "-L"].map(str::to_string);
    let (output, exit_code) = run_on_console(binary, GUEST_PATH, run.cpus, &arguments, TIME_LIMIT)?;
    judge(&output, exit_code).map(|()| output)
}

/// Runs guest program `binary` (copied to `guest_path`) on Lamina with
/// `cpus` CPUs and 256 MiB; its console (the kernel's messages with the
/// program's lines) and exit code.
pub(super) fn run_on_console(binary: std::path::PathBuf, guest_path: &str, cpus: u32, arguments: &[String], time_limit: Duration) -> Outcome<(String, i32)> {
    let request = ExecRequest {
        machine: MachineOptions::with(cpus, 256),
        kernel: GuestKernel::Lamina,
        files: vec![FileCopy { host: binary, guest: Some(guest_path.to_string()) }],
        program: guest_path.into(),
        program_arguments: arguments.to_vec(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    let result = run_program(&request, Input::Console, Output::Capture, Some(time_limit))?;
    Ok((String::from_utf8_lossy(&result.output).into_owned(), result.exit_code))
}

/// Whether a run's console says it passed.
fn judge(output: &str, exit_code: i32) -> Outcome {
    judge_console(output, exit_code, "fuzz: result ok")
}

/// Whether a guest program's console run passed: it printed `done_line`,
/// exited 0, and the kernel printed none of [`ALARMS`].
pub(super) fn judge_console(output: &str, exit_code: i32, done_line: &str) -> Outcome {
    let failed = |why: &str| Err(Failure::failed(format!("{why}\n{}", tail(output, 60))));
    if let Some(alarm) = ALARMS.iter().find(|alarm| output.contains(*alarm)) {
        return failed(&format!("the kernel printed `{alarm}`"));
    }
    if !output.lines().any(|line| line.trim() == done_line) || exit_code != 0 {
        return failed(&format!("the program did not finish clean (exit code {exit_code})"));
    }
    Ok(())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `cargo xtask fuzz [--smp N] [--seed S] [--mask M] [--calls N] [--runs N]
/// [--no-coverage]`: runs the fuzzer until a run fails or `--runs` runs
/// passed (never, without it). With coverage (the default) QEMU's TCG
/// plugin (`xtask/tools/tbprof.c`) lists the kernel blocks each run
/// executed; a run that reached blocks no earlier run did is kept in the
/// corpus (`target/fuzz/corpus.txt`: seed, focus mask, blocks new), and
/// later runs try its neighbours (its mask with a new seed, its seed with
/// a new mask) half the time, fresh seeds and masks the other half.
pub fn fuzz_command(mut arguments: Arguments) -> Outcome {
    let start = random_seed();
    let mut template = FuzzRun { cpus: 2, seed: start, mask: 0, calls: TIER_CALLS, rounds: 5 };
    let (mut runs, mut coverage) = (u64::MAX, true);
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--smp" => template.cpus = number(&arguments.value(&flag)?, &flag)? as u32,
            Argument::Flag(flag) if flag == "--seed" => template.seed = number(&arguments.value(&flag)?, &flag)?,
            Argument::Flag(flag) if flag == "--mask" => template.mask = number(&arguments.value(&flag)?, &flag)?,
            Argument::Flag(flag) if flag == "--calls" => template.calls = number(&arguments.value(&flag)?, &flag)?,
            Argument::Flag(flag) if flag == "--runs" => runs = number(&arguments.value(&flag)?, &flag)?,
            Argument::Flag(flag) if flag == "--no-coverage" => coverage = false,
            other => return Err(unexpected("fuzz", other)),
        }
    }
    if template.cpus == 0 || template.calls == 0 {
        return Err(Failure::usage("fuzz: --smp and --calls must be above 0"));
    }
    crate::dependencies::ensure_dependencies()?;
    let blocks_file = crate::workspace::target_directory().join("fuzz/blocks.txt");
    if coverage {
        crate::profile::attach_plugin(&blocks_file)?;
    }
    let mut corpus = Corpus::default();
    let mut chooser = template.seed;
    for done in 0..runs {
        let run = if done == 0 { template } else { corpus.next_run(&template, &mut chooser) };
        let started = Instant::now();
        println!("fuzz: run {} on {} CPUs, seed {}, mask {}, {} calls", done + 1, run.cpus, run.seed, run.mask, run.calls);
        let _ = std::fs::remove_file(&blocks_file);
        if let Err(failure) = fuzz_once(&run) {
            println!("{failure}");
            return Err(Failure::failed(format!(
                "fuzz: seed {} mask {} failed; again: cargo xtask fuzz --smp {} --seed {} --mask {} --calls {} --runs 1",
                run.seed, run.mask, run.cpus, run.seed, run.mask, run.calls
            )));
        }
        let mut line = format!("fuzz: seed {} mask {} passed ({} s)", run.seed, run.mask, started.elapsed().as_secs());
        if coverage {
            // The plugin writes every half second: take its last word.
            std::thread::sleep(Duration::from_millis(700));
            let blocks = std::fs::read_to_string(&blocks_file).map(|text| kernel_blocks(&text)).unwrap_or_default();
            let new = corpus.record(&run, &blocks);
            line.push_str(&format!("; {} kernel blocks, {new} new; {} covered in all, corpus {}", blocks.len(), corpus.covered.len(), corpus.kept.len()));
            if new > 0 {
                corpus.save(&crate::workspace::target_directory().join("fuzz/corpus.txt"), &run, new);
            }
        }
        println!("{line}");
    }
    Ok(())
}

/// The kernel blocks a run executed (the plugin's `vaddr instructions
/// executions` lines at kernel addresses, executed at least once).
fn kernel_blocks(text: &str) -> std::collections::HashSet<u64> {
    crate::profile::block_lines(text)
        .filter(|&(address, _, executions)| address >= crate::profile::KERNEL_HALF && executions > 0)
        .map(|(address, _, _)| address)
        .collect()
}

/// The runs that reached new kernel blocks, and every block reached.
#[derive(Default)]
struct Corpus {
    kept: Vec<FuzzRun>,
    covered: std::collections::HashSet<u64>,
}

impl Corpus {
    /// Adds a run's blocks; how many were new.
    fn record(&mut self, run: &FuzzRun, blocks: &std::collections::HashSet<u64>) -> usize {
        let before = self.covered.len();
        self.covered.extend(blocks.iter().copied());
        let new = self.covered.len() - before;
        if new > 0 {
            self.kept.push(*run);
        }
        new
    }

    fn save(&self, path: &std::path::Path, run: &FuzzRun, new: usize) {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(file, "seed {} mask {} cpus {} calls {} new_blocks {new}", run.seed, run.mask, run.cpus, run.calls);
        }
    }

    /// The next run: half the time a neighbour of a kept run (its mask
    /// with a new seed, or its seed with a new mask), else fresh.
    fn next_run(&self, template: &FuzzRun, chooser: &mut u64) -> FuzzRun {
        let mut draw = || {
            *chooser = chooser.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            *chooser >> 17
        };
        let pick = draw();
        let fresh_mask = if draw() % 3 == 0 { 0 } else { draw() | 1 };
        match self.kept.len() {
            0 => FuzzRun { seed: draw() % 1_000_000_007 + 1, mask: fresh_mask, ..*template },
            kept if pick % 2 == 0 => {
                let parent = self.kept[(draw() % kept as u64) as usize];
                if draw() % 2 == 0 {
                    FuzzRun { seed: draw() % 1_000_000_007 + 1, ..parent }
                } else {
                    FuzzRun { mask: draw() | 1, ..parent }
                }
            }
            _ => FuzzRun { seed: draw() % 1_000_000_007 + 1, mask: fresh_mask, ..*template },
        }
    }
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
    fn only_executed_kernel_blocks_count() {
        let blocks = kernel_blocks("ffffffff80200000 12 3\nffffffff80200010 4 0\n401000 5 9\nbad line\n");
        assert_eq!(blocks.into_iter().collect::<Vec<_>>(), [0xffff_ffff_8020_0000]);
    }

    #[test]
    fn runs_that_reach_new_blocks_are_kept_and_tried_again() {
        let mut corpus = Corpus::default();
        let run = FuzzRun { cpus: 2, seed: 5, mask: 77, calls: 10, rounds: 1 };
        assert_eq!(corpus.record(&run, &[1u64, 2].into_iter().collect()), 2);
        assert_eq!(corpus.record(&FuzzRun { seed: 6, ..run }, &[2u64].into_iter().collect()), 0);
        assert_eq!(corpus.kept.len(), 1);
        let mut chooser = 1;
        let neighbours = (0..40).map(|_| corpus.next_run(&run, &mut chooser)).filter(|next| next.seed == 5 || next.mask == 77).count();
        assert!(neighbours > 5 && neighbours < 40, "about half the runs must be neighbours of the kept one: {neighbours}");
    }

    #[test]
    fn seeds_read_in_decimal_and_hex() {
        assert_eq!(number("42", "--seed").unwrap(), 42);
        assert_eq!(number("0x2a", "--seed").unwrap(), 42);
        assert!(number("x", "--seed").is_err());
    }
}
