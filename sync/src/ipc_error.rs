//! Errors of the IPC channels.

use core::fmt;

use crate::MAX_MESSAGE_LENGTH;

/// Why an IPC operation failed. Nothing a caller passes makes it panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IpcError {
    /// The message is longer than [`MAX_MESSAGE_LENGTH`] bytes; nothing was
    /// sent.
    TooLong {
        /// The length asked for.
        length: usize,
    },
    /// No memory for a message buffer.
    OutOfMemory,
}

impl fmt::Display for IpcError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong { length } => write!(
                formatter,
                "message of {length} bytes is longer than {MAX_MESSAGE_LENGTH}"
            ),
            Self::OutOfMemory => formatter.write_str("no memory for a message buffer"),
        }
    }
}

/// `Ok` when a message of `length` bytes fits in a page.
pub(crate) fn check_length(length: usize) -> Result<(), IpcError> {
    if length > MAX_MESSAGE_LENGTH {
        return Err(IpcError::TooLong { length });
    }
    Ok(())
}
