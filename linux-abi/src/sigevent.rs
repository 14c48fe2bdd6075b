//! `struct sigevent` as `timer_create` reads it: how a timer's expiry is
//! told (a signal to the process, a signal to one thread, or nothing),
//! checked as Linux's `good_sigevent` checks it.

use crate::Errno;

/// The bytes of `struct sigevent` the kernel reads: `sigev_value` (8),
/// `sigev_signo` (4), `sigev_notify` (4), then `sigev_notify_thread_id`.
pub const SIGEVENT_READ_BYTES: usize = 20;

const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD_ID: i32 = 4;
/// The highest signal number.
const MAX_SIGNAL: i32 = 64;

/// How an expiry is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// `SIGEV_NONE`: not at all (the timer is read with `timer_gettime`).
    Nothing,
    /// `SIGEV_SIGNAL` or `SIGEV_THREAD_ID`: a signal.
    Signal {
        /// Its number.
        signal: u32,
        /// `sigev_value`, carried in its `siginfo`.
        value: u64,
        /// The thread it is for (`SIGEV_THREAD_ID`); `None`: the process.
        thread: Option<u32>,
    },
}

/// Reads a `sigevent`. `SIGEV_THREAD` is the C library's (it arrives here
/// as `SIGEV_THREAD_ID`): EINVAL, as every other unknown kind, a signal
/// number out of range, or a thread id `is_own_thread` refuses.
pub fn parse_sigevent(bytes: &[u8; SIGEVENT_READ_BYTES], is_own_thread: impl Fn(u32) -> bool) -> Result<Notify, Errno> {
    let word = |at: usize| i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let value = u64::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]]);
    let (signal, notify, thread) = (word(8), word(12), word(16));
    let checked_signal = || if (1..=MAX_SIGNAL).contains(&signal) { Ok(signal as u32) } else { Err(Errno::EINVAL) };
    match notify {
        SIGEV_NONE => Ok(Notify::Nothing),
        SIGEV_SIGNAL => Ok(Notify::Signal { signal: checked_signal()?, value, thread: None }),
        SIGEV_THREAD_ID if thread > 0 && is_own_thread(thread as u32) => Ok(Notify::Signal { signal: checked_signal()?, value, thread: Some(thread as u32) }),
        _ => Err(Errno::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(value: u64, signal: i32, notify: i32, thread: i32) -> [u8; SIGEVENT_READ_BYTES] {
        let mut bytes = [0u8; SIGEVENT_READ_BYTES];
        bytes[..8].copy_from_slice(&value.to_le_bytes());
        bytes[8..12].copy_from_slice(&signal.to_le_bytes());
        bytes[12..16].copy_from_slice(&notify.to_le_bytes());
        bytes[16..].copy_from_slice(&thread.to_le_bytes());
        bytes
    }

    #[test]
    fn each_kind_is_read_and_checked() {
        let own = |tid: u32| tid == 7;
        assert_eq!(parse_sigevent(&event(42, 10, 0, 0), own), Ok(Notify::Signal { signal: 10, value: 42, thread: None }));
        assert_eq!(parse_sigevent(&event(0, 99, 1, 0), own), Ok(Notify::Nothing));
        assert_eq!(parse_sigevent(&event(1, 34, 4, 7), own), Ok(Notify::Signal { signal: 34, value: 1, thread: Some(7) }));
        for bad in [event(0, 0, 0, 0), event(0, 65, 0, 0), event(0, 10, 2, 0), event(0, 10, 4, 8), event(0, 10, 4, -1), event(0, 10, 9, 0)] {
            assert_eq!(parse_sigevent(&bad, own), Err(Errno::EINVAL), "{bad:?}");
        }
    }
}
