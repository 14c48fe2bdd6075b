//! Tier 5: outside test suites, each run unchanged on Lamina and on Linux
//! and compared per test. The contract is a committed list per suite
//! (`user/suites/<suite>-pass.txt`) of the tests that pass on both: the
//! tier fails when one of them does not pass on Lamina, or when any test
//! stops the kernel (a panic, a hang). Tests that take seconds on Linux
//! (`user/suites/<suite>-slow.txt`) run only with `cargo xtask suites --all`,
//! to keep `make test` short. `cargo xtask suites --write-lists` rewrites
//! both lists from a run. Tests in `user/suites/<suite>-unstable.txt` (by
//! hand, with reasons) never enter the pass list. Counts go to stdout and a per-test report to
//! `target/outside/<suite>-report.txt`.

use super::tally::{CheckResult, Tally};
use crate::arguments::{unexpected, Argument, Arguments};
use crate::exec::{FileCopy, GuestKernel};
use crate::failure::{Context, Failure, Outcome};
use crate::machine_options::MachineOptions;
use crate::outside::posix_suite::{build_posix_suite, GUEST_DIRECTORY};
use crate::outside::suite_runner::{run_suite, SuitePlan, SuiteRun, TestOutput, Verdict};
use crate::outside::SuiteTest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// What `cargo xtask suites` was asked for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SuiteOptions {
    /// Rewrite the pass and slow lists from this run.
    pub write_lists: bool,
    /// Run the slow tests too.
    pub everything: bool,
    /// Only tests whose name contains one of these.
    pub only: Vec<String>,
    /// Only this suite (`posix`, `python`); `None`: every suite.
    pub suite: Option<String>,
}

/// The suites there are, in the order the tier runs them.
pub const SUITES: [&str; 3] = ["posix", "python", "programs"];

/// A test that takes at least this long on Linux is slow.
const SLOW: Duration = Duration::from_secs(3);
/// Each test's time limit: longer than any test that is not slow takes,
/// and longer than the slow ones take on Linux, with `--all`.
const TEST_TIME_LIMIT: Duration = Duration::from_secs(10);
const SLOW_TEST_TIME_LIMIT: Duration = Duration::from_secs(40);
/// Silence after which the kernel counts as hung (a test prints nothing
/// while it runs; the limit above ends it well before this).
const SILENCE_LIMIT: Duration = Duration::from_secs(120);

/// `cargo xtask suites [--suite NAME] [--write-lists] [--all] [--tests PART[,PART…]]`.
pub fn suites_command(mut arguments: Arguments) -> Outcome {
    let mut options = SuiteOptions::default();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--write-lists" => options.write_lists = true,
            Argument::Flag(flag) if flag == "--all" => options.everything = true,
            Argument::Flag(flag) if flag == "--tests" => options.only = arguments.value(&flag)?.split(',').map(str::to_string).collect(),
            Argument::Flag(flag) if flag == "--suite" => {
                let suite = arguments.value(&flag)?;
                if !SUITES.contains(&suite.as_str()) {
                    return Err(Failure::usage(format!("--suite {suite}: the suites are {}", SUITES.join(", "))));
                }
                options.suite = Some(suite);
            }
            other => return Err(unexpected("suites", other)),
        }
    }
    crate::dependencies::ensure_dependencies()?;
    let mut tally = Tally::default();
    if options.write_lists && !options.only.is_empty() {
        return Err(Failure::usage("--write-lists needs the whole suite, not --tests"));
    }
    run_outside_suites(&mut tally, &options);
    println!("{}", tally.summary());
    match tally.failed() {
        0 => Ok(()),
        failed => Err(Failure::failed(format!("{failed} suite check(s) failed"))),
    }
}

/// The tier: every suite there is.
pub fn run_outside_suites(tally: &mut Tally, options: &SuiteOptions) {
    let wanted = |suite: &str| options.suite.as_deref().is_none_or(|only| only == suite);
    if wanted("posix") {
        if let Err(failure) = run_posix(tally, options) {
            tally.record("suites: posix: build and run", Err(failure.to_string()));
        }
    }
    if wanted("python") {
        if let Err(failure) = super::outside_python::run_python(tally, options) {
            tally.record("suites: python: fetch and run", Err(failure.to_string()));
        }
    }
    if wanted("programs") {
        if let Err(failure) = super::outside_programs::run_programs(tally) {
            tally.record("suites: programs: build and run", Err(failure.to_string()));
        }
    }
}

