//! Time for user space: `CLOCK_MONOTONIC` is the uptime clock;
//! `CLOCK_REALTIME` is the wall-clock time read from the CMOS clock at
//! boot plus the uptime since, until `clock_settime` or `settimeofday`
//! moves it; a sleep until a `CLOCK_REALTIME` time ([`Limit::Realtime`])
//! moves with it.

use core::cell::Cell;
use core::sync::atomic::{AtomicU64, Ordering};

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vfs::Timestamp;

/// Nanoseconds since the epoch at uptime 0.
static BOOT_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Held while the epoch changes, so that the kernel's copy and the vDSO's
/// (`vdso::publish_epoch`) are changed in the same order by concurrent
/// setters. Above the memory objects' level (5), which publishing takes.
static EPOCH_CHANGE: KernelTicketLock<()> = KernelTicketLock::new(Level::new(8), ());

/// Records the wall-clock time read at boot; the epoch in nanoseconds.
pub fn set_boot_epoch(seconds_now: u64) -> u64 {
    let uptime = machine::timer::uptime_nanoseconds() / 1_000_000_000;
    let epoch = seconds_now.saturating_sub(uptime) * 1_000_000_000;
    set_epoch(epoch);
    epoch
}

/// Sets `CLOCK_REALTIME` to `nanoseconds` since the epoch (not before the
/// boot: the clock counts from the epoch at uptime 0).
pub fn set_realtime(nanoseconds: u64) {
    set_epoch(nanoseconds.saturating_sub(monotonic_nanoseconds()));
}

fn set_epoch(epoch: u64) {
    {
        let _changing = EPOCH_CHANGE.lock();
        BOOT_EPOCH.store(epoch, Ordering::Relaxed);
        crate::vdso::publish_epoch(epoch);
        // Release, after the new epoch: a sleeper that sees this count
        // works its deadline out from the new epoch.
        CLOCK_SETS.fetch_add(1, Ordering::Release);
    }
    // As Linux, a sleep until a wall-clock time ends when the clock is
    // set past it, not when the uptime it was until passes.
    sched::wake_every_sleeper();
}

/// Changes of `CLOCK_REALTIME` so far.
static CLOCK_SETS: AtomicU64 = AtomicU64::new(0);

/// When a wait ends, as user space gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At this uptime (ns): relative limits, CLOCK_MONOTONIC and BOOTTIME.
    Uptime(u64),
    /// When CLOCK_REALTIME reads this (ns since the epoch), wherever
    /// `clock_settime` moves it meanwhile.
    Realtime(u64),
}

impl Limit {
    /// No limit.
    pub const NEVER: Limit = Limit::Uptime(u64::MAX);

    /// The uptime it ends at, as the clock is set now.
    pub fn deadline(self) -> u64 {
        match self {
            Limit::Uptime(uptime) => uptime,
            Limit::Realtime(realtime) => uptime_at_realtime(realtime),
        }
    }

    /// Whether it has passed.
    pub fn passed(self) -> bool {
        monotonic_nanoseconds() >= self.deadline()
    }

    /// The limit `nanoseconds` later on the same clock (a timer's next
    /// expiry after its interval).
    pub fn later_by(self, nanoseconds: u64) -> Limit {
        match self {
            Limit::Uptime(uptime) => Limit::Uptime(uptime.saturating_add(nanoseconds)),
            Limit::Realtime(realtime) => Limit::Realtime(realtime.saturating_add(nanoseconds)),
        }
    }
}

/// Sleeps until `limit` passes or `done` holds (whoever makes it true must
/// `unpark` the thread), as `sched::sleep_until`, except that a wall-clock
/// limit follows `clock_settime`: when the clock is set the sleeper wakes,
/// and ends if the clock is now past its limit, else sleeps on to the new
/// deadline.
pub fn sleep_until(limit: Limit, done: impl Fn() -> bool) -> sched::Woken {
    let Limit::Realtime(_) = limit else { return sched::sleep_until(limit.deadline(), done) };
    loop {
        // Acquire: pairs with the Release in `set_epoch`; read before the
        // deadline, so a set after this read is seen by `clock_moved`.
        let sets = CLOCK_SETS.load(Ordering::Acquire);
        let clock_moved = Cell::new(false);
        let woken = sched::sleep_until(limit.deadline(), || {
            if done() {
                return true;
            }
            let moved = CLOCK_SETS.load(Ordering::Acquire) != sets;
            clock_moved.set(moved);
            moved
        });
        match woken {
            sched::Woken::Done if clock_moved.get() => {
                if limit.passed() {
                    return sched::Woken::Deadline;
                }
            }
            woken => return woken,
        }
    }
}

/// Nanoseconds since boot.
pub fn monotonic_nanoseconds() -> u64 {
    machine::timer::uptime_nanoseconds()
}

/// Nanoseconds since the epoch.
pub fn realtime_nanoseconds() -> u64 {
    BOOT_EPOCH.load(Ordering::Relaxed) + monotonic_nanoseconds()
}

/// The uptime at which `CLOCK_REALTIME` reads `realtime` (the boot, for
/// a time before it): how absolute realtime limits become deadlines.
pub fn uptime_at_realtime(realtime: u64) -> u64 {
    realtime.saturating_sub(BOOT_EPOCH.load(Ordering::Relaxed))
}

/// Now, as a file timestamp.
pub fn now() -> Timestamp {
    let nanoseconds = realtime_nanoseconds();
    Timestamp { seconds: nanoseconds / 1_000_000_000, nanoseconds: (nanoseconds % 1_000_000_000) as u32 }
}
