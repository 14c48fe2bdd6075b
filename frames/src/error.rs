//! The frame layer's error values.

use core::fmt;

/// Why a frame operation was refused. A refused operation changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameError {
    /// No free frame, or no free run of the requested length and alignment.
    OutOfMemory,
    /// The frame, or part of the run, lies outside the frames the allocator covers.
    OutOfRange,
    /// A frame to be freed is already free.
    NotAllocated,
    /// A range given to `add_free` holds a frame that is already free.
    AlreadyFree,
    /// A contiguous allocation or release of zero frames.
    ZeroCount,
    /// An alignment that is not a power of two (zero included).
    InvalidAlignment,
}

impl fmt::Display for FrameError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::OutOfMemory => "out of physical memory: no free frame or run fits the request",
            Self::OutOfRange => "frame outside the range the allocator covers",
            Self::NotAllocated => "frame freed but not allocated",
            Self::AlreadyFree => "range added as free holds a frame that is already free",
            Self::ZeroCount => "contiguous request for zero frames",
            Self::InvalidAlignment => "alignment is not a power of two",
        })
    }
}

impl core::error::Error for FrameError {}