/// Runs `plan` on Lamina and on Linux at once: each boot is one QEMU, and
/// a suite is mostly waiting (sleeps, time limits), so this halves the
/// tier's time. What both runs build is built first, once.
pub(super) fn run_on_both(plan: &SuitePlan) -> Outcome<(SuiteRun, SuiteRun)> {
    crate::guest_programs::init_program()?;
    crate::kernel_build::build_kernel(crate::kernel_build::ImageKind::Normal)?;
    crate::linux_kernel::vmlinux()?;
    let (lamina, linux) = std::thread::scope(|scope| {
        let lamina = scope.spawn(|| run_suite(plan, GuestKernel::Lamina));
        let linux = run_suite(plan, GuestKernel::Linux);
        (lamina.join().unwrap_or_else(|_| Err(Failure::failed("the Lamina run panicked"))), linux)
    });
    Ok((lamina?, linux?))
}

fn run_posix(tally: &mut Tally, options: &SuiteOptions) -> Outcome {
    let built = build_posix_suite()?;
    let lists = SuiteLists::read("posix")?;
    let chosen = |test: &&SuiteTest| options.only.is_empty() || options.only.iter().any(|part| test.name.contains(part.as_str()));
    let tests: Vec<SuiteTest> = built.tests.iter().filter(|test| options.everything || !lists.slow.contains_key(&test.name)).filter(chosen).cloned().collect();
    if tests.is_empty() {
        return Ok(());
    }
    let plan = SuitePlan {
        suite: "posix",
        tests: &tests,
        files: vec![FileCopy { host: built.binaries.clone(), guest: Some(GUEST_DIRECTORY.to_string()) }],
        machine: MachineOptions { memory_mib: 512, ..MachineOptions::default() },
        test_time_limit: if options.everything { SLOW_TEST_TIME_LIMIT } else { TEST_TIME_LIMIT },
        silence_limit: SILENCE_LIMIT,
        output: TestOutput::FailingTail,
    };
    println!("xtask: posix: running {} tests on Lamina and on Linux ({} slow ones {})", tests.len(), lists.slow.len(), if options.everything { "included" } else { "left to --all" });
    let (lamina, linux) = run_on_both(&plan)?;
    let comparison = Comparison::new(&tests, &lamina, &linux);
    write_report("posix", &tests, &lamina, &linux)?;
    let built_text = format!("{} tests built ({} more do not build with musl)", built.tests.len(), built.unbuildable.len());
    println!("{}", comparison.counts_text("posix", &built_text, posix_cause));
    if options.write_lists {
        lists.write("posix", &comparison, &linux, true)?;
    }
    let built_names: BTreeSet<&str> = built.tests.iter().map(|test| test.name.as_str()).collect();
    tally.record(&format!("suites: posix: the {} listed tests pass on Lamina", lists.pass.len()), lists.check_listed(&built_names, &tests, &lamina, generic_cause));
    tally.record("suites: posix: no test stopped Lamina", no_stops(&lamina));
    Ok(())
}

/// The Open POSIX Test Suite's exit statuses (`include/posixtest.h`).
fn posix_cause(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Failed(1) => "FAIL".to_string(),
        Verdict::Failed(2) => "UNRESOLVED".to_string(),
        Verdict::Failed(4) => "UNSUPPORTED".to_string(),
        Verdict::Failed(5) => "UNTESTED".to_string(),
        other => generic_cause(other),
    }
}

pub(super) fn generic_cause(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Passed => "passed".to_string(),
        Verdict::Failed(status) => format!("exit {status}"),
        Verdict::TimedOut => "timed out".to_string(),
        Verdict::Signalled(signal) => format!("signal {signal}"),
        Verdict::StoppedTheKernel(_) => "stopped the kernel".to_string(),
        Verdict::NotRun => "not run".to_string(),
    }
}

/// Per-test results of both kernels side by side.
pub(super) struct Comparison<'a> {
    linux_passed: Vec<&'a str>,
    lamina_passed: Vec<&'a str>,
    both: Vec<&'a str>,
    /// Passed on Linux, not on Lamina: (name, Lamina's verdict).
    lamina_only_failures: Vec<(&'a str, Verdict)>,
}

