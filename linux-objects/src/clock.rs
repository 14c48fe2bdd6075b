//! Time for user space: `CLOCK_MONOTONIC` is the uptime clock;
//! `CLOCK_REALTIME` is the wall-clock time read from the CMOS clock at
//! boot plus the uptime since, until `clock_settime` or `settimeofday`
//! moves it.

use core::sync::atomic::{AtomicU64, Ordering};

use vfs::Timestamp;

/// Nanoseconds since the epoch at uptime 0.
static BOOT_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Records the wall-clock time read at boot.
pub fn set_boot_epoch(seconds_now: u64) {
    let uptime = machine::timer::uptime_nanoseconds() / 1_000_000_000;
    BOOT_EPOCH.store(seconds_now.saturating_sub(uptime) * 1_000_000_000, Ordering::Relaxed);
}

/// Sets `CLOCK_REALTIME` to `nanoseconds` since the epoch (not before the
/// boot: the clock counts from the epoch at uptime 0).
pub fn set_realtime(nanoseconds: u64) {
    BOOT_EPOCH.store(nanoseconds.saturating_sub(monotonic_nanoseconds()), Ordering::Relaxed);
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
