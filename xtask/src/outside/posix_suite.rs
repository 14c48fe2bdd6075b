//! The Open POSIX Test Suite (Debian source package `posixtestsuite`):
//! every conformance test (`conformance/{interfaces,behavior}/**/N-M.c`,
//! not the header-only `definitions`, which test the C library) built
//! statically with `musl-gcc` as the suite's own Makefile builds it, in
//! parallel, rebuilt only when missing. A test that does not build with
//! musl is left out and counted.

use super::debian_sources::{unpacked_source, SourcePackage};
use super::SuiteTest;
use crate::failure::{Context, Failure, Outcome};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub const PACKAGE: SourcePackage = SourcePackage { name: "posixtestsuite", version: "1.5.2-8" };

/// The built suite.
pub struct BuiltSuite {
    /// Where the binaries are, under the names of [`SuiteTest::name`].
    pub binaries: PathBuf,
    pub tests: Vec<SuiteTest>,
    /// Tests whose source did not build with musl (name, first error line).
    pub unbuildable: Vec<(String, String)>,
}

/// Fetches, unpacks and builds the suite.
pub fn build_posix_suite() -> Outcome<BuiltSuite> {
    let tree = unpacked_source(PACKAGE)?;
    let binaries = crate::workspace::target_directory().join("outside").join("posixtestsuite-bin");
    let mut sources = Vec::new();
    for part in ["conformance/interfaces", "conformance/behavior"] {
        find_test_sources(&tree, &tree.join(part), &mut sources)?;
    }
    sources.sort();
    if sources.is_empty() {
        return Err(Failure::failed(format!("no tests found under {}", tree.display())));
    }
    println!("xtask: building {} Open POSIX tests with musl-gcc", sources.len());
    let next = Mutex::new(sources.iter());
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |count| count.get());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let Some(relative) = next.lock().unwrap().next() else { break };
                let result = build_one(&tree, relative, &binaries);
                results.lock().unwrap().push((relative.clone(), result));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|left, right| left.0.cmp(&right.0));
    let mut built = BuiltSuite { binaries: binaries.clone(), tests: Vec::new(), unbuildable: Vec::new() };
    for (relative, result) in results {
        let name = relative.trim_end_matches(".c").to_string();
        match result {
            Ok(()) => built.tests.push(SuiteTest { command: vec![format!("{GUEST_DIRECTORY}/{name}")], name }),
            Err(error) => built.unbuildable.push((name, error)),
        }
    }
    Ok(built)
}

/// Where the binaries go in the guest.
pub const GUEST_DIRECTORY: &str = "/suites/posix";

/// `N-M.c` files under `directory` (not `N-buildonly.c`), relative to `tree`.
fn find_test_sources(tree: &Path, directory: &Path, found: &mut Vec<String>) -> Outcome {
    let entries = std::fs::read_dir(directory).context(|| format!("listing {}", directory.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            find_test_sources(tree, &path, found)?;
        } else if is_test_source_name(&entry.file_name().to_string_lossy()) {
            found.push(path.strip_prefix(tree).unwrap_or(&path).display().to_string());
        }
    }
    Ok(())
}

/// `12-3.c`: two numbers and a dash, as the suite's `locate-test` picks.
fn is_test_source_name(name: &str) -> bool {
    let Some((first, second)) = name.strip_suffix(".c").and_then(|stem| stem.split_once('-')) else { return false };
    let number = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    number(first) && number(second)
}

/// Compiles one test with the suite's flags (its `LDFLAGS` file as Debian
/// patches it: `-D_GNU_SOURCE -lpthread -lrt`), unless already built.
fn build_one(tree: &Path, relative: &str, binaries: &Path) -> Result<(), String> {
    let binary = binaries.join(relative.trim_end_matches(".c"));
    if binary.is_file() {
        return Ok(());
    }
    if let Some(parent) = binary.parent() {
        std::fs::create_dir_all(parent).map_err(|error| format!("creating {}: {error}", parent.display()))?;
    }
    let output = Command::new("musl-gcc")
        .current_dir(tree)
        .args(["-static", "-O2", "-w", "-std=gnu99", "-D_POSIX_C_SOURCE=200112L", "-D_GNU_SOURCE", "-Iinclude", relative, "-o"])
        .arg(&binary)
        .args(["-lpthread", "-lrt", "-lm"])
        .output()
        .map_err(|error| format!("running musl-gcc: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    let errors = String::from_utf8_lossy(&output.stderr);
    Err(errors.lines().find(|line| line.contains("error")).unwrap_or("musl-gcc failed").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbered_sources_are_tests() {
        for name in ["1-1.c", "12-34.c"] {
            assert!(is_test_source_name(name), "{name}");
        }
        for name in ["1-buildonly.c", "1-1.sh", "helper.c", "1-.c", "-1.c", "1-1.c.orig", "a-1.c"] {
            assert!(!is_test_source_name(name), "{name}");
        }
    }
}