impl<'a> Comparison<'a> {
    pub(super) fn new(tests: &'a [SuiteTest], lamina: &SuiteRun, linux: &SuiteRun) -> Self {
        let passed = |run: &SuiteRun, name: &str| run.verdicts.get(name) == Some(&Verdict::Passed);
        let mut comparison = Comparison { linux_passed: Vec::new(), lamina_passed: Vec::new(), both: Vec::new(), lamina_only_failures: Vec::new() };
        for name in tests.iter().map(|test| test.name.as_str()) {
            let (on_lamina, on_linux) = (passed(lamina, name), passed(linux, name));
            if on_linux {
                comparison.linux_passed.push(name);
            }
            if on_lamina {
                comparison.lamina_passed.push(name);
            }
            match (on_lamina, on_linux) {
                (true, true) => comparison.both.push(name),
                (false, true) => comparison.lamina_only_failures.push((name, lamina.verdicts.get(name).cloned().unwrap_or(Verdict::NotRun))),
                _ => {}
            }
        }
        comparison
    }

    /// The counts the issue asks for: Linux pass, Lamina pass, both, and
    /// Lamina-only failures by cause and by interface (directory).
    pub(super) fn counts_text(&self, suite: &str, built: &str, cause: fn(&Verdict) -> String) -> String {
        let share = |part: usize, whole: usize| if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 };
        let mut by_cause: BTreeMap<String, usize> = BTreeMap::new();
        let mut by_interface: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, verdict) in &self.lamina_only_failures {
            *by_cause.entry(cause(verdict)).or_default() += 1;
            let interface = name.rsplit_once('/').map_or(*name, |(directory, _)| directory.rsplit('/').next().unwrap_or(directory));
            *by_interface.entry(interface).or_default() += 1;
        }
        let mut interfaces: Vec<(&str, usize)> = by_interface.into_iter().collect();
        interfaces.sort_by(|left, right| right.1.cmp(&left.1).then(left.0.cmp(right.0)));
        let listed = |pairs: Vec<(String, usize)>| pairs.into_iter().map(|(name, count)| format!("{name} {count}")).collect::<Vec<_>>().join(", ");
        format!(
            "{suite}: {built}\n\
             {suite}: Linux passes {}, Lamina passes {}, both {} ({:.1} % of Linux's passes)\n\
             {suite}: Lamina-only failures ({}) by cause: {}\n\
             {suite}: Lamina-only failures by interface: {}",
            self.linux_passed.len(),
            self.lamina_passed.len(),
            self.both.len(),
            share(self.both.len(), self.linux_passed.len()),
            self.lamina_only_failures.len(),
            listed(by_cause.into_iter().collect()),
            listed(interfaces.into_iter().take(25).map(|(name, count)| (name.to_string(), count)).collect()),
        )
    }
}

/// A suite's committed lists.
pub(super) struct SuiteLists {
    /// Tests that pass on both kernels.
    pub(super) pass: BTreeSet<String>,
    /// Tests left out of `make test` for time: name -> seconds on Linux.
    slow: BTreeMap<String, f64>,
    /// Tests whose result on Lamina depends on thread timing until a
    /// missing feature lands (`<suite>-unstable.txt`, kept by hand, each
    /// with its reason): never in the pass list.
    unstable: BTreeSet<String>,
}

impl SuiteLists {
    fn path(suite: &str, kind: &str) -> PathBuf {
        crate::workspace::root().join("user/suites").join(format!("{suite}-{kind}.txt"))
    }

    pub(super) fn read(suite: &str) -> Outcome<Self> {
        let lines = |kind: &str| -> Outcome<Vec<String>> {
            let path = Self::path(suite, kind);
            match std::fs::read_to_string(&path) {
                Ok(text) => Ok(text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).map(str::to_string).collect()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(error) => Err(Failure::failed(format!("reading {}: {error}", path.display()))),
            }
        };
        let slow = lines("slow")?
            .into_iter()
            .map(|line| {
                let (name, seconds) = line.split_once(char::is_whitespace).unwrap_or((&line, "0"));
                (name.to_string(), seconds.trim().parse().unwrap_or(0.0))
            })
            .collect();
        let unstable = lines("unstable")?.into_iter().filter_map(|line| line.split_whitespace().next().map(str::to_string)).collect();
        let pass = lines("pass")?.into_iter().collect::<BTreeSet<String>>();
        Ok(SuiteLists { pass: &pass - &unstable, slow, unstable })
    }

