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
}

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
}
