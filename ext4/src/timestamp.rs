//! Inode times: a signed 32-bit second count, extended (in large inodes)
//! by an `_extra` word of two epoch bits and thirty nanosecond bits.
//!
//! Decoding follows Linux's `ext4_decode_extra_time`: the epoch bits add
//! multiples of 2^32 seconds to the sign-extended base, which covers
//! 1901 to 2446. **Must never** fail: every bit pattern is some time.

/// A time as stored in an inode.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 UTC (negative before).
    pub seconds: i64,
    /// Nanoseconds (0 without the extra word; as stored, so a damaged
    /// inode may hold values above 999 999 999).
    pub nanoseconds: u32,
}

const EPOCH_MASK: u32 = 0b11;
const EPOCH_BITS: u32 = 2;

impl Timestamp {
    /// The time from the base word and, if the inode has room for it, the
    /// extra word.
    pub fn decode(base: u32, extra: Option<u32>) -> Self {
        let mut seconds = i64::from(base as i32);
        let mut nanoseconds = 0;
        if let Some(extra) = extra {
            seconds += i64::from(extra & EPOCH_MASK) << 32;
            nanoseconds = extra >> EPOCH_BITS;
        }
        Self { seconds, nanoseconds }
    }

    /// The base and extra words that decode to this time.
    pub fn encode(&self) -> (u32, u32) {
        let base = self.seconds as i32 as u32;
        let epoch = ((self.seconds - i64::from(base as i32)) >> 32) as u32 & EPOCH_MASK;
        (base, (self.nanoseconds << EPOCH_BITS) | epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_bits_extend_the_second_count_past_2038() {
        let time = Timestamp::decode(0x3A7B_8372, Some((123_456_789 << 2) | 1));
        assert_eq!(time, Timestamp { seconds: 0x1_3A7B_8372, nanoseconds: 123_456_789 });
        assert_eq!(time.encode(), (0x3A7B_8372, (123_456_789 << 2) | 1));
    }

    #[test]
    fn before_1970_is_negative_and_small_inodes_have_no_nanoseconds() {
        assert_eq!(Timestamp::decode(0xFFFF_FFFF, None), Timestamp { seconds: -1, nanoseconds: 0 });
        assert_eq!(Timestamp::decode(0xFFFF_FFFF, Some(0)).encode(), (0xFFFF_FFFF, 0));
    }
}
