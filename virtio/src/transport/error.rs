//! The transport's errors: registers or device answers it cannot use, and
//! why initialization failed.

use super::DeviceStatus;

/// Why a transport operation was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TransportError {
    /// A register block is shorter than its structure.
    RegionTooShort {
        /// Its length.
        length: u32,
        /// What the structure needs.
        needed: u32,
    },
    /// The device has no such queue (index past `num_queues`, or size 0).
    NoSuchQueue {
        /// The queue index.
        queue: u16,
    },
    /// The ring is bigger than the device allows for this queue.
    QueueTooLarge {
        /// The ring's size.
        size: u16,
        /// The device's maximum.
        maximum: u16,
    },
    /// A legacy device's queue size is fixed and the ring differs.
    QueueSizeMismatch {
        /// The ring's size.
        size: u16,
        /// The device's size.
        device: u16,
    },
    /// The queue is already set up.
    QueueAlreadyEnabled {
        /// The queue index.
        queue: u16,
    },
    /// A legacy device takes one page number: the ring must use the legacy
    /// layout.
    NeedsLegacyLayout,
    /// A legacy ring's page number does not fit the 32-bit register.
    RingAddressTooHigh,
    /// The queue's doorbell lies outside the notify structure.
    NotifyOutOfRange {
        /// The queue index.
        queue: u16,
    },
    /// A device-configuration access outside the device configuration.
    ConfigOutOfRange {
        /// The offset asked for.
        offset: u32,
        /// The access width.
        width: u32,
    },
    /// The device configuration kept changing while it was read.
    ConfigKeepsChanging,
}

/// Why [`initialize`](crate::transport::initialize) gave up (after setting
/// `FAILED`, except for a reset that never completed).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum InitError<E> {
    /// The status did not read 0 after a reset.
    ResetTimedOut,
    /// A modern device did not offer `VIRTIO_F_VERSION_1`.
    DeviceLacksVersion1,
    /// The device cleared `FEATURES_OK`: it refuses the feature subset.
    FeaturesRejected,
    /// The device asked for a reset during initialization.
    DeviceNeedsReset {
        /// The status it showed.
        status: DeviceStatus,
    },
    /// A register operation failed.
    Transport(TransportError),
    /// The caller's queue setup failed.
    Setup(E),
}

impl<E> From<TransportError> for InitError<E> {
    fn from(error: TransportError) -> Self {
        InitError::Transport(error)
    }
}
