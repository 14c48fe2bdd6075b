//! CPython's own regression tests (Debian `libpython3.11-testsuite`, the
//! version of the host's `python3.11`), run by Debian's dynamic
//! `/usr/bin/python3.11` with its standard library, unchanged: one
//! `python3 -m test -v MODULE` (regrtest) per module of
//! `user/suites/python-modules.txt`; its verbose output gives each test
//! case's verdict. The test package is byte-compiled on the host once
//! (the guest would compile it on every boot).
//!
//! This file prepares the suite and reads verdicts; it runs nothing in a
//! guest (`suite_runner.rs` does).

use super::debian_sources::{installed_version, unpacked_binary};
use super::SuiteTest;
use crate::exec::FileCopy;
use crate::failure::{Context, Failure, Outcome};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The interpreter the guest runs (Debian's, dynamic; its libraries go
/// into the initramfs with it).
pub const INTERPRETER: &str = "/usr/bin/python3.11";
/// The standard library, copied whole.
const STANDARD_LIBRARY: &str = "/usr/lib/python3.11";
/// The binary package with the tests, and the installed one it matches.
const TESTSUITE_PACKAGE: &str = "libpython3.11-testsuite";
const MATCHING_PACKAGE: &str = "libpython3.11-stdlib";

/// The prepared suite: what every boot gets, and one test per module.
pub struct PythonSuite {
    pub files: Vec<FileCopy>,
    pub modules: Vec<SuiteTest>,
}

/// Fetches and byte-compiles the test package; `modules`: the modules to
/// run (regrtest names such as `test_os`).
pub fn prepare_python_suite(modules: &[String]) -> Outcome<PythonSuite> {
    let version = installed_version(MATCHING_PACKAGE)?;
    let tree = unpacked_binary(TESTSUITE_PACKAGE, &version)?;
    let tests = tree.join("usr/lib/python3.11/test");
    if !tests.is_dir() {
        return Err(Failure::failed(format!("{TESTSUITE_PACKAGE} has no {}", tests.display())));
    }
    let compiled = tree.join(".lamina-compiled");
    if !compiled.is_file() {
        // Errors are the suite's own deliberately broken files (bad
        // syntax on purpose); compileall still compiles the rest.
        let _ = Command::new(INTERPRETER).args(["-m", "compileall", "-q", "-j", "0"]).arg(&tests).output().context(|| format!("byte-compiling {}", tests.display()))?;
        std::fs::write(&compiled, b"").context(|| format!("writing {}", compiled.display()))?;
    }
    for module in modules {
        // `test_asyncio.test_events`: a module of a test package.
        let path = module.replace('.', "/");
        if !tests.join(format!("{path}.py")).is_file() && !tests.join(&path).is_dir() {
            return Err(Failure::failed(format!("user/suites/python-modules.txt names {module}, which {TESTSUITE_PACKAGE} does not have")));
        }
    }
    Ok(PythonSuite {
        files: vec![
            FileCopy { host: PathBuf::from(INTERPRETER), guest: None },
            FileCopy { host: PathBuf::from(STANDARD_LIBRARY), guest: None },
            // Over the standard library's small `test` package (regrtest
            // and its support code): the whole suite.
            FileCopy { host: tests, guest: Some(format!("{STANDARD_LIBRARY}/test")) },
        ],
        modules: modules.iter().map(|module| SuiteTest { name: module.clone(), command: module_command(module) }).collect(),
    })
}

/// The guest command that runs one module's tests, verbosely.
fn module_command(module: &str) -> Vec<String> {
    [INTERPRETER, "-m", "test", "-v", module].map(str::to_string).to_vec()
}

/// What unittest's verbose output says of one test case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaseResult {
    Ok,
    ExpectedFailure,
    Fail,
    Error,
    UnexpectedSuccess,
    Skipped,
    /// Started, and the module ended before it printed a result.
    Unfinished,
}

impl CaseResult {
    fn parse(text: &str) -> Option<Self> {
        // regrtest's "Warning -- Unraisable exception" (a background
        // thread of an earlier case failing) can land right after the
        // result on the same line: the result is what comes before it.
        let text = text.split("Warning -- ").next().unwrap_or(text).trim();
        Some(match text {
            "ok" => CaseResult::Ok,
            "FAIL" => CaseResult::Fail,
            "ERROR" => CaseResult::Error,
            "expected failure" => CaseResult::ExpectedFailure,
            "unexpected success" => CaseResult::UnexpectedSuccess,
            _ if text.starts_with("skipped") => CaseResult::Skipped,
            _ => return None,
        })
    }
}

/// Each case's result in one module's verbose regrtest output, by name
/// `MODULE/CLASS/METHOD` (from unittest's id `test.MODULE.CLASS.METHOD`).
/// A case line is `METHOD (test.…) ... RESULT`; the result may come on a
/// later line when the case prints, or a line later when the case has a
/// docstring; a failing subtest (`  METHOD (test.…) (PARAMS) ... FAIL`)
/// fails its case; a case with no result is unfinished.
pub fn case_results(output: &str) -> BTreeMap<String, CaseResult> {
    let mut results: BTreeMap<String, CaseResult> = BTreeMap::new();
    let mut awaiting: Option<String> = None;
    for line in output.lines() {
        let line = line.trim_end_matches('\r');
        if let Some((name, subtest, rest)) = case_line(line) {
            let result = rest.split_once(" ... ").and_then(|(_, result)| CaseResult::parse(result));
            match (subtest, result) {
                // A subtest only reports failures; its case's own line
                // (earlier) waits on, and gets no `ok` of its own.
                (true, Some(result)) => {
                    results.insert(name.clone(), result);
                    awaiting = None;
                }
                (true, None) => {}
                (false, Some(result)) => {
                    results.insert(name, result);
                    awaiting = None;
                }
                (false, None) => {
                    results.insert(name.clone(), CaseResult::Unfinished);
                    awaiting = Some(name);
                }
            }
            continue;
        }
        let Some(name) = awaiting.as_ref() else { continue };
        let tail = line.rsplit_once(" ... ").map_or(line, |(_, result)| result);
        if let Some(result) = CaseResult::parse(tail) {
            results.insert(name.clone(), result);
            awaiting = None;
        }
    }
    results
}

