//! Values a system call reads from or writes to user memory, with their
//! Linux byte layout: the integer types, `struct timespec` and `struct
//! timeval`. The personality's `UserPtr<T>` moves them; decoding one
//! checks it (a `timespec` with nanoseconds out of range is EINVAL).
//!
//! Must never panic: decoding takes exactly [`UserValue::SIZE`] bytes.

use crate::Errno;

/// A value with a fixed little-endian layout in user memory.
pub trait UserValue: Sized {
    /// Bytes in user memory.
    const SIZE: usize;
    /// Reads one from exactly `SIZE` bytes; an invalid one is its errno.
    fn decode(bytes: &[u8]) -> Result<Self, Errno>;
    /// Writes it into exactly `SIZE` bytes.
    fn encode(&self, bytes: &mut [u8]);
}

macro_rules! integer_values {
    ($($type:ty),*) => {$(
        impl UserValue for $type {
            const SIZE: usize = core::mem::size_of::<$type>();
            fn decode(bytes: &[u8]) -> Result<Self, Errno> {
                let mut raw = [0u8; core::mem::size_of::<$type>()];
                raw.copy_from_slice(bytes);
                Ok(<$type>::from_le_bytes(raw))
            }
            fn encode(&self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
integer_values!(u32, i32, u64, i64);

/// `int[2]`, as `pipe` fills it.
impl UserValue for [i32; 2] {
    const SIZE: usize = 8;
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        Ok([i32::decode(&bytes[..4])?, i32::decode(&bytes[4..])?])
    }
    fn encode(&self, bytes: &mut [u8]) {
        self[0].encode(&mut bytes[..4]);
        self[1].encode(&mut bytes[4..]);
    }
}

/// `u64[2]`, e.g. `struct rlimit` (soft, hard).
impl UserValue for [u64; 2] {
    const SIZE: usize = 16;
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        Ok([u64::decode(&bytes[..8])?, u64::decode(&bytes[8..])?])
    }
    fn encode(&self, bytes: &mut [u8]) {
        self[0].encode(&mut bytes[..8]);
        self[1].encode(&mut bytes[8..]);
    }
}

const NANOSECONDS_PER_SECOND: u64 = 1_000_000_000;

/// `struct timespec`: a time or duration, never negative here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timespec {
    /// Whole seconds.
    pub seconds: u64,
    /// Nanoseconds past them (below 10⁹).
    pub nanoseconds: u64,
}

impl Timespec {
    /// The timespec of `nanoseconds`.
    pub fn from_nanoseconds(nanoseconds: u64) -> Self {
        Self { seconds: nanoseconds / NANOSECONDS_PER_SECOND, nanoseconds: nanoseconds % NANOSECONDS_PER_SECOND }
    }

    /// In nanoseconds (saturating).
    pub fn as_nanoseconds(&self) -> u64 {
        self.seconds.saturating_mul(NANOSECONDS_PER_SECOND).saturating_add(self.nanoseconds)
    }
}

impl UserValue for Timespec {
    const SIZE: usize = 16;
    /// EINVAL for negative seconds or nanoseconds of 10⁹ or more.
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        let (seconds, nanoseconds) = (i64::decode(&bytes[..8])?, u64::decode(&bytes[8..])?);
        if seconds < 0 || nanoseconds >= NANOSECONDS_PER_SECOND {
            return Err(Errno::EINVAL);
        }
        Ok(Self { seconds: seconds as u64, nanoseconds })
    }
    fn encode(&self, bytes: &mut [u8]) {
        self.seconds.encode(&mut bytes[..8]);
        self.nanoseconds.encode(&mut bytes[8..]);
    }
}

/// `struct timeval`: seconds and microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeval {
    /// Whole seconds.
    pub seconds: u64,
    /// Microseconds past them (below 10⁶).
    pub microseconds: u64,
}

impl Timeval {
    /// The timeval of `nanoseconds` (rounded down to microseconds).
    pub fn from_nanoseconds(nanoseconds: u64) -> Self {
        Self { seconds: nanoseconds / NANOSECONDS_PER_SECOND, microseconds: nanoseconds % NANOSECONDS_PER_SECOND / 1000 }
    }

    /// In nanoseconds (saturating).
    pub fn as_nanoseconds(&self) -> u64 {
        self.seconds.saturating_mul(NANOSECONDS_PER_SECOND).saturating_add(self.microseconds * 1000)
    }
}

