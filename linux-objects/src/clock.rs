//! Time for user space: `CLOCK_MONOTONIC` is the uptime clock;
//! `CLOCK_REALTIME` is the wall-clock time read from the CMOS clock at
//! boot plus the uptime since, until `clock_settime` or `settimeofday`
//! moves it.

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
    let _changing = EPOCH_CHANGE.lock();
    BOOT_EPOCH.store(epoch, Ordering::Relaxed);
    crate::vdso::publish_epoch(epoch);
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