    /// Rewrites both lists from this run: the pass list is what passed on
    /// both kernels (tests not run keep their entry), the slow list what
    /// took [`SLOW`] or more on Linux.
    pub(super) fn write(&self, suite: &str, comparison: &Comparison, linux: &SuiteRun, with_slow: bool) -> Outcome {
        let mut pass: BTreeSet<String> = self.pass.iter().filter(|name| !linux.verdicts.contains_key(*name)).cloned().collect();
        pass.extend(comparison.both.iter().map(|name| name.to_string()).filter(|name| !self.unstable.contains(name)));
        let mut slow = self.slow.clone();
        for (name, took) in &linux.durations {
            if *took >= SLOW {
                slow.insert(name.clone(), took.as_secs_f64());
            } else {
                slow.remove(name);
            }
        }
        let header = |what: &str| format!("# {what}\n# Written by `cargo xtask suites --write-lists --all`; the suite tier reads it.\n");
        let pass_text = header(&format!("Tests of the {suite} suite that pass on Lamina and on Linux: the suite tier fails when one stops passing on Lamina."))
            + &pass.iter().map(|name| format!("{name}\n")).collect::<String>();
        let slow_text = header(&format!("Tests of the {suite} suite that take {} s or more on Linux (seconds on Linux after each): only `--all` runs them.", SLOW.as_secs()))
            + &slow.iter().map(|(name, seconds)| format!("{name} {seconds:.1}\n")).collect::<String>();
        for (kind, text) in [("pass", pass_text), ("slow", slow_text)].into_iter().filter(|(kind, _)| with_slow || *kind == "pass") {
            let path = Self::path(suite, kind);
            std::fs::create_dir_all(path.parent().unwrap_or(&path)).context(|| "creating user/suites".to_string())?;
            std::fs::write(&path, text).context(|| format!("writing {}", path.display()))?;
            println!("xtask: wrote {}", path.display());
        }
        Ok(())
    }

