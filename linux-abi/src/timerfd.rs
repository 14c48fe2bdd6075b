//! The expiry arithmetic of a `timerfd` (`timerfd_create(2)`): a deadline
//! and an interval on one clock, expirations counted lazily when the
//! descriptor is read or polled (no kernel thread per timer), and the
//! flags `timerfd_create` and `timerfd_settime` take. Pure: times are
//! nanoseconds on the timer's own clock.

use crate::Errno;

/// `TFD_TIMER_ABSTIME`: the first expiry is an absolute time.
pub const TIMER_ABSTIME: u64 = 1;
/// `TFD_TIMER_CANCEL_ON_SET`: accepted; a realtime clock change does not
/// cancel the timer here (ECANCELED is never returned).
pub const TIMER_CANCEL_ON_SET: u64 = 2;
/// `TFD_NONBLOCK` (`O_NONBLOCK`).
pub const NONBLOCK: u64 = 0o4000;
/// `TFD_CLOEXEC` (`O_CLOEXEC`).
pub const CLOEXEC: u64 = 0o2000000;

/// A timer's setting and the expirations not yet read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expiries {
    /// The next expiry; `None`: disarmed.
    next: Option<u64>,
    /// Re-arm period; 0: one shot.
    interval: u64,
    /// Expirations counted and not yet read.
    pending: u64,
}

impl Expiries {
    /// Counts the expirations up to `now`.
    pub fn advance(&mut self, now: u64) {
        let Some(next) = self.next.filter(|next| now >= *next) else { return };
        if self.interval == 0 {
            self.pending = self.pending.saturating_add(1);
            self.next = None;
        } else {
            let passed = (now - next) / self.interval + 1;
            self.pending = self.pending.saturating_add(passed);
            self.next = Some(next.saturating_add(passed.saturating_mul(self.interval)));
        }
    }

    /// Takes the expirations counted up to `now` (0: none yet).
    pub fn take(&mut self, now: u64) -> u64 {
        self.advance(now);
        core::mem::take(&mut self.pending)
    }

    /// Whether a read at `now` would not wait.
    pub fn is_ready(&mut self, now: u64) -> bool {
        self.advance(now);
        self.pending > 0
    }

    /// The next expiry, if armed (for a reader to sleep to).
    pub fn next(&self) -> Option<u64> {
        self.next
    }

    /// `(time left, interval)` at `now`; `(0, 0)` when disarmed.
    pub fn remaining(&mut self, now: u64) -> (u64, u64) {
        self.advance(now);
        match self.next {
            Some(next) => (next.saturating_sub(now).max(1), self.interval),
            None => (0, 0),
        }
    }

    /// `timerfd_settime`: expires at `first` (0: disarm), then every
    /// `interval`; unread expirations are dropped. The old setting.
    pub fn set(&mut self, now: u64, first: Option<u64>, interval: u64) -> (u64, u64) {
        let old = self.remaining(now);
        *self = Expiries { next: first, interval: if first.is_some() { interval } else { 0 }, pending: 0 };
        old
    }
}

/// Checks `timerfd_create`'s flags.
pub fn check_create_flags(flags: u64) -> Result<(), Errno> {
    if flags & !(NONBLOCK | CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Checks `timerfd_settime`'s flags (CANCEL_ON_SET is accepted alone too,
/// as Linux does: it only acts with ABSTIME on a realtime timer).
pub fn check_set_flags(flags: u64) -> Result<(), Errno> {
    if flags & !(TIMER_ABSTIME | TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_periodic_timer_counts_every_interval_passed() {
        let mut timer = Expiries::default();
        assert_eq!(timer.set(0, Some(100), 50), (0, 0));
        assert!(!timer.is_ready(99));
        assert_eq!(timer.remaining(60), (40, 50));
        assert_eq!(timer.take(100), 1);
        assert_eq!(timer.take(120), 0);
        assert_eq!(timer.take(260), 3, "150, 200, 250");
        assert_eq!(timer.remaining(260), (40, 50));
        assert_eq!(timer.next(), Some(300));
    }

    #[test]
    fn a_one_shot_timer_fires_once_and_set_drops_what_was_unread() {
        let mut timer = Expiries::default();
        timer.set(0, Some(10), 0);
        assert!(timer.is_ready(1_000));
        assert_eq!(timer.remaining(1_000), (0, 0));
        assert_eq!(timer.set(1_000, Some(2_000), 0), (0, 0));
        assert_eq!(timer.take(1_500), 0, "the expiry counted before the new setting is gone");
        timer.set(1_500, None, 7);
        assert_eq!(timer.remaining(5_000), (0, 0));
    }

    #[test]
    fn flags_are_checked_as_linux_checks_them() {
        assert_eq!(check_create_flags(NONBLOCK | CLOEXEC), Ok(()));
        assert_eq!(check_create_flags(1), Err(Errno::EINVAL));
        assert_eq!(check_set_flags(TIMER_ABSTIME | TIMER_CANCEL_ON_SET), Ok(()));
        assert_eq!(check_set_flags(TIMER_CANCEL_ON_SET), Ok(()));
        assert_eq!(check_set_flags(4), Err(Errno::EINVAL));
    }
}
