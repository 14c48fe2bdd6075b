//! Feature bits (virtio 1.2 §2.2 and §6): a 64-bit set; device types add
//! their own bits below 24 (see `block::BlockFeatures`).

use core::ops::{BitAnd, BitOr};

/// A set of feature bits.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Features(u64);

impl Features {
    /// No features.
    pub const NONE: Self = Self(0);
    /// `VIRTIO_F_NOTIFY_ON_EMPTY` (legacy).
    pub const NOTIFY_ON_EMPTY: Self = Self::bit(24);
    /// `VIRTIO_F_ANY_LAYOUT`: any split of requests into buffers.
    pub const ANY_LAYOUT: Self = Self::bit(27);
    /// `VIRTIO_F_INDIRECT_DESC`: indirect descriptor tables.
    pub const RING_INDIRECT_DESC: Self = Self::bit(28);
    /// `VIRTIO_F_EVENT_IDX`: `used_event` / `avail_event`.
    pub const RING_EVENT_IDX: Self = Self::bit(29);
    /// `VIRTIO_F_VERSION_1`: the device follows virtio 1.x.
    pub const VERSION_1: Self = Self::bit(32);
    /// `VIRTIO_F_ACCESS_PLATFORM`: DMA goes through the platform's IOMMU.
    pub const ACCESS_PLATFORM: Self = Self::bit(33);
    /// `VIRTIO_F_RING_PACKED`: packed virtqueues.
    pub const RING_PACKED: Self = Self::bit(34);
    /// `VIRTIO_F_IN_ORDER`: buffers are used in the order they were made
    /// available.
    pub const IN_ORDER: Self = Self::bit(35);
    /// `VIRTIO_F_NOTIFICATION_DATA`: notifications carry ring positions.
    pub const NOTIFICATION_DATA: Self = Self::bit(38);
    /// What this crate cannot do: packed rings, indirect descriptors,
    /// notifications with data. Never negotiated.
    pub const UNSUPPORTED: Self = Self(Self::RING_PACKED.0 | Self::RING_INDIRECT_DESC.0 | Self::NOTIFICATION_DATA.0);

    /// The set holding only bit `number` (below 64).
    pub const fn bit(number: u32) -> Self {
        Self(1 << number)
    }

    /// The set with exactly these bits.
    pub const fn from_bits(bits: u64) -> Self {
        Self(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// This set without the bits of `other`.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// The low 32 bits (all a legacy device has).
    pub const fn low_half(self) -> u32 {
        self.0 as u32
    }

    /// The high 32 bits.
    pub const fn high_half(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The set made of two 32-bit halves.
    pub const fn from_halves(low: u32, high: u32) -> Self {
        Self((high as u64) << 32 | low as u64)
    }
}

impl BitOr for Features {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl BitAnd for Features {
    type Output = Self;
    fn bitand(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }
}
