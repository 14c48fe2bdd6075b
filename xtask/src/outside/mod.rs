//! Outside test suites: other people's conformance tests, fetched from
//! Debian (source or binary packages), built here, never committed, and run
//! unchanged on Lamina and on Linux in the same QEMU configuration.

pub mod debian_sources;
pub mod posix_suite;
pub mod programs;
pub mod python_suite;
pub mod suite_runner;

/// One test of a suite: its name (stable, as in the pass lists) and the
/// guest command that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteTest {
    pub name: String,
    pub command: Vec<String>,
}
