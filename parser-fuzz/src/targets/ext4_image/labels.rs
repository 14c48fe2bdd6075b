//! Outcome labels: an error, or a count, as a short fixed text, so that a
//! target's outcomes stay few and comparable across runs. Must not put
//! exact numbers or free text taken from the input into a label.

use ext4::{Error, Problem};

use crate::kind_of;

/// The label of an error: its kind, and for a corruption the structure
/// and the check that failed (a fixed text, so labels stay few).
pub(super) fn error_label(error: &Error) -> String {
    match error {
        Error::Corrupted(corruption) => {
            let problem = match corruption.problem {
                Problem::Invalid(what) => what.to_string(),
                other => kind_of(&other),
            };
            format!("{} {problem}", kind_of(&corruption.structure))
        }
        Error::Unsupported(unsupported) => format!("Unsupported {}", kind_of(unsupported)),
        other => kind_of(other),
    }
}

/// A count as its power of two (0, 1, 2, 4, 8, …).
pub(super) fn bucket(count: usize) -> usize {
    count.checked_ilog2().map_or(0, |log| 1 << log)
}
