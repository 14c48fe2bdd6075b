//! Runs a suite's tests on one kernel in as few boots as it can: one
//! generated BusyBox script runs every test in turn, each in an empty
//! working directory with standard input from `/dev/null`, under a time
//! limit (`timeout -s KILL`), kills whatever the test left running, and
//! prints markers the host reads. When the guest stops mid-test (a panic, a
//! hang that silences the console), that test is marked as having stopped
//! the kernel and a new boot resumes with the next one: one test's hang or
//! crash never ends the run.

use super::SuiteTest;
use crate::exec::{run_program_watched, ExecRequest, FileCopy, GuestEnd, GuestKernel, Input, Output, Watch};
use crate::failure::{Failure, Outcome};
use crate::machine_options::MachineOptions;
use std::collections::BTreeMap;
use std::time::Duration;

/// How one test ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Passed,
    /// Its own non-zero exit status (a suite gives these meanings).
    Failed(i32),
    /// Killed at the time limit (or by a SIGKILL of its own).
    TimedOut,
    /// Ended by this signal.
    Signalled(i32),
    /// The kernel stopped (panicked, reset, went silent) while it ran.
    StoppedTheKernel(String),
    /// Never started: the runs before it could not get past boot.
    NotRun,
}

/// What a suite needs to run.
pub struct SuitePlan<'a> {
    pub suite: &'a str,
    pub tests: &'a [SuiteTest],
    /// Copied into every boot (the test programs and their data).
    pub files: Vec<FileCopy>,
    pub machine: MachineOptions,
    /// Each test's limit, in guest time.
    pub test_time_limit: Duration,
    /// How long the console may stay silent before the kernel counts as
    /// hung (a test prints nothing while it runs, so longer than a test).
    pub silence_limit: Duration,
    pub output: TestOutput,
}

/// What of a test's output the host gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestOutput {
    /// A failing test's last lines (the test's output goes to a file).
    FailingTail,
    /// Everything it prints, pass or fail (for suites whose one test
    /// program reports many cases): its standard output as it prints it,
    /// its standard error once it has ended. Apart, another thread's
    /// warning on stderr cannot land inside a line of the report on
    /// stdout (CPython's regrtest printed an earlier case's "Unraisable
    /// exception" between a case's name and its result).
    Whole,
}

/// Every test's verdict, the tail of each failing test's output, the
/// tests' durations and how many boots it took.
#[derive(Debug, Default)]
pub struct SuiteRun {
    pub verdicts: BTreeMap<String, Verdict>,
    pub outputs: BTreeMap<String, String>,
    /// How long each finished test took, in guest time.
    pub durations: BTreeMap<String, Duration>,
    pub boots: usize,
}

/// The guest path of the generated runner.
const RUNNER: &str = "/suites/run-tests";
/// Bytes of a failing test's output kept.
const KEPT_OUTPUT: usize = 400;
/// Console lines kept when the kernel stops in a test.
const STOP_CONSOLE_LINES: usize = 40;

/// Runs every test of `plan` on `kernel`.
pub fn run_suite(plan: &SuitePlan, kernel: GuestKernel) -> Outcome<SuiteRun> {
    let script = runner_script(plan.tests, plan.test_time_limit, plan.output);
    let runner = crate::guest_files::write_image(&format!("{}-runner-{kernel:?}.sh", plan.suite), script.as_bytes())?;
    let mut files = plan.files.clone();
    files.push(FileCopy { host: runner, guest: Some(RUNNER.to_string()) });
    let mut run = SuiteRun::default();
    let mut next = 0;
    while next < plan.tests.len() {
        let request = ExecRequest {
            machine: plan.machine,
            kernel,
            files: files.clone(),
            program: crate::guest_files::BUSYBOX.into(),
            program_arguments: vec!["sh".to_string(), RUNNER.to_string(), next.to_string()],
            disk: None,
            mount_disk: false,
            disk_log: None,
            network: None,
        };
        run.boots += 1;
        let watch = Watch { time_limit: None, silence_limit: Some(plan.silence_limit) };
        let boot = run_program_watched(&request, Input::Console, Output::Capture, watch)?;
        let console = String::from_utf8_lossy(&boot.output);
        let reached = read_markers(&console, plan.tests, plan.output, &mut run);
        match (&boot.end, reached) {
            (GuestEnd::Exited(_), Progress::Finished) => break,
            (_, Progress::StoppedIn(index)) => {
                let why = match &boot.end {
                    GuestEnd::Stopped(why) => why.clone(),
                    GuestEnd::Exited(code) => format!("the runner ended with status {code} in the middle of the test"),
                };
                // What the console said last (a panic's message and
                // backtrace; a whole output already holds it).
                if plan.output == TestOutput::FailingTail {
                    let lines: Vec<&str> = console.lines().collect();
                    let tail = lines[lines.len().saturating_sub(STOP_CONSOLE_LINES)..].join("\n");
                    run.outputs.insert(plan.tests[index].name.clone(), tail);
                }
                run.verdicts.insert(plan.tests[index].name.clone(), Verdict::StoppedTheKernel(why));
                next = index + 1;
            }
            (_, Progress::Finished) => break,
            (end, Progress::NoTestStarted) => {
                for test in &plan.tests[next..] {
                    run.verdicts.insert(test.name.clone(), Verdict::NotRun);
                }
                return Err(Failure::failed(format!(
                    "{} on {kernel:?}: no test started after boot ({end:?}); console:\n{console}",
                    plan.suite
                )));
            }
        }
    }
    Ok(run)
}

