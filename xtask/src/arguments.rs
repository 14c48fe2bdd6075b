//! Hand-written command-line parsing: a cursor over one subcommand's arguments.
//!
//! Flags are long (`--smp 4` or `--smp=4`); `--` ends the flags and everything
//! after it is taken as it is.

use crate::failure::{Failure, Outcome};
use std::collections::VecDeque;
use std::str::FromStr;

/// One argument as the parser sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum Argument {
    /// `--name` (the value of `--name=value` waits for [`Arguments::value`]).
    Flag(String),
    /// A bare `--`.
    Separator,
    /// Anything else.
    Positional(String),
}

/// The arguments not yet consumed.
#[derive(Debug)]
pub struct Arguments {
    remaining: VecDeque<String>,
    /// The `value` of the last `--flag=value`, until it is taken.
    inline_value: Option<(String, String)>,
}

impl Arguments {
    pub fn new(arguments: impl IntoIterator<Item = String>) -> Self {
        Arguments {
            remaining: arguments.into_iter().collect(),
            inline_value: None,
        }
    }

    /// The next argument; fails if the previous flag was given a value it does not take.
    pub fn next_argument(&mut self) -> Outcome<Option<Argument>> {
        if let Some((flag, _)) = self.inline_value.take() {
            return Err(Failure::usage(format!("{flag} takes no value")));
        }
        let Some(text) = self.remaining.pop_front() else {
            return Ok(None);
        };
        Ok(Some(self.classify(text)))
    }

    fn classify(&mut self, text: String) -> Argument {
        if text == "--" {
            return Argument::Separator;
        }
        if !text.starts_with("--") {
            return Argument::Positional(text);
        }
        match text.split_once('=') {
            Some((flag, value)) => {
                self.inline_value = Some((flag.to_string(), value.to_string()));
                Argument::Flag(flag.to_string())
            }
            None => Argument::Flag(text),
        }
    }

    /// The value of `flag`: its `=value` or the next argument.
    pub fn value(&mut self, flag: &str) -> Outcome<String> {
        if let Some((_, value)) = self.inline_value.take() {
            return Ok(value);
        }
        self.remaining
            .pop_front()
            .ok_or_else(|| Failure::usage(format!("{flag} needs a value")))
    }

    /// The value of `flag` parsed as a number.
    pub fn number<T: FromStr>(&mut self, flag: &str) -> Outcome<T> {
        let text = self.value(flag)?;
        text.parse()
            .map_err(|_| Failure::usage(format!("{flag} wants a number, not `{text}`")))
    }

    /// Everything not consumed yet (used after `--`).
    pub fn rest(&mut self) -> Vec<String> {
        self.remaining.drain(..).collect()
    }
}

/// The error for an argument that the subcommand does not know.
pub fn unexpected(command: &str, argument: Argument) -> Failure {
    let shown = match argument {
        Argument::Flag(flag) => flag,
        Argument::Separator => "--".to_string(),
        Argument::Positional(text) => text,
    };
    Failure::usage(format!("`cargo xtask {command}` does not take `{shown}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(list: &[&str]) -> Arguments {
        Arguments::new(list.iter().map(|text| text.to_string()))
    }

    #[test]
    fn inline_and_separate_values_are_both_read() {
        let mut cursor = arguments(&["--smp=4", "--mem", "128"]);
        assert_eq!(
            cursor.next_argument(),
            Ok(Some(Argument::Flag("--smp".into())))
        );
        assert_eq!(cursor.number::<u32>("--smp"), Ok(4));
        assert_eq!(
            cursor.next_argument(),
            Ok(Some(Argument::Flag("--mem".into())))
        );
        assert_eq!(cursor.number::<u32>("--mem"), Ok(128));
        assert_eq!(cursor.next_argument(), Ok(None));
    }

    #[test]
    fn a_switch_given_a_value_is_refused() {
        let mut cursor = arguments(&["--icount=yes", "x"]);
        assert_eq!(
            cursor.next_argument(),
            Ok(Some(Argument::Flag("--icount".into())))
        );
        assert!(matches!(cursor.next_argument(), Err(Failure::Usage(_))));
    }

    #[test]
    fn a_missing_or_malformed_value_is_a_usage_error() {
        let mut cursor = arguments(&["--smp"]);
        cursor.next_argument().unwrap();
        assert!(matches!(
            cursor.number::<u32>("--smp"),
            Err(Failure::Usage(_))
        ));
        let mut cursor = arguments(&["--smp", "four"]);
        cursor.next_argument().unwrap();
        assert!(matches!(
            cursor.number::<u32>("--smp"),
            Err(Failure::Usage(_))
        ));
    }

    #[test]
    fn everything_after_the_separator_is_kept_as_is() {
        let mut cursor = arguments(&["--", "prog", "--smp", "--"]);
        assert_eq!(cursor.next_argument(), Ok(Some(Argument::Separator)));
        assert_eq!(cursor.rest(), ["prog", "--smp", "--"]);
    }
}
