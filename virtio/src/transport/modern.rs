//! The modern virtio PCI interface: the common configuration structure,
//! the notify, ISR and device-configuration structures that the
//! capabilities point to (virtio 1.2 §4.1.4).
//!
//! Must never: ring a doorbell outside the notify structure (the offset is
//! `queue_notify_off × notify_off_multiplier`, both device-reported), read
//! device configuration outside its structure, or change a queue that the
//! device already has enabled.

use super::{
    DeviceStatus, Features, InterruptStatus, QueueNotifier, Region, Registers, Transport, TransportError, TransportKind,
};
use crate::queue::RingLayout;

const DEVICE_FEATURE_SELECT: u32 = 0;
const DEVICE_FEATURE: u32 = 4;
const DRIVER_FEATURE_SELECT: u32 = 8;
const DRIVER_FEATURE: u32 = 12;
const NUM_QUEUES: u32 = 18;
const DEVICE_STATUS: u32 = 20;
const CONFIG_GENERATION: u32 = 21;
const QUEUE_SELECT: u32 = 22;
const QUEUE_SIZE: u32 = 24;
const QUEUE_ENABLE: u32 = 28;
const QUEUE_NOTIFY_OFF: u32 = 30;
const QUEUE_DESC: u32 = 32;
const QUEUE_DRIVER: u32 = 40;
const QUEUE_DEVICE: u32 = 48;
/// The virtio 1.0 common configuration structure's size (later fields are
/// optional).
pub const COMMON_CONFIG_LENGTH: u32 = 56;
const LOW_HALF: u32 = 0;
const HIGH_HALF: u32 = 1;
/// A doorbell write is 16 bits wide.
const DOORBELL_WIDTH: u32 = 2;

/// The notify structure: its block and `notify_off_multiplier`.
#[derive(Debug)]
pub struct NotifyRegion<R> {
    /// The block holding the doorbells.
    pub region: Region<R>,
    /// `notify_off_multiplier` from the notify capability.
    pub offset_multiplier: u32,
}

/// A modern device's registers.
#[derive(Debug)]
pub struct ModernTransport<R> {
    common: Region<R>,
    notify: NotifyRegion<R>,
    isr: Region<R>,
    device: Option<Region<R>>,
}

impl<R: Registers> ModernTransport<R> {
    /// The transport over the blocks the capabilities point to (the device
    /// configuration is optional: some device types have none).
    pub fn new(
        common: Region<R>,
        notify: NotifyRegion<R>,
        isr: Region<R>,
        device: Option<Region<R>>,
    ) -> Result<Self, TransportError> {
        for (region, needed) in [
            (&common, COMMON_CONFIG_LENGTH),
            (&isr, 1),
            (&notify.region, DOORBELL_WIDTH),
        ] {
            if region.length < needed {
                return Err(TransportError::RegionTooShort {
                    length: region.length,
                    needed,
                });
            }
        }
        Ok(Self {
            common,
            notify,
            isr,
            device,
        })
    }

    fn common(&self) -> &R {
        &self.common.registers
    }

    fn write_u64(&self, offset: u32, value: u64) {
        self.common().write_u32(offset, value as u32);
        self.common().write_u32(offset + 4, (value >> 32) as u32);
    }

    /// Selects `queue` after checking it exists; returns its maximum size.
    fn select(&self, queue: u16) -> Result<u16, TransportError> {
        if queue >= self.common().read_u16(NUM_QUEUES) {
            return Err(TransportError::NoSuchQueue { queue });
        }
        self.common().write_u16(QUEUE_SELECT, queue);
        match self.common().read_u16(QUEUE_SIZE) {
            0 => Err(TransportError::NoSuchQueue { queue }),
            size => Ok(size),
        }
    }

    /// The selected queue's doorbell offset, checked against the block.
    fn doorbell(&self, queue: u16) -> Result<u32, TransportError> {
        let notify_off = u32::from(self.common().read_u16(QUEUE_NOTIFY_OFF));
        let offset = notify_off.checked_mul(self.notify.offset_multiplier);
        match offset {
            Some(offset) if self.notify.region.holds(offset, DOORBELL_WIDTH) => Ok(offset),
            _ => Err(TransportError::NotifyOutOfRange { queue }),
        }
    }

    fn device_region(&self, offset: u32, width: u32) -> Result<&R, TransportError> {
        match &self.device {
            Some(region) if region.holds(offset, width) => Ok(&region.registers),
            _ => Err(TransportError::ConfigOutOfRange { offset, width }),
        }
    }
}

impl<R: Registers> Transport for ModernTransport<R> {
    fn kind(&self) -> TransportKind {
        TransportKind::Modern
    }

    fn status(&self) -> DeviceStatus {
        DeviceStatus::from_bits(self.common().read_u8(DEVICE_STATUS))
    }

    fn set_status(&mut self, status: DeviceStatus) {
        self.common().write_u8(DEVICE_STATUS, status.bits());
    }

    fn device_features(&mut self) -> Features {
        self.common().write_u32(DEVICE_FEATURE_SELECT, LOW_HALF);
        let low = self.common().read_u32(DEVICE_FEATURE);
        self.common().write_u32(DEVICE_FEATURE_SELECT, HIGH_HALF);
        let high = self.common().read_u32(DEVICE_FEATURE);
        Features::from_halves(low, high)
    }

    fn set_driver_features(&mut self, features: Features) {
        self.common().write_u32(DRIVER_FEATURE_SELECT, LOW_HALF);
        self.common().write_u32(DRIVER_FEATURE, features.low_half());
        self.common().write_u32(DRIVER_FEATURE_SELECT, HIGH_HALF);
        self.common().write_u32(DRIVER_FEATURE, features.high_half());
    }

    fn max_queue_size(&mut self, queue: u16) -> Result<u16, TransportError> {
        self.select(queue)
    }

    fn setup_queue(&mut self, queue: u16, layout: &RingLayout) -> Result<QueueNotifier, TransportError> {
        let maximum = self.select(queue)?;
        if layout.size() > maximum {
            return Err(TransportError::QueueTooLarge {
                size: layout.size(),
                maximum,
            });
        }
        if self.common().read_u16(QUEUE_ENABLE) != 0 {
            return Err(TransportError::QueueAlreadyEnabled { queue });
        }
        let doorbell = self.doorbell(queue)?;
        self.common().write_u16(QUEUE_SIZE, layout.size());
        self.write_u64(QUEUE_DESC, layout.descriptor_table());
        self.write_u64(QUEUE_DRIVER, layout.driver_area());
        self.write_u64(QUEUE_DEVICE, layout.device_area());
        self.common().write_u16(QUEUE_ENABLE, 1);
        Ok(QueueNotifier::new(queue, doorbell))
    }

    fn notify(&self, notifier: QueueNotifier) {
        self.notify
            .region
            .registers
            .write_u16(notifier.offset(), notifier.queue());
    }

    fn take_interrupt_status(&self) -> InterruptStatus {
        InterruptStatus::from_bits(self.isr.registers.read_u8(0))
    }

    fn config_generation(&self) -> u8 {
        self.common().read_u8(CONFIG_GENERATION)
    }

    fn read_config_u8(&self, offset: u32) -> Result<u8, TransportError> {
        Ok(self.device_region(offset, 1)?.read_u8(offset))
    }

    fn read_config_u16(&self, offset: u32) -> Result<u16, TransportError> {
        Ok(self.device_region(offset, 2)?.read_u16(offset))
    }

    fn read_config_u32(&self, offset: u32) -> Result<u32, TransportError> {
        Ok(self.device_region(offset, 4)?.read_u32(offset))
    }
}
