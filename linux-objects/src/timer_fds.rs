//! `timerfd` descriptors: a timer on CLOCK_REALTIME, CLOCK_MONOTONIC or
//! CLOCK_BOOTTIME whose expirations a `read` takes as a count. Times are
//! kept on the uptime clock (an absolute realtime setting is converted when
//! set); expirations are counted lazily (`linux_abi::timerfd::Expiries`),
//! so a timer needs no kernel thread. A blocked reader sleeps to the next
//! expiry in steps of at most 10 ms, so a new setting from another thread
//! is seen.

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use linux_abi::timerfd::Expiries;
use linux_abi::Errno;

/// As an eventfd counter's: above the sync layer.
const TIMER_LEVEL: Level = Level::new(8);

/// One timer.
pub struct TimerFd {
    /// Absolute settings are on CLOCK_REALTIME (else on uptime).
    realtime: bool,
    expiries: KernelTicketLock<Expiries>,
}

impl TimerFd {
    pub fn new(realtime: bool) -> Self {
        Self { realtime, expiries: KernelTicketLock::new(TIMER_LEVEL, Expiries::default()) }
    }

    /// Arms it: first expiry `value` ns from now, or at `value` on its
    /// clock when `absolute` (0: disarm), then every `interval`. The old
    /// `(time left, interval)`.
    pub fn set(&self, value: u64, absolute: bool, interval: u64) -> (u64, u64) {
        let now = machine::timer::uptime_nanoseconds();
        let first = match (value, absolute) {
            (0, _) => None,
            (at, true) if self.realtime => Some(crate::clock::uptime_at_realtime(at)),
            (at, true) => Some(at),
            (span, false) => Some(now.saturating_add(span)),
        };
        self.expiries.lock().set(now, first, interval)
    }

    /// `(time left, interval)`.
    pub fn get(&self) -> (u64, u64) {
        self.expiries.lock().remaining(machine::timer::uptime_nanoseconds())
    }

    /// Takes the expirations, waiting for one unless `nonblocking`.
    pub fn read(&self, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<u64, Errno> {
        loop {
            let now = machine::timer::uptime_nanoseconds();
            let (count, next) = {
                let mut expiries = self.expiries.lock();
                (expiries.take(now), expiries.next())
            };
            if count > 0 {
                return Ok(count);
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            let step = now.saturating_add(10_000_000);
            sched::sleep_until(next.unwrap_or(step).min(step), interrupted);
        }
    }

    /// Whether a read would not wait.
    pub fn readable(&self) -> bool {
        self.expiries.lock().is_ready(machine::timer::uptime_nanoseconds())
    }
}
