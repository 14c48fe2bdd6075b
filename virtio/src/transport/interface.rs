//! The one interface both register layouts offer the driver: status,
//! features, queue setup, notification, the interrupt status and the
//! device configuration.
//!
//! Must never: let a driver reach a register through a device-reported
//! offset that was not checked against its block.

use super::{DeviceStatus, Features, TransportError};
use crate::queue::RingLayout;

/// Which register layout a transport drives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TransportKind {
    /// The legacy I/O BAR 0 (virtio 0.9.5): 32 feature bits, fixed queue
    /// sizes, one page number per queue, no `FEATURES_OK`.
    Legacy,
    /// The modern capabilities (virtio 1.x).
    Modern,
}

/// How to ring one queue's doorbell; made by
/// [`Transport::setup_queue`], whose checks it carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QueueNotifier {
    queue: u16,
    offset: u32,
}

impl QueueNotifier {
    pub(crate) fn new(queue: u16, offset: u32) -> Self {
        Self { queue, offset }
    }

    /// The queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// The doorbell's offset in its register block (checked to fit).
    pub fn offset(&self) -> u32 {
        self.offset
    }
}

/// The interrupt status register, read (and so cleared) once per INTx
/// interrupt (§4.1.4.5).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct InterruptStatus(u8);

impl InterruptStatus {
    const QUEUE: u8 = 0x1;
    const CONFIGURATION: u8 = 0x2;

    /// The status with these bits.
    pub const fn from_bits(bits: u8) -> Self {
        Self(bits)
    }

    /// Whether some queue has used buffers (or the interrupt was this
    /// device's at all: a shared line reads 0 for other devices).
    pub fn queue_interrupt(&self) -> bool {
        self.0 & Self::QUEUE != 0
    }

    /// Whether the device configuration changed.
    pub fn configuration_changed(&self) -> bool {
        self.0 & Self::CONFIGURATION != 0
    }
}

/// A virtio device's registers, whichever layout carries them.
pub trait Transport {
    /// Which layout this is.
    fn kind(&self) -> TransportKind;

    /// Reads the device status.
    fn status(&self) -> DeviceStatus;

    /// Writes the device status (0 resets the device).
    fn set_status(&mut self, status: DeviceStatus);

    /// Reads the features the device offers.
    fn device_features(&mut self) -> Features;

    /// Writes the features the driver accepts.
    fn set_driver_features(&mut self, features: Features);

    /// The largest ring the device takes for `queue` (legacy: the only
    /// size it takes).
    fn max_queue_size(&mut self, queue: u16) -> Result<u16, TransportError>;

    /// Gives the device the ring of `queue` and enables it; returns how to
    /// notify it. Between `FEATURES_OK` and `DRIVER_OK` only.
    fn setup_queue(&mut self, queue: u16, layout: &RingLayout) -> Result<QueueNotifier, TransportError>;

    /// Tells the device that `notifier`'s queue has new available buffers.
    fn notify(&self, notifier: QueueNotifier);

    /// Reads and clears the interrupt status.
    fn take_interrupt_status(&self) -> InterruptStatus;

    /// The device configuration's generation; legacy devices have none
    /// and always say 0.
    fn config_generation(&self) -> u8;

    /// Reads the device configuration byte at `offset`.
    fn read_config_u8(&self, offset: u32) -> Result<u8, TransportError>;

    /// Reads the 16-bit device configuration field at `offset`.
    fn read_config_u16(&self, offset: u32) -> Result<u16, TransportError>;

    /// Reads the 32-bit device configuration field at `offset`.
    fn read_config_u32(&self, offset: u32) -> Result<u32, TransportError>;
}
