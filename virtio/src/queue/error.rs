//! The queue's errors: what the driver asked wrongly ([`AddError`],
//! [`LayoutError`]) and what the device said wrongly ([`DeviceError`]).

use super::Token;

/// Why a ring layout was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LayoutError {
    /// The size is not a power of two from 1 to 32768.
    BadSize {
        /// The size asked for.
        size: u16,
    },
    /// An area is not aligned as §2.7 requires (descriptors 16, driver
    /// area 2, device area 4; 4096 for the legacy base).
    Misaligned {
        /// The area's address.
        address: u64,
    },
    /// An area runs past the end of the physical address space.
    PastAddressSpace,
    /// Two areas overlap.
    AreasOverlap,
}

/// Why a chain could not be added.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AddError {
    /// Not enough free descriptors now; retry after completions.
    QueueFull,
    /// The chain has no buffers.
    EmptyChain,
    /// The chain has more buffers than the queue has descriptors.
    ChainLongerThanQueue,
    /// A device-readable buffer follows a device-writable one (§2.7.4.2).
    ReadableAfterWritable,
    /// The device-writable buffers add up to more than 4 GiB.
    WritableTooLarge,
    /// The device misbehaved earlier; the queue must be reset.
    Broken,
}

/// What the device said wrongly in the used ring. Each one marks the
/// queue broken: the device must be reset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DeviceError {
    /// The used index moved past more entries than chains are in flight.
    UsedIndexTooFar {
        /// The used index the device published.
        device_index: u16,
        /// The next used index the driver expected to read.
        expected_from: u16,
    },
    /// A used element names a descriptor beyond the queue.
    IdOutOfRange {
        /// The id it gave.
        id: u32,
    },
    /// A used element names a descriptor that heads no chain in flight.
    IdNotInFlight {
        /// The id it gave.
        id: u32,
    },
    /// A used element claims more bytes written than the chain's
    /// device-writable buffers hold; the chain was freed.
    LengthTooLarge {
        /// The chain.
        token: Token,
        /// What the device claimed.
        written: u32,
        /// What the chain can hold.
        writable: u32,
    },
}