impl UserValue for Timeval {
    const SIZE: usize = 16;
    /// EINVAL for negative seconds or microseconds of 10⁶ or more.
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        let (seconds, microseconds) = (i64::decode(&bytes[..8])?, u64::decode(&bytes[8..])?);
        if seconds < 0 || microseconds >= 1_000_000 {
            return Err(Errno::EINVAL);
        }
        Ok(Self { seconds: seconds as u64, microseconds })
    }
    fn encode(&self, bytes: &mut [u8]) {
        self.seconds.encode(&mut bytes[..8]);
        self.microseconds.encode(&mut bytes[8..]);
    }
}

/// `struct itimerval`: the re-arm interval, then the time to the next
/// expiry (`setitimer`, `getitimer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItimerVal {
    /// Period after each expiry (zero: one shot).
    pub interval: Timeval,
    /// Time to the next expiry (zero: disarmed).
    pub value: Timeval,
}

impl UserValue for ItimerVal {
    const SIZE: usize = 32;
    /// EINVAL if either timeval is invalid.
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        Ok(Self { interval: Timeval::decode(&bytes[..16])?, value: Timeval::decode(&bytes[16..])? })
    }
    fn encode(&self, bytes: &mut [u8]) {
        self.interval.encode(&mut bytes[..16]);
        self.value.encode(&mut bytes[16..]);
    }
}

/// `struct itimerspec`: a POSIX timer's interval and time to the next
/// expiry (`timer_settime`, `timer_gettime`, `timerfd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItimerSpec {
    /// Period after each expiry (zero: one shot).
    pub interval: Timespec,
    /// Time to (or, absolute, time of) the next expiry (zero: disarmed).
    pub value: Timespec,
}

impl UserValue for ItimerSpec {
    const SIZE: usize = 32;
    /// EINVAL if either timespec is invalid.
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        Ok(Self { interval: Timespec::decode(&bytes[..16])?, value: Timespec::decode(&bytes[16..])? })
    }
    fn encode(&self, bytes: &mut [u8]) {
        self.interval.encode(&mut bytes[..16]);
        self.value.encode(&mut bytes[16..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: UserValue + PartialEq + core::fmt::Debug>(value: T) {
        let mut bytes = std::vec![0u8; T::SIZE];
        value.encode(&mut bytes);
        assert_eq!(T::decode(&bytes), Ok(value));
    }

    #[test]
    fn values_read_back_as_written() {
        round_trip(-5i32);
        round_trip(u64::MAX);
        round_trip([3i32, 4]);
        round_trip([u64::MAX, 7u64]);
        round_trip(Timespec::from_nanoseconds(12_345_678_901));
        round_trip(Timeval::from_nanoseconds(12_345_678_901));
        assert_eq!(Timeval::from_nanoseconds(12_345_678_901), Timeval { seconds: 12, microseconds: 345_678 });
        round_trip(ItimerVal { interval: Timeval::from_nanoseconds(250_000_000), value: Timeval::from_nanoseconds(3_000_001_000) });
        round_trip(ItimerSpec { interval: Timespec::from_nanoseconds(250_000_001), value: Timespec::from_nanoseconds(3_000_000_007) });
        // The layout: interval first.
        let mut bytes = [0u8; 32];
        ItimerVal { interval: Timeval { seconds: 1, microseconds: 2 }, value: Timeval { seconds: 3, microseconds: 4 } }.encode(&mut bytes);
        assert_eq!((bytes[0], bytes[8], bytes[16], bytes[24]), (1, 2, 3, 4));
        // The value's microseconds set to 10^6 (0x0f4240): invalid.
        bytes[24..27].copy_from_slice(&[0x40, 0x42, 0x0f]);
        assert_eq!(ItimerVal::decode(&bytes), Err(Errno::EINVAL));
    }

    #[test]
    fn bad_times_are_einval() {
        let mut bytes = [0u8; 16];
        (-1i64).encode(&mut bytes[..8]);
        assert_eq!(Timespec::decode(&bytes), Err(Errno::EINVAL));
        0i64.encode(&mut bytes[..8]);
        1_000_000_000u64.encode(&mut bytes[8..]);
        assert_eq!(Timespec::decode(&bytes), Err(Errno::EINVAL));
        1_000_000u64.encode(&mut bytes[8..]);
        assert_eq!(Timeval::decode(&bytes), Err(Errno::EINVAL));
        999_999u64.encode(&mut bytes[8..]);
        assert_eq!(Timeval::decode(&bytes).map(|time| time.as_nanoseconds()), Ok(999_999_000));
    }
}
