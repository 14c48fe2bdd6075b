//! Which in-kernel tests to run and how often, from the kernel command line:
//!
//! - `ktest.rounds=N` runs the selected tests N times in one boot (a stress
//!   run; it stops at the first round with a failure);
//! - `ktest.only=PATTERN[,PATTERN…]` runs only the tests whose name contains
//!   one of the patterns (`sync::`, `condvar`, …).
//!
//! Without either, every test runs once.

use alloc::string::String;
use alloc::vec::Vec;

/// What the command line asks of the test runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StressPlan {
    pub rounds: u64,
    /// Empty: every test.
    patterns: Vec<String>,
}

impl StressPlan {
    /// Reads the `ktest.` words of `command_line`; an unknown `ktest.` word
    /// or a bad number is an error.
    pub fn parse(command_line: &str) -> Result<Self, String> {
        let mut plan = StressPlan { rounds: 1, patterns: Vec::new() };
        for word in command_line.split_whitespace().filter(|word| word.starts_with("ktest.")) {
            match word.split_once('=') {
                Some(("ktest.rounds", count)) => {
                    plan.rounds = count.parse().ok().filter(|rounds| *rounds > 0).ok_or_else(|| alloc::format!("`{word}`: rounds must be a positive number"))?
                }
                Some(("ktest.only", patterns)) => plan.patterns = patterns.split(',').filter(|pattern| !pattern.is_empty()).map(String::from).collect(),
                _ => return Err(alloc::format!("unknown option `{word}` (ktest.rounds=N, ktest.only=PATTERN,…)")),
            }
        }
        Ok(plan)
    }

    /// Whether the test called `name` runs.
    pub fn selects(&self, name: &str) -> bool {
        self.patterns.is_empty() || self.patterns.iter().any(|pattern| name.contains(pattern.as_str()))
    }
}