/// What one case printed, for a failure report: its line and the lines
/// after it until the next case's (at most `EXCERPT_LINES`); None when the
/// output never names it.
pub fn case_excerpt(output: &str, name: &str) -> Option<String> {
    const EXCERPT_LINES: usize = 12;
    let lines: Vec<&str> = output.lines().map(|line| line.trim_end_matches('\r')).collect();
    let start = lines.iter().position(|line| case_line(line).is_some_and(|(case, subtest, _)| !subtest && case == name))?;
    let end = lines[start + 1..]
        .iter()
        .position(|line| case_line(line).is_some_and(|(case, subtest, _)| !subtest && case != name))
        .map_or(lines.len(), |offset| start + 1 + offset)
        .min(start + EXCERPT_LINES);
    Some(lines[start..end].join("\n"))
}

/// `METHOD (test.MODULE….CLASS.METHOD)[ (PARAMS)] ...`: the case's name,
/// whether it is a subtest line (indented), and the rest of the line.
fn case_line(line: &str) -> Option<(String, bool, &str)> {
    let subtest = line.starts_with("  ");
    let line = line.trim_start();
    let (method, rest) = line.split_once(" (test.")?;
    if method.is_empty() || !method.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let (id, rest) = rest.split_once(')')?;
    let (path, id_method) = id.rsplit_once('.')?;
    let (module, class) = path.rsplit_once('.')?;
    if id_method != method || class.is_empty() {
        return None;
    }
    Some((format!("{}/{class}/{method}", module.replace('.', "/")), subtest, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbose_lines_give_each_case_its_result() {
        let output = "\
== CPython 3.11.2 (main) [GCC 12.2.0]
test_access (test.test_os.FileTests.test_access) ... ok
test_big (test.test_os.FileTests.test_big) ... skipped 'requires 4 GiB'
test_chatty (test.test_os.FileTests.test_chatty) ... printed by the test
ok
test_doc (test.test_os.FileTests.test_doc)
A docstring's first line ... FAIL
test_params (test.test_os.FileTests.test_params) ... 
  test_params (test.test_os.FileTests.test_params) (n=2) ... ERROR
test_xfail (test.test_os.FileTests.test_xfail) ... expected failure
test_pkg (test.test_asyncio.test_events.Loop.test_pkg) ... unexpected success
test_hang (test.test_os.FileTests.test_hang) ... ";
        let results = case_results(output);
        assert_eq!(results["test_os/FileTests/test_access"], CaseResult::Ok);
        assert_eq!(results["test_os/FileTests/test_big"], CaseResult::Skipped);
        assert_eq!(results["test_os/FileTests/test_chatty"], CaseResult::Ok);
        assert_eq!(results["test_os/FileTests/test_doc"], CaseResult::Fail);
        assert_eq!(results["test_os/FileTests/test_params"], CaseResult::Error);
        assert_eq!(results["test_os/FileTests/test_xfail"], CaseResult::ExpectedFailure);
        assert_eq!(results["test_asyncio/test_events/Loop/test_pkg"], CaseResult::UnexpectedSuccess);
        assert_eq!(results["test_os/FileTests/test_hang"], CaseResult::Unfinished);
        assert_eq!(results.len(), 8);
    }

    /// Seen in test_socket: a failing case's thread printed regrtest's
    /// warning right after the next case's "ok".
    #[test]
    fn a_warning_appended_to_the_result_leaves_the_result() {
        let output = "testCMSG_SPACE (test.test_socket.CmsgMacroTests.testCMSG_SPACE) ... okWarning -- Unraisable exception\n\
Exception ignored in thread started by: <bound method>\n\
testFail (test.test_socket.A.testFail) ... FAILWarning -- Unraisable exception\n";
        let results = case_results(output);
        assert_eq!(results["test_socket/CmsgMacroTests/testCMSG_SPACE"], CaseResult::Ok);
        assert_eq!(results["test_socket/A/testFail"], CaseResult::Fail);
    }

    #[test]
    fn a_case_excerpt_runs_to_the_next_case() {
        let output = "test_a (test.test_os.A.test_a) ... \nprinted\n  test_a (test.test_os.A.test_a) (n=1) ... FAIL\ntest_b (test.test_os.A.test_b) ... ok\n";
        assert_eq!(case_excerpt(output, "test_os/A/test_a").as_deref(), Some("test_a (test.test_os.A.test_a) ... \nprinted\n  test_a (test.test_os.A.test_a) (n=1) ... FAIL"));
        assert_eq!(case_excerpt(output, "test_os/A/test_b").as_deref(), Some("test_b (test.test_os.A.test_b) ... ok"));
        assert_eq!(case_excerpt(output, "test_os/A/test_c"), None);
    }

    #[test]
    fn lines_that_only_look_like_cases_are_not_cases() {
        let results = case_results("ERROR: test_x (test.test_os.A.test_x)\nTraceback (most recent call last):\nsetUpClass (test.test_os.A) ... ERROR\n");
        assert!(results.is_empty(), "{results:?}");
    }
}
