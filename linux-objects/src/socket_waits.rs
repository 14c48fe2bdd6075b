//! How long a socket call may wait: `SO_RCVTIMEO`/`SO_SNDTIMEO` as a
//! socket keeps them ([`TimeoutCell`]), a call's [`Patience`] from them and
//! its descriptor's `O_NONBLOCK`, and a wait with a deadline for objects
//! whose changes wake pollers ([`wait_as_poller`]: Unix sockets under a
//! timeout; Internet sockets have their own loop, which also runs the
//! network's timers).
//!
//! May not hold a lock while it sleeps.

use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::Errno;

use crate::poll_wakeups::Registration;

fn uptime() -> u64 {
    machine::timer::uptime_nanoseconds()
}

/// A socket's `SO_RCVTIMEO` or `SO_SNDTIMEO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// None set (`{0, 0}`): a blocking call waits as long as it must.
    Forever,
    /// Set below zero: Linux then does not wait at all.
    Immediate,
    /// Waits at most this long (nanoseconds).
    After(u64),
}

/// A [`Timeout`] that the socket's descriptors share, changed without a
/// lock.
pub struct TimeoutCell(AtomicU64);

impl TimeoutCell {
    const FOREVER: u64 = u64::MAX;

    /// A cell holding `timeout`.
    pub fn new(timeout: Timeout) -> TimeoutCell {
        let cell = TimeoutCell(AtomicU64::new(Self::FOREVER));
        cell.set(timeout);
        cell
    }

    /// The timeout now.
    pub fn get(&self) -> Timeout {
        match self.0.load(Ordering::Relaxed) {
            Self::FOREVER => Timeout::Forever,
            0 => Timeout::Immediate,
            nanoseconds => Timeout::After(nanoseconds),
        }
    }

    /// Changes it (for calls that start after).
    pub fn set(&self, timeout: Timeout) {
        let encoded = match timeout {
            Timeout::Forever => Self::FOREVER,
            Timeout::Immediate => 0,
            Timeout::After(nanoseconds) => nanoseconds.clamp(1, Self::FOREVER - 1),
        };
        self.0.store(encoded, Ordering::Relaxed);
    }
}

/// How long a socket call may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// Not at all (`O_NONBLOCK`, `MSG_DONTWAIT`, a timeout below zero).
    Never,
    /// Until the operation can go on or a signal comes.
    Unbounded,
    /// Until this uptime (nanoseconds): `SO_RCVTIMEO`/`SO_SNDTIMEO`.
    Until(u64),
}

impl Patience {
    /// A call's patience: none when `nonblocking`, else what `timeout`
    /// (a socket's [`Timeout`]) allows from now.
    pub fn of(nonblocking: bool, timeout: Timeout) -> Patience {
        match (nonblocking, timeout) {
            (true, _) | (false, Timeout::Immediate) => Patience::Never,
            (false, Timeout::Forever) => Patience::Unbounded,
            (false, Timeout::After(nanoseconds)) => Patience::Until(uptime().saturating_add(nanoseconds)),
        }
    }
}

/// Runs `attempt` (which must not wait) until it says something other
/// than EAGAIN, sleeping as a poller between tries (every change of a pipe
/// or socket wakes pollers) until `deadline`: then EAGAIN. A signal ends
/// the wait with EINTR (Linux does not restart a call under a timeout).
pub fn wait_as_poller<R>(deadline: u64, interrupted: &dyn Fn() -> bool, mut attempt: impl FnMut() -> Result<R, Errno>) -> Result<R, Errno> {
    loop {
        let registration = Registration::new();
        match attempt() {
            Err(Errno::EAGAIN) => {}
            other => return other,
        }
        if interrupted() {
            return Err(Errno::EINTR);
        }
        if uptime() >= deadline {
            return Err(Errno::EAGAIN);
        }
        sched::sleep_until(deadline, || registration.changed() || interrupted());
    }
}