/// Where a boot got to.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    /// Every test from the first it was given reported its end.
    Finished,
    /// This test (index) started and never reported its end.
    StoppedIn(usize),
    /// Not even the first test started.
    NoTestStarted,
}

/// Reads `@@@ test N` / `@@@ exit N STATUS` markers (with the test's
/// output between them) into `run`.
fn read_markers(console: &str, tests: &[SuiteTest], kept: TestOutput, run: &mut SuiteRun) -> Progress {
    let mut open: Option<(usize, String)> = None;
    let mut any_started = false;
    for line in console.lines() {
        let line = line.trim_end();
        if let Some(index) = line.strip_prefix("@@@ test ").and_then(|text| text.parse::<usize>().ok()) {
            any_started = true;
            open = Some((index, String::new()));
        } else if let Some(fields) = line.strip_prefix("@@@ exit ") {
            let mut fields = fields.split_whitespace();
            let (Some(Ok(index)), Some(Ok(status))) = (fields.next().map(str::parse::<usize>), fields.next().map(str::parse::<i32>)) else { continue };
            let Some(test) = tests.get(index) else { continue };
            if let Some(Ok(hundredths)) = fields.next().map(str::parse::<u64>) {
                run.durations.insert(test.name.clone(), Duration::from_millis(hundredths * 10));
            }
            let verdict = verdict_of(status);
            if let Some((_, output)) = open.take().filter(|(started, _)| *started == index) {
                if (verdict != Verdict::Passed || kept == TestOutput::Whole) && !output.is_empty() {
                    run.outputs.insert(test.name.clone(), output);
                }
            }
            run.verdicts.insert(test.name.clone(), verdict);
        } else if line == "@@@ done" {
            return Progress::Finished;
        } else if let Some((_, output)) = open.as_mut() {
            if output.len() < KEPT_OUTPUT || kept == TestOutput::Whole {
                output.push_str(line);
                output.push('\n');
            }
        }
    }
    match open {
        Some((index, output)) if index < tests.len() => {
            if kept == TestOutput::Whole {
                // What it printed before the kernel stopped still counts.
                run.outputs.insert(tests[index].name.clone(), output);
            }
            Progress::StoppedIn(index)
        }
        _ if any_started => Progress::Finished,
        _ => Progress::NoTestStarted,
    }
}

/// A shell exit status as a verdict: 0 passed, 137 killed (the time limit
/// sends SIGKILL), above 128 another signal, else the test's own status.
fn verdict_of(status: i32) -> Verdict {
    match status {
        0 => Verdict::Passed,
        137 => Verdict::TimedOut,
        signalled if signalled > 128 => Verdict::Signalled(signalled - 128),
        failed => Verdict::Failed(failed),
    }
}

