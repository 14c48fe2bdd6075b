//! The container layer's error values. Every refusal leaves every count as
//! it was; none of them is ever a panic.

use core::fmt;

/// Why a container operation was refused. A refused operation changed
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuotaError {
    /// The container (for `create_child`: the parent) cannot cover the
    /// pages asked for.
    Exhausted {
        /// Pages asked for (to charge, or as the child's quota).
        asked: u64,
        /// Pages the container had left at that moment.
        available: u64,
    },
    /// The id names no live container: never handed out, or its container
    /// was destroyed.
    NoSuchContainer,
    /// Only a container without live children may be destroyed.
    HasChildren,
    /// The root holds the machine's pages and has no parent to return them
    /// to.
    CannotDestroyRoot,
    /// More pages released than the container has charged.
    OverRelease {
        /// Pages asked to release.
        asked: u64,
        /// Pages the container had charged (for a destroyed one: still
        /// charged to it).
        charged: u64,
    },
    /// Every slot of the container table is in use.
    TooManyContainers,
    /// A quota above [`MAX_PAGES`](crate::MAX_PAGES) for the root.
    QuotaTooLarge {
        /// The quota asked for.
        asked: u64,
    },
    /// A table for no container, or for more than
    /// [`MAX_CAPACITY`](crate::MAX_CAPACITY).
    CapacityOutOfRange {
        /// The capacity asked for.
        asked: usize,
    },
    /// The heap could not hold the container table.
    OutOfKernelMemory,
}

impl fmt::Display for QuotaError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Exhausted { asked, available } => write!(
                formatter,
                "quota exhausted: asked for {asked} pages, {available} available"
            ),
            Self::NoSuchContainer => formatter.write_str("no such container"),
            Self::HasChildren => formatter.write_str("container still has live children"),
            Self::CannotDestroyRoot => {
                formatter.write_str("the root container cannot be destroyed")
            }
            Self::OverRelease { asked, charged } => write!(
                formatter,
                "released {asked} pages but only {charged} are charged"
            ),
            Self::TooManyContainers => formatter.write_str("container table full"),
            Self::QuotaTooLarge { asked } => write!(
                formatter,
                "quota of {asked} pages is above the maximum of {}",
                crate::MAX_PAGES
            ),
            Self::CapacityOutOfRange { asked } => write!(
                formatter,
                "container table for {asked} containers: must be 1 to {}",
                crate::MAX_CAPACITY
            ),
            Self::OutOfKernelMemory => {
                formatter.write_str("no kernel memory for the container table")
            }
        }
    }
}

impl core::error::Error for QuotaError {}
