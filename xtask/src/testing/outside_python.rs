//! Tier 5, second suite: CPython's regression tests for the OS-facing
//! modules (`user/suites/python-modules.txt`), one regrtest run per module
//! on each kernel, compared per test case. The contract is
//! `user/suites/python-pass.txt`: cases that pass on both kernels; the
//! tier fails when one of them does not pass on Lamina, or when a module
//! stops the kernel. `python-unstable.txt` (by hand, with reasons) keeps
//! cases out of the pass list. Each module's whole output, on both
//! kernels, goes to `target/outside/python-output/`.

use super::outside_suites::{generic_cause, no_stops, run_on_both, Comparison, SuiteLists, SuiteOptions};
use super::tally::Tally;
use crate::failure::{Context, Failure, Outcome};
use crate::machine_options::MachineOptions;
use crate::outside::python_suite::{case_excerpt, case_results, prepare_python_suite, CaseResult};
use crate::outside::suite_runner::{SuitePlan, SuiteRun, TestOutput, Verdict};
use crate::outside::SuiteTest;
use std::collections::BTreeSet;
use std::time::Duration;

/// One module's limit, in guest time. The slowest, test_subprocess, takes
/// about 220 s on Lamina on an idle 2-core machine and 330 s on a loaded
/// one (its waits poll in 10 ms steps): the limit leaves room for a slow
/// CI machine rather than fail listed cases there.
const MODULE_TIME_LIMIT: Duration = Duration::from_secs(900);
/// A module prints as each case ends; a case that hangs is ended by the
/// module's limit, so silence past it means the kernel hung.
const SILENCE_LIMIT: Duration = Duration::from_secs(960);
/// The standard library and the tests travel in the initramfs (~110 MiB).
const MEMORY_MIB: u32 = 2048;

pub fn run_python(tally: &mut Tally, options: &SuiteOptions) -> Outcome {
    let modules: Vec<String> = chosen_modules(options)?;
    if modules.is_empty() {
        return Ok(());
    }
    let suite = prepare_python_suite(&modules)?;
    let lists = SuiteLists::read("python")?;
    let plan = SuitePlan {
        suite: "python",
        tests: &suite.modules,
        files: suite.files.clone(),
        machine: MachineOptions { memory_mib: MEMORY_MIB, ..MachineOptions::default() },
        test_time_limit: MODULE_TIME_LIMIT,
        silence_limit: SILENCE_LIMIT,
        output: TestOutput::Whole,
    };
    println!("xtask: python: running {} CPython test modules on Lamina and on Linux", modules.len());
    let (lamina_modules, linux_modules) = run_on_both(&plan)?;
    keep_outputs(&lamina_modules, &linux_modules)?;
    for module in &suite.modules {
        let seconds = |run: &SuiteRun| run.durations.get(&module.name).map_or("-".to_string(), |took| format!("{:.0} s", took.as_secs_f64()));
        println!("xtask: python: {} took {} on Linux, {} on Lamina", module.name, seconds(&linux_modules), seconds(&lamina_modules));
    }
    let (lamina, linux) = (case_run(&suite.modules, &lamina_modules), case_run(&suite.modules, &linux_modules));
    let cases: Vec<SuiteTest> = lamina
        .verdicts
        .keys()
        .chain(linux.verdicts.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|name| SuiteTest { name: name.clone(), command: Vec::new() })
        .collect();
    let comparison = Comparison::new(&cases, &lamina, &linux);
    super::outside_suites::write_report("python", &cases, &lamina, &linux)?;
    let module_text = format!("{} test cases in {} modules", cases.len(), modules.len());
    println!("{}", comparison.counts_text("python", &module_text, python_cause));
    if options.write_lists {
        lists.write("python", &comparison, &linux, false)?;
    }
    // A listed case of a module not run this time (`--tests`) is not
    // held against Lamina; one that a run module no longer reports is.
    // A module of a package (`test_asyncio.test_events`) names its cases
    // `test_asyncio/test_events/CLASS/METHOD`.
    let ran_prefixes: Vec<String> = modules.iter().map(|module| format!("{}/", module.replace('.', "/"))).collect();
    let ran: Vec<SuiteTest> = lists
        .pass
        .iter()
        .filter(|name| ran_prefixes.iter().any(|prefix| name.starts_with(prefix.as_str())))
        .map(|name| SuiteTest { name: name.clone(), command: Vec::new() })
        .collect();
    let known: BTreeSet<&str> = lists.pass.iter().map(String::as_str).collect();
    tally.record(&format!("suites: python: the {} listed test cases pass on Lamina", lists.pass.len()), lists.check_listed(&known, &ran, &lamina, python_cause));
    tally.record("suites: python: no test module stopped Lamina", no_stops(&lamina_modules));
    Ok(())
}

