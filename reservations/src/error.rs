//! Why a reservation was refused or misused.

use core::fmt;

/// A refused reservation changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservationError {
    /// The kernel's budget cannot cover the request now (ENOMEM, or wait
    /// where Linux would wait).
    KernelMemory {
        /// Pages asked for.
        asked: u64,
        /// Pages the budget had.
        available: u64,
    },
    /// The caller's container cannot cover the request (ENOMEM).
    Quota {
        /// Pages asked for.
        asked: u64,
    },
    /// The request tried to use more than it reserved: its bound is wrong.
    /// Nothing was drawn.
    Overdrawn {
        /// Pages reserved.
        reserved: u64,
        /// Pages the request would have used.
        wanted: u64,
    },
    /// A count that does not fit in 64 bits, or a give-back of more than
    /// was drawn.
    BadCount,
}

impl fmt::Display for ReservationError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::KernelMemory { asked, available } => {
                write!(formatter, "kernel memory: {asked} pages asked, {available} left to reserve")
            }
            Self::Quota { asked } => write!(formatter, "the container's quota cannot cover {asked} pages"),
            Self::Overdrawn { reserved, wanted } => {
                write!(formatter, "request used {wanted} pages but reserved only {reserved}: its bound is wrong")
            }
            Self::BadCount => formatter.write_str("page count out of range"),
        }
    }
}
