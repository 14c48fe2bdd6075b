//! The device status byte (virtio 1.2 §2.1): the driver's progress through
//! initialization, and the device's cry for a reset.

use core::ops::BitOr;

/// Bits of the device status register.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct DeviceStatus(u8);

impl DeviceStatus {
    /// Writing no bits resets the device; reading none means reset done.
    pub const RESET: Self = Self(0);
    /// The guest has noticed the device.
    pub const ACKNOWLEDGE: Self = Self(1);
    /// The guest knows how to drive it.
    pub const DRIVER: Self = Self(2);
    /// The driver is ready: the device may be used.
    pub const DRIVER_OK: Self = Self(4);
    /// Feature negotiation is complete (modern interface only).
    pub const FEATURES_OK: Self = Self(8);
    /// The device hit an error it cannot recover from without a reset.
    pub const DEVICE_NEEDS_RESET: Self = Self(0x40);
    /// The driver gave up on the device.
    pub const FAILED: Self = Self(0x80);

    /// The status with exactly these bits.
    pub const fn from_bits(bits: u8) -> Self {
        Self(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for DeviceStatus {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}
