//! The block layer's errors: requests refused before they reach the device
//! ([`BlockError`]) and how a finished request failed ([`RequestFailure`]).

use crate::queue::{AddError, DeviceError, Token};

/// Why a request was refused or a completion could not be matched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockError {
    /// A write to a read-only device.
    ReadOnly,
    /// The sectors run past the device's capacity (or past 2^64).
    PastCapacity,
    /// A data buffer's length is not a multiple of 512 bytes.
    NotWholeSectors,
    /// A read or write without data.
    NoData,
    /// More data buffers than `seg_max` allows (or than fit a chain).
    TooManySegments,
    /// A data buffer larger than `size_max` allows.
    SegmentTooLarge,
    /// A flush, but the device offered no `VIRTIO_BLK_F_FLUSH` (it has no
    /// write cache to flush).
    FlushNotNegotiated,
    /// A get-id buffer shorter than 20 bytes.
    IdBufferTooSmall,
    /// Every request slot is in use; retry after completions.
    Busy,
    /// The queue refused the chain.
    Queue(AddError),
    /// The device broke the queue protocol; reset it.
    Device(DeviceError),
    /// A completion for a token no request of this set is waiting on.
    UnknownToken {
        /// The token.
        token: Token,
    },
    /// The request area wraps around the address space.
    BadArea,
    /// The queue is not the one the requests were set up for.
    OtherQueue,
}

impl From<AddError> for BlockError {
    fn from(error: AddError) -> Self {
        BlockError::Queue(error)
    }
}

/// How a request the device finished went wrong.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestFailure {
    /// `VIRTIO_BLK_S_IOERR`: the device could not do it.
    IoError,
    /// `VIRTIO_BLK_S_UNSUPP`: the device does not do this request type.
    Unsupported,
    /// The status byte holds an undefined value (or was never written).
    UnknownStatus {
        /// The byte.
        status: u8,
    },
    /// The device says it wrote no bytes, so not even the status byte.
    StatusNotWritten,
}
