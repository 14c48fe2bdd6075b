//! Physical addresses, frame numbers and half-open frame ranges.

use core::fmt;

/// `log2(FRAME_SIZE)`: a frame number is a physical address shifted right by this.
pub const FRAME_SHIFT: u32 = 12;

/// Size of a frame in bytes: 4 KiB, the x86-64 base page size.
pub const FRAME_SIZE: u64 = 1 << FRAME_SHIFT;

/// A physical byte address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysicalAddress(pub u64);

impl PhysicalAddress {
    /// True when the address is the first byte of a frame.
    pub const fn is_frame_aligned(self) -> bool {
        self.offset_in_frame() == 0
    }

    /// The byte offset of the address inside its frame.
    pub const fn offset_in_frame(self) -> u64 {
        self.0 % FRAME_SIZE
    }
}

impl fmt::Display for PhysicalAddress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:#x}", self.0)
    }
}

/// A physical frame: its physical start address shifted right by [`FRAME_SHIFT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameNumber(pub u64);

impl FrameNumber {
    /// The highest frame whose start address fits in 64 bits. No allocator
    /// covers a frame above it.
    pub const MAX: FrameNumber = FrameNumber(u64::MAX >> FRAME_SHIFT);

    /// The frame that holds `address`.
    pub const fn containing(address: PhysicalAddress) -> Self {
        Self(address.0 >> FRAME_SHIFT)
    }

    /// The frame that starts at `address`; `None` if `address` is not frame aligned.
    pub const fn from_start_address(address: PhysicalAddress) -> Option<Self> {
        if address.is_frame_aligned() {
            Some(Self::containing(address))
        } else {
            None
        }
    }

    /// The address of the frame's first byte; `None` above [`FrameNumber::MAX`].
    pub const fn checked_start_address(self) -> Option<PhysicalAddress> {
        if self.0 > Self::MAX.0 {
            None
        } else {
            Some(PhysicalAddress(self.0 << FRAME_SHIFT))
        }
    }

    /// The address of the frame's first byte.
    ///
    /// # Panics
    /// Above [`FrameNumber::MAX`], where no frame exists: the caller made the
    /// number up. Every frame an allocator hands out converts.
    pub const fn start_address(self) -> PhysicalAddress {
        match self.checked_start_address() {
            Some(address) => address,
            None => panic!("frame number beyond the 64-bit physical address space"),
        }
    }

    /// The frame `count` frames further on; `None` on overflow.
    pub const fn checked_add(self, count: u64) -> Option<Self> {
        match self.0.checked_add(count) {
            Some(number) => Some(Self(number)),
            None => None,
        }
    }
}

impl fmt::Display for FrameNumber {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "frame {:#x}", self.0)
    }
}

/// The frames `start..end` (half-open). A range with `end <= start` is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameRange {
    pub start: FrameNumber,
    pub end: FrameNumber,
}

impl FrameRange {
    /// The frames `start..end`.
    pub const fn new(start: FrameNumber, end: FrameNumber) -> Self {
        Self { start, end }
    }

    /// The `count` frames from `start`; `None` if the end overflows.
    pub const fn with_count(start: FrameNumber, count: u64) -> Option<Self> {
        match start.checked_add(count) {
            Some(end) => Some(Self::new(start, end)),
            None => None,
        }
    }

    /// The frames lying wholly inside the bytes `start..end`: a partial frame
    /// at either end is left out, as a memory map's usable range requires.
    pub const fn within_addresses(start: PhysicalAddress, end: PhysicalAddress) -> Self {
        let first = FrameNumber::containing(start);
        let first = if start.is_frame_aligned() {
            first
        } else {
            FrameNumber(first.0 + 1)
        };
        Self::new(first, FrameNumber::containing(end))
    }

    /// Number of frames in the range.
    pub const fn len(self) -> u64 {
        self.end.0.saturating_sub(self.start.0)
    }

    /// True when the range holds no frame.
    pub const fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// True when `frame` lies in the range.
    pub const fn contains(self, frame: FrameNumber) -> bool {
        self.start.0 <= frame.0 && frame.0 < self.end.0
    }

    /// True when every frame of `other` lies in this range (an empty `other` always does).
    pub const fn contains_range(self, other: FrameRange) -> bool {
        other.is_empty() || (self.start.0 <= other.start.0 && other.end.0 <= self.end.0)
    }

