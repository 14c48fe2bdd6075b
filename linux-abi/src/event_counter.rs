//! The arithmetic of an `eventfd` counter (`eventfd(2)`): a read takes the
//! whole count, or 1 with `EFD_SEMAPHORE`, and must wait at 0; a write
//! adds, must wait while the sum would pass `0xffff_ffff_ffff_fffe`, and
//! may not add `u64::MAX`. Pure: the kernel holds the count under a lock
//! and makes callers that must wait, wait.

use crate::Errno;

/// The largest count.
pub const MAX_COUNT: u64 = u64::MAX - 1;

/// A read of `count`: (what it returns, what is left), or `None` when it
/// must wait.
pub fn take(count: u64, semaphore: bool) -> Option<(u64, u64)> {
    match count {
        0 => None,
        _ if semaphore => Some((1, count - 1)),
        _ => Some((count, 0)),
    }
}

/// A write of `value` to `count`: the new count, `Ok(None)` when it must
/// wait for room, EINVAL for `u64::MAX`.
pub fn add(count: u64, value: u64) -> Result<Option<u64>, Errno> {
    if value == u64::MAX {
        return Err(Errno::EINVAL);
    }
    Ok((MAX_COUNT - count.min(MAX_COUNT) >= value).then(|| count + value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_takes_all_or_one_and_waits_at_zero() {
        assert_eq!(take(0, false), None);
        assert_eq!(take(0, true), None);
        assert_eq!(take(7, false), Some((7, 0)));
        assert_eq!(take(7, true), Some((1, 6)));
    }

    #[test]
    fn a_write_waits_rather_than_overflow_and_refuses_the_maximum() {
        assert_eq!(add(0, 5), Ok(Some(5)));
        assert_eq!(add(0, MAX_COUNT), Ok(Some(MAX_COUNT)));
        assert_eq!(add(1, MAX_COUNT), Ok(None));
        assert_eq!(add(MAX_COUNT, 0), Ok(Some(MAX_COUNT)));
        assert_eq!(add(MAX_COUNT, 1), Ok(None));
        assert_eq!(add(0, u64::MAX), Err(Errno::EINVAL));
    }
}
