//! Counts passed and failed checks, prints each as it ends and the summary line.

use crate::qemu_session::QemuSession;
use std::fmt::Display;

/// What a check reports: `Err` holds why it failed, with any log.
pub type CheckResult = Result<(), String>;

/// Checks run so far.
#[derive(Debug, Default)]
pub struct Tally {
    passed: u32,
    failed: u32,
    /// Each failed check's name and the first lines of why, for the recap.
    failures: Vec<(String, String)>,
}

/// How many lines of a failure's reason the closing recap repeats.
const RECAP_LINES: usize = 6;

impl Tally {
    /// Prints and counts the result of the check called `name`.
    pub fn record(&mut self, name: &str, result: CheckResult) {
        match result {
            Ok(()) => {
                self.passed += 1;
                println!("test {name} ... ok");
            }
            Err(why) => {
                self.failed += 1;
                println!("test {name} ... FAILED: {why}");
                let head: Vec<&str> = why.lines().take(RECAP_LINES).collect();
                self.failures.push((name.to_string(), head.join("\n")));
            }
        }
    }

    pub fn failed(&self) -> u32 {
        self.failed
    }

    /// The closing line, alone on its line: `N passed, M failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }

    /// The failed checks again, each with the start of why, so that the
    /// end of a long log (all a CI page may keep) names what failed.
    pub fn recap(&self) -> String {
        self.failures
            .iter()
            .map(|(name, why)| format!("failed: {name}: {why}\n"))
            .collect()
    }
}

/// `why`, followed by everything QEMU printed.
pub fn with_log(why: impl Display, session: &QemuSession) -> String {
    format!(
        "{why}\n----- serial log -----\n{}\n----- end of serial log -----",
        session.log()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_both_outcomes() {
        let mut tally = Tally::default();
        tally.record("a", Ok(()));
        tally.record("b", Err("expected x, saw y".into()));
        tally.record("c", Ok(()));
        assert_eq!(
            (tally.summary().as_str(), tally.failed()),
            ("2 passed, 1 failed", 1)
        );
    }

    #[test]
    fn the_recap_names_each_failure_with_the_start_of_why() {
        let mut tally = Tally::default();
        tally.record("a", Ok(()));
        let long: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        tally.record("b", Err(long));
        tally.record("c", Err("short".into()));
        let recap = tally.recap();
        assert!(recap.starts_with("failed: b: line 1\n"), "{recap}");
        assert!(recap.contains("line 6\n") && !recap.contains("line 7"), "{recap}");
        assert!(recap.ends_with("failed: c: short\n"), "{recap}");
    }
}