/// The BusyBox script: `t INDEX COMMAND...` per test, skipping those
/// before the index given as its argument. After each test it kills every
/// process but itself and init (`kill -9 -1`): what a test forked must not
/// run on into the next. A failing test's last output lines are printed
/// ([`TestOutput::FailingTail`]), or all its output as it comes.
fn runner_script(tests: &[SuiteTest], limit: Duration, output: TestOutput) -> String {
    let (redirect, failing_tail) = match output {
        TestOutput::FailingTail => ("> /tmp/suite-output 2>&1", "    [ $status -ne 0 ] && tail -n 8 /tmp/suite-output\n"),
        TestOutput::Whole => ("2> /tmp/suite-stderr", "    cat /tmp/suite-stderr 2> /dev/null\n"),
    };
    let mut script = format!(
        "#!/bin/sh\n# Generated by xtask (outside/suite_runner.rs): runs suite tests from index $1 on.\n\
start=${{1:-0}}\n\
# 12.05 -> 1205 (the 1 in front keeps a leading 0 from reading as octal)\n\
hundredths() {{ echo $(( ${{1%.*}} * 100 + 1${{1#*.}} - 100 )); }}\n\
t() {{\n    [ \"$1\" -lt \"$start\" ] && return\n    index=$1; shift\n    echo \"@@@ test $index\"\n\
    rm -rf /tmp/suite-work; mkdir -p /tmp/suite-work; cd /tmp/suite-work\n\
    read before rest < /proc/uptime\n\
    /bin/busybox timeout -s KILL {} \"$@\" < /dev/null {redirect}\n    status=$?\n\
    read after rest < /proc/uptime\n    kill -9 -1 2> /dev/null\n{failing_tail}\
    echo \"@@@ exit $index $status $(( $(hundredths $after) - $(hundredths $before) ))\"\n    cd /\n}}\n",
        limit.as_secs().max(1)
    );
    for (index, test) in tests.iter().enumerate() {
        let quoted: Vec<String> = test.command.iter().map(|word| format!("'{}'", word.replace('\'', "'\\''"))).collect();
        script.push_str(&format!("t {index} {}\n", quoted.join(" ")));
    }
    script.push_str("echo '@@@ done'\n");
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tests(count: usize) -> Vec<SuiteTest> {
        (0..count).map(|index| SuiteTest { name: format!("t{index}"), command: vec![format!("/bin/t{index}")] }).collect()
    }

    #[test]
    fn markers_give_verdicts_and_keep_failing_output() {
        let suite = tests(3);
        let mut run = SuiteRun::default();
        let console = "boot\n@@@ test 0\n@@@ exit 0 0\n@@@ test 1\nassertion failed\n@@@ exit 1 1 250\n@@@ test 2\n@@@ exit 2 139\n@@@ done\n";
        assert_eq!(read_markers(console, &suite, TestOutput::FailingTail, &mut run), Progress::Finished);
        assert_eq!(run.verdicts["t0"], Verdict::Passed);
        assert_eq!(run.verdicts["t1"], Verdict::Failed(1));
        assert_eq!(run.verdicts["t2"], Verdict::Signalled(11));
        assert_eq!(run.outputs["t1"], "assertion failed\n");
        assert_eq!(run.durations["t1"], Duration::from_millis(2500));
        assert!(!run.outputs.contains_key("t0"));
    }

    #[test]
    fn a_test_without_its_end_is_where_the_boot_stopped() {
        let suite = tests(3);
        let mut run = SuiteRun::default();
        assert_eq!(read_markers("@@@ test 1\n@@@ exit 1 137\n@@@ test 2\npanic", &suite, TestOutput::FailingTail, &mut run), Progress::StoppedIn(2));
        assert_eq!(run.verdicts["t1"], Verdict::TimedOut);
        assert_eq!(read_markers("no markers at all", &suite, TestOutput::FailingTail, &mut SuiteRun::default()), Progress::NoTestStarted);
    }

    #[test]
    fn the_script_quotes_words_and_names_every_test_by_index() {
        let suite = vec![SuiteTest { name: "odd".into(), command: vec!["/bin/x".into(), "it's".into()] }];
        let script = runner_script(&suite, Duration::from_secs(20), TestOutput::FailingTail);
        assert!(script.contains("t 0 '/bin/x' 'it'\\''s'\n"), "{script}");
        assert!(script.contains("timeout -s KILL 20 ") && script.contains("tail -n 8"));
        let streaming = runner_script(&suite, Duration::from_secs(20), TestOutput::Whole);
        assert!(streaming.contains("< /dev/null 2> /tmp/suite-stderr\n") && streaming.contains("cat /tmp/suite-stderr") && !streaming.contains("tail -n 8"), "{streaming}");
        assert!(script.ends_with("echo '@@@ done'\n"));
    }
}