/// The modules of `user/suites/python-modules.txt` (those whose name
/// contains a `--tests` part, if given).
fn chosen_modules(options: &SuiteOptions) -> Outcome<Vec<String>> {
    let path = crate::workspace::root().join("user/suites/python-modules.txt");
    let text = std::fs::read_to_string(&path).context(|| format!("reading {}", path.display()))?;
    let modules: Vec<String> = text
        .lines()
        .filter_map(|line| line.split('#').next().map(str::trim))
        .filter(|module| !module.is_empty())
        .filter(|module| options.only.is_empty() || options.only.iter().any(|part| module.contains(part.as_str())))
        .map(str::to_string)
        .collect();
    if modules.is_empty() && options.only.is_empty() {
        return Err(Failure::failed(format!("{} names no module", path.display())));
    }
    Ok(modules)
}

/// Every case's verdict on one kernel, from its modules' outputs. A case
/// the module never finished takes the module's end (time limit, signal,
/// stopped kernel).
fn case_run(modules: &[SuiteTest], run: &SuiteRun) -> SuiteRun {
    let mut cases = SuiteRun { boots: run.boots, ..SuiteRun::default() };
    for module in modules {
        let output = run.outputs.get(&module.name).map_or("", String::as_str);
        let module_end = run.verdicts.get(&module.name).cloned().unwrap_or(Verdict::NotRun);
        for (name, result) in case_results(output) {
            let verdict = match result {
                CaseResult::Ok | CaseResult::ExpectedFailure => Verdict::Passed,
                CaseResult::Fail => Verdict::Failed(1),
                CaseResult::Error => Verdict::Failed(2),
                CaseResult::UnexpectedSuccess => Verdict::Failed(3),
                CaseResult::Skipped => Verdict::Failed(4),
                CaseResult::Unfinished => match &module_end {
                    Verdict::Passed | Verdict::Failed(_) => Verdict::Failed(5),
                    ended => ended.clone(),
                },
            };
            if verdict != Verdict::Passed {
                if let Some(excerpt) = case_excerpt(output, &name) {
                    cases.outputs.insert(name.clone(), excerpt);
                }
            }
            cases.verdicts.insert(name, verdict);
        }
    }
    cases
}

/// What a case's verdict means in unittest's words.
fn python_cause(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Failed(1) => "FAIL".to_string(),
        Verdict::Failed(2) => "ERROR".to_string(),
        Verdict::Failed(3) => "unexpected success".to_string(),
        Verdict::Failed(4) => "skipped".to_string(),
        Verdict::Failed(5) => "unfinished".to_string(),
        Verdict::NotRun => "not reported".to_string(),
        other => generic_cause(other),
    }
}

/// Each module's whole output on both kernels, for reading failures.
fn keep_outputs(lamina: &SuiteRun, linux: &SuiteRun) -> Outcome {
    let directory = crate::workspace::target_directory().join("outside").join("python-output");
    std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
    for (kernel, run) in [("lamina", lamina), ("linux", linux)] {
        for (module, output) in &run.outputs {
            let path = directory.join(format!("{module}.{kernel}.txt"));
            std::fs::write(&path, output).context(|| format!("writing {}", path.display()))?;
        }
    }
    println!("xtask: python: each module's output in {}", directory.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_cases_take_the_module_end() {
        let modules = vec![SuiteTest { name: "test_os".into(), command: Vec::new() }];
        let mut run = SuiteRun::default();
        run.outputs.insert("test_os".into(), "test_a (test.test_os.T.test_a) ... ok\ntest_b (test.test_os.T.test_b) ... ".into());
        run.verdicts.insert("test_os".into(), Verdict::TimedOut);
        let cases = case_run(&modules, &run);
        assert_eq!(cases.verdicts["test_os/T/test_a"], Verdict::Passed);
        assert_eq!(cases.verdicts["test_os/T/test_b"], Verdict::TimedOut);
        run.verdicts.insert("test_os".into(), Verdict::Failed(1));
        assert_eq!(case_run(&modules, &run).verdicts["test_os/T/test_b"], Verdict::Failed(5));
        assert_eq!(python_cause(&Verdict::Failed(5)), "unfinished");
    }
}
