//! Why an xtask command stopped, and the exit status that reports it.

use std::fmt;

/// A command that could not do its job.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The command line is wrong; exit status 2.
    Usage(String),
    /// Something went wrong while working; exit status 1.
    Failed(String),
}

/// What every xtask function returns.
pub type Outcome<T = ()> = Result<T, Failure>;

impl Failure {
    /// A `Failed` built from anything printable.
    pub fn failed(message: impl Into<String>) -> Self {
        Failure::Failed(message.into())
    }

    /// A `Usage` built from anything printable.
    pub fn usage(message: impl Into<String>) -> Self {
        Failure::Usage(message.into())
    }

    /// The process exit status for this failure.
    pub fn exit_status(&self) -> i32 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Failed(_) => 1,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(message) => write!(formatter, "{message} (see `cargo xtask help`)"),
            Failure::Failed(message) => {
                formatter.write_str(message)
            }
        }
    }
}

/// Adds what was being done to an I/O error.
pub trait Context<T> {
    fn context(self, doing: impl FnOnce() -> String) -> Outcome<T>;
}

impl<T, E: fmt::Display> Context<T> for Result<T, E> {
    fn context(self, doing: impl FnOnce() -> String) -> Outcome<T> {
        self.map_err(|error| Failure::Failed(format!("{}: {error}", doing())))
    }
}
