//! The kernel command line's group options: `groups=N` (default 1) and
//! `placement=round-robin|least-loaded` (default round-robin). A bad value
//! is an error the boot reports before falling back to one group.

use crate::placement::Policy;

/// What the command line asks of the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupOptions {
    /// How many kernel instances.
    pub groups: usize,
    /// Where new processes go.
    pub policy: Policy,
}

impl Default for GroupOptions {
    fn default() -> Self {
        Self { groups: 1, policy: Policy::RoundRobin }
    }
}

/// A group option the command line got wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionError {
    /// `groups=` is not a whole number from 1 to 64.
    BadGroupCount,
    /// `placement=` names no policy.
    BadPolicy,
}

impl core::fmt::Display for OptionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OptionError::BadGroupCount => write!(f, "groups= takes a number from 1 to 64"),
            OptionError::BadPolicy => write!(f, "placement= takes round-robin or least-loaded"),
        }
    }
}

/// The group options of `command_line` (words separated by white space;
/// the last of a repeated option counts).
pub fn parse_options(command_line: &str) -> Result<GroupOptions, OptionError> {
    let mut options = GroupOptions::default();
    for word in command_line.split_whitespace() {
        if let Some(value) = word.strip_prefix("groups=") {
            options.groups = match value.parse::<usize>() {
                Ok(count) if (1..=crate::MAX_CPUS).contains(&count) => count,
                _ => return Err(OptionError::BadGroupCount),
            };
        } else if let Some(value) = word.strip_prefix("placement=") {
            options.policy = match value {
                "round-robin" => Policy::RoundRobin,
                "least-loaded" => Policy::LeastLoaded,
                _ => return Err(OptionError::BadPolicy),
            };
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_default() {
        assert_eq!(parse_options("console=ttyS0"), Ok(GroupOptions::default()));
        assert_eq!(parse_options("groups=4 placement=least-loaded"), Ok(GroupOptions { groups: 4, policy: Policy::LeastLoaded }));
        assert_eq!(parse_options("groups=2 groups=3"), Ok(GroupOptions { groups: 3, policy: Policy::RoundRobin }));
    }

    #[test]
    fn bad_values_are_errors() {
        for line in ["groups=0", "groups=65", "groups=x", "groups=", "groups=-1"] {
            assert_eq!(parse_options(line), Err(OptionError::BadGroupCount), "{line}");
        }
        assert_eq!(parse_options("placement=random"), Err(OptionError::BadPolicy));
    }
}
