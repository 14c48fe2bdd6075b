//! The legacy virtio PCI interface: registers in I/O BAR 0 (virtio 1.2
//! §4.1.4.10), used by transitional devices and old hypervisors.
//!
//! Must never: give a legacy device feature bits above 31 (it has only
//! one 32-bit register), or a ring that is not one contiguous legacy
//! layout of exactly the device's queue size.

use super::{
    DeviceStatus, Features, InterruptStatus, QueueNotifier, Region, Registers, Transport, TransportError, TransportKind,
};
use crate::pci::MsixState;
use crate::queue::{RingLayout, RingShape, LEGACY_ALIGNMENT};

const DEVICE_FEATURES: u32 = 0x00;
const DRIVER_FEATURES: u32 = 0x04;
const QUEUE_PAGE_NUMBER: u32 = 0x08;
const QUEUE_SIZE: u32 = 0x0C;
const QUEUE_SELECT: u32 = 0x0E;
const QUEUE_NOTIFY: u32 = 0x10;
const DEVICE_STATUS: u32 = 0x12;
const INTERRUPT_STATUS: u32 = 0x13;
/// Where the device configuration starts without MSI-X…
const DEVICE_CONFIG: u32 = 0x14;
/// …and with MSI-X (two vector registers come first).
const DEVICE_CONFIG_WITH_MSIX: u32 = 0x18;

/// A legacy device's registers.
#[derive(Debug)]
pub struct LegacyTransport<R> {
    region: Region<R>,
    device_config: u32,
}

impl<R: Registers> LegacyTransport<R> {
    /// The transport over I/O BAR 0 (`region.length` is the BAR's size).
    /// The device configuration's place depends on whether MSI-X is on.
    pub fn new(region: Region<R>, msix: MsixState) -> Result<Self, TransportError> {
        let device_config = match msix {
            MsixState::Disabled => DEVICE_CONFIG,
            MsixState::Enabled => DEVICE_CONFIG_WITH_MSIX,
        };
        if region.length < device_config {
            return Err(TransportError::RegionTooShort {
                length: region.length,
                needed: device_config,
            });
        }
        Ok(Self { region, device_config })
    }

    fn registers(&self) -> &R {
        &self.region.registers
    }

    fn select(&self, queue: u16) -> u16 {
        self.registers().write_u16(QUEUE_SELECT, queue);
        self.registers().read_u16(QUEUE_SIZE)
    }

    /// The absolute offset of device configuration `offset`, checked.
    fn config_offset(&self, offset: u32, width: u32) -> Result<u32, TransportError> {
        let absolute = self.device_config.checked_add(offset);
        match absolute {
            Some(absolute) if self.region.holds(absolute, width) => Ok(absolute),
            _ => Err(TransportError::ConfigOutOfRange { offset, width }),
        }
    }
}

impl<R: Registers> Transport for LegacyTransport<R> {
    fn kind(&self) -> TransportKind {
        TransportKind::Legacy
    }

    fn status(&self) -> DeviceStatus {
        DeviceStatus::from_bits(self.registers().read_u8(DEVICE_STATUS))
    }

    fn set_status(&mut self, status: DeviceStatus) {
        self.registers().write_u8(DEVICE_STATUS, status.bits());
    }

    fn device_features(&mut self) -> Features {
        Features::from_halves(self.registers().read_u32(DEVICE_FEATURES), 0)
    }

    fn set_driver_features(&mut self, features: Features) {
        self.registers().write_u32(DRIVER_FEATURES, features.low_half());
    }

    fn max_queue_size(&mut self, queue: u16) -> Result<u16, TransportError> {
        match self.select(queue) {
            0 => Err(TransportError::NoSuchQueue { queue }),
            size => Ok(size),
        }
    }

    fn setup_queue(&mut self, queue: u16, layout: &RingLayout) -> Result<QueueNotifier, TransportError> {
        if layout.shape() != RingShape::Legacy {
            return Err(TransportError::NeedsLegacyLayout);
        }
        let device = self.max_queue_size(queue)?;
        if layout.size() != device {
            return Err(TransportError::QueueSizeMismatch {
                size: layout.size(),
                device,
            });
        }
        if self.registers().read_u32(QUEUE_PAGE_NUMBER) != 0 {
            return Err(TransportError::QueueAlreadyEnabled { queue });
        }
        let page = layout.descriptor_table() / LEGACY_ALIGNMENT;
        let page = u32::try_from(page).map_err(|_| TransportError::RingAddressTooHigh)?;
        self.registers().write_u32(QUEUE_PAGE_NUMBER, page);
        Ok(QueueNotifier::new(queue, QUEUE_NOTIFY))
    }

    fn notify(&self, notifier: QueueNotifier) {
        self.registers().write_u16(QUEUE_NOTIFY, notifier.queue());
    }

    fn take_interrupt_status(&self) -> InterruptStatus {
        InterruptStatus::from_bits(self.registers().read_u8(INTERRUPT_STATUS))
    }

    fn config_generation(&self) -> u8 {
        0
    }

    fn read_config_u8(&self, offset: u32) -> Result<u8, TransportError> {
        Ok(self.registers().read_u8(self.config_offset(offset, 1)?))
    }

    fn read_config_u16(&self, offset: u32) -> Result<u16, TransportError> {
        Ok(self.registers().read_u16(self.config_offset(offset, 2)?))
    }

    fn read_config_u32(&self, offset: u32) -> Result<u32, TransportError> {
        Ok(self.registers().read_u32(self.config_offset(offset, 4)?))
    }
}