    /// The frames in both ranges; empty ranges come back as `start..start`.
    pub fn intersection(self, other: FrameRange) -> FrameRange {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end).max(start);
        Self::new(start, end)
    }

    /// The frames of the range, in ascending order.
    pub fn frames(self) -> impl DoubleEndedIterator<Item = FrameNumber> {
        (self.start.0..self.end.0).map(FrameNumber)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containing_rounds_down_and_start_address_round_trips() {
        assert_eq!(
            FrameNumber::containing(PhysicalAddress(0x1fff)),
            FrameNumber(1)
        );
        assert_eq!(FrameNumber(5).start_address(), PhysicalAddress(0x5000));
        assert_eq!(
            FrameNumber::containing(PhysicalAddress(u64::MAX)),
            FrameNumber::MAX
        );
        assert_eq!(FrameNumber::MAX.start_address(), PhysicalAddress(!0xfff));
    }

    #[test]
    fn from_start_address_refuses_unaligned_addresses() {
        assert_eq!(
            FrameNumber::from_start_address(PhysicalAddress(0x3000)),
            Some(FrameNumber(3))
        );
        assert_eq!(
            FrameNumber::from_start_address(PhysicalAddress(0x3001)),
            None
        );
    }

    #[test]
    fn frames_above_max_have_no_start_address() {
        assert_eq!(
            FrameNumber(FrameNumber::MAX.0 + 1).checked_start_address(),
            None
        );
    }

    #[test]
    fn within_addresses_leaves_out_partial_frames() {
        let range = FrameRange::within_addresses(PhysicalAddress(0x1001), PhysicalAddress(0x5fff));
        assert_eq!(range, FrameRange::new(FrameNumber(2), FrameNumber(5)));
        let aligned =
            FrameRange::within_addresses(PhysicalAddress(0x1000), PhysicalAddress(0x3000));
        assert_eq!(aligned, FrameRange::new(FrameNumber(1), FrameNumber(3)));
        let inside_one_frame =
            FrameRange::within_addresses(PhysicalAddress(0x1001), PhysicalAddress(0x1fff));
        assert!(inside_one_frame.is_empty(), "saw {inside_one_frame:?}");
        let top =
            FrameRange::within_addresses(PhysicalAddress(u64::MAX - 5), PhysicalAddress(u64::MAX));
        assert!(top.is_empty(), "saw {top:?}");
    }

    #[test]
    fn reversed_and_disjoint_ranges_are_empty() {
        let reversed = FrameRange::new(FrameNumber(10), FrameNumber(4));
        assert_eq!(reversed.len(), 0);
        assert!(!reversed.contains(FrameNumber(5)));
        let left = FrameRange::new(FrameNumber(0), FrameNumber(4));
        let right = FrameRange::new(FrameNumber(8), FrameNumber(12));
        assert_eq!(
            left.intersection(right),
            FrameRange::new(FrameNumber(8), FrameNumber(8))
        );
    }

    #[test]
    fn intersection_clips_to_the_overlap() {
        let covered = FrameRange::new(FrameNumber(100), FrameNumber(200));
        let memory = FrameRange::new(FrameNumber(50), FrameNumber(150));
        assert_eq!(
            memory.intersection(covered),
            FrameRange::new(FrameNumber(100), FrameNumber(150))
        );
    }

    #[test]
    fn with_count_refuses_overflow() {
        assert_eq!(FrameRange::with_count(FrameNumber(u64::MAX), 1), None);
        assert_eq!(
            FrameRange::with_count(FrameNumber(2), 3).map(FrameRange::len),
            Some(3)
        );
    }

    #[test]
    fn contains_range_accepts_empty_ranges_and_refuses_overhangs() {
        let covered = FrameRange::new(FrameNumber(10), FrameNumber(20));
        assert!(covered.contains_range(FrameRange::new(FrameNumber(10), FrameNumber(20))));
        assert!(covered.contains_range(FrameRange::new(FrameNumber(90), FrameNumber(90))));
        assert!(!covered.contains_range(FrameRange::new(FrameNumber(15), FrameNumber(21))));
        assert!(!covered.contains_range(FrameRange::new(FrameNumber(9), FrameNumber(12))));
    }
}