    /// Every listed test that ran passed on Lamina, and every listed test
    /// still exists.
    /// `cause` says what a failing verdict means in the suite's words.
    pub(super) fn check_listed(&self, built: &BTreeSet<&str>, ran: &[SuiteTest], lamina: &SuiteRun, cause: fn(&Verdict) -> String) -> CheckResult {
        let ran: BTreeSet<&str> = ran.iter().map(|test| test.name.as_str()).collect();
        let mut problems = Vec::new();
        for name in &self.pass {
            if !built.contains(name.as_str()) {
                problems.push(format!("  {name}: listed but no longer built"));
            } else if ran.contains(name.as_str()) {
                match lamina.verdicts.get(name) {
                    Some(Verdict::Passed) => {}
                    verdict => problems.push(format!(
                        "  {name}: {}{}",
                        verdict.map_or("no verdict".to_string(), cause),
                        lamina.outputs.get(name).map_or(String::new(), |output| format!("\n    {}", output.trim_end().replace('\n', "\n    ")))
                    )),
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("{} listed test(s) do not pass on Lamina:\n{}", problems.len(), problems.join("\n")))
        }
    }
}

/// No test stopped the kernel.
pub(super) fn no_stops(lamina: &SuiteRun) -> CheckResult {
    let stops: Vec<String> = lamina
        .verdicts
        .iter()
        .filter_map(|(name, verdict)| match verdict {
            Verdict::StoppedTheKernel(why) => Some(format!("  {name}: {why}")),
            _ => None,
        })
        .collect();
    if stops.is_empty() {
        Ok(())
    } else {
        Err(format!("{} test(s) stopped Lamina:\n{}", stops.len(), stops.join("\n")))
    }
}

/// `target/outside/<suite>-report.txt`: per test, both verdicts, Linux's
/// and Lamina's time, and a failing test's output on Lamina.
pub(super) fn write_report(suite: &str, tests: &[SuiteTest], lamina: &SuiteRun, linux: &SuiteRun) -> Outcome {
    let mut text = format!("# {suite}: test, Linux verdict, Lamina verdict, seconds on Linux and on Lamina ({} and {} boots)\n", linux.boots, lamina.boots);
    let verdict = |run: &SuiteRun, name: &str| run.verdicts.get(name).map_or("none".to_string(), generic_cause).replace(' ', "-");
    let seconds = |run: &SuiteRun, name: &str| run.durations.get(name).map_or("-".to_string(), |took| format!("{:.2}", took.as_secs_f64()));
    for name in tests.iter().map(|test| test.name.as_str()) {
        text.push_str(&format!("{name} {} {} {} {}\n", verdict(linux, name), verdict(lamina, name), seconds(linux, name), seconds(lamina, name)));
        if let Some(output) = lamina.outputs.get(name) {
            text.push_str(&format!("    | {}\n", output.trim_end().replace('\n', "\n    | ")));
        }
    }
    let path = crate::workspace::target_directory().join("outside").join(format!("{suite}-report.txt"));
    std::fs::create_dir_all(path.parent().unwrap_or(&path)).context(|| "creating target/outside".to_string())?;
    std::fs::write(&path, text).context(|| format!("writing {}", path.display()))?;
    println!("xtask: {suite}: per-test report in {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(verdicts: &[(&str, Verdict)]) -> SuiteRun {
        SuiteRun { verdicts: verdicts.iter().map(|(name, verdict)| (name.to_string(), verdict.clone())).collect(), ..SuiteRun::default() }
    }

    fn suite(names: &[&str]) -> Vec<SuiteTest> {
        names.iter().map(|name| SuiteTest { name: name.to_string(), command: vec![] }).collect()
    }

    #[test]
    fn the_comparison_counts_lamina_only_failures_by_cause() {
        let tests = suite(&["a/x/1-1", "a/x/2-1", "a/y/1-1", "a/y/2-1"]);
        let lamina = run_of(&[("a/x/1-1", Verdict::Passed), ("a/x/2-1", Verdict::Failed(4)), ("a/y/1-1", Verdict::TimedOut), ("a/y/2-1", Verdict::Passed)]);
        let linux = run_of(&[("a/x/1-1", Verdict::Passed), ("a/x/2-1", Verdict::Passed), ("a/y/1-1", Verdict::Passed), ("a/y/2-1", Verdict::Failed(1))]);
        let comparison = Comparison::new(&tests, &lamina, &linux);
        assert_eq!(comparison.both, ["a/x/1-1"]);
        assert_eq!((comparison.linux_passed.len(), comparison.lamina_passed.len()), (3, 2));
        let text = comparison.counts_text("posix", "4 tests built", posix_cause);
        assert!(text.contains("Linux passes 3, Lamina passes 2, both 1 (33.3 %"), "{text}");
        assert!(text.contains("by cause: UNSUPPORTED 1, timed out 1"), "{text}");
        assert!(text.contains("by interface: x 1, y 1"), "{text}");
    }

    #[test]
    fn a_listed_test_that_fails_or_vanishes_fails_the_check() {
        let lists = SuiteLists { pass: ["t/1-1", "t/2-1", "t/gone"].map(String::from).into(), slow: BTreeMap::new(), unstable: BTreeSet::new() };
        let built: BTreeSet<&str> = ["t/1-1", "t/2-1"].into();
        let ran = suite(&["t/1-1", "t/2-1"]);
        let good = run_of(&[("t/1-1", Verdict::Passed), ("t/2-1", Verdict::Passed)]);
        let error = lists.check_listed(&built, &ran, &good, generic_cause).unwrap_err();
        assert!(error.contains("t/gone: listed but no longer built") && !error.contains("t/1-1"), "{error}");
        let lists = SuiteLists { pass: ["t/1-1", "t/2-1"].map(String::from).into(), slow: BTreeMap::new(), unstable: BTreeSet::new() };
        assert_eq!(lists.check_listed(&built, &ran, &good, generic_cause), Ok(()));
        let bad = run_of(&[("t/1-1", Verdict::Passed), ("t/2-1", Verdict::Signalled(11))]);
        assert!(lists.check_listed(&built, &ran, &bad, generic_cause).unwrap_err().contains("t/2-1: signal 11"));
        // A listed test left out (slow) is not held against Lamina.
        assert_eq!(lists.check_listed(&built, &suite(&["t/1-1"]), &run_of(&[("t/1-1", Verdict::Passed)]), generic_cause), Ok(()));
    }

    #[test]
    fn a_stopped_kernel_fails_the_stop_check() {
        assert_eq!(no_stops(&run_of(&[("a", Verdict::TimedOut)])), Ok(()));
        assert!(no_stops(&run_of(&[("a", Verdict::StoppedTheKernel("panic".into()))])).is_err());
    }
}
