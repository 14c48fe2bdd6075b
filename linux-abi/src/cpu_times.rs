//! CPU-time accounting as Linux reports it: user and system time in
//! `times(2)`'s clock ticks, `getrusage(2)`'s `struct rusage`, and the CPU
//! clocks of `clock_gettime(2)` — the fixed ids and the ones
//! `clock_getcpuclockid(3)` and `pthread_getcpuclockid(3)` make from a pid
//! or thread id. Pure: the kernel measures, this module encodes.

use crate::{Errno, Timeval, UserValue};

/// `USER_HZ`: the clock ticks of `times(2)` and `/proc/<pid>/stat`.
pub const TICKS_PER_SECOND: u64 = 100;

/// User and system time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time running the program's own code.
    pub user: u64,
    /// Time in the kernel working for it.
    pub system: u64,
}

impl CpuTimes {
    /// From a thread's running time and the user-mode part of it (the
    /// rest is system time).
    pub fn from_running_user(running: u64, user: u64) -> Self {
        Self { user: user.min(running), system: running.saturating_sub(user) }
    }

    /// Both added (saturating).
    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes { user: self.user.saturating_add(other.user), system: self.system.saturating_add(other.system) }
    }

    /// User plus system.
    pub fn total(self) -> u64 {
        self.user.saturating_add(self.system)
    }

    /// `(user, system)` in clock ticks.
    pub fn ticks(self) -> (u64, u64) {
        (self.user / (1_000_000_000 / TICKS_PER_SECOND), self.system / (1_000_000_000 / TICKS_PER_SECOND))
    }
}

/// `sizeof(struct tms)`.
pub const TMS_BYTES: usize = 32;

/// `struct tms`: the process's times and its waited-for children's.
pub fn tms(own: CpuTimes, children: CpuTimes) -> [u8; TMS_BYTES] {
    let mut bytes = [0u8; TMS_BYTES];
    let (user, system) = own.ticks();
    let (children_user, children_system) = children.ticks();
    for (index, value) in [user, system, children_user, children_system].into_iter().enumerate() {
        bytes[index * 8..index * 8 + 8].copy_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// `sizeof(struct rusage)`.
pub const RUSAGE_BYTES: usize = 144;

/// `struct rusage` with the user and system times (`ru_utime`,
/// `ru_stime`) and the largest resident set in KiB (`ru_maxrss`); the
/// counters Lamina does not keep are 0.
pub fn rusage(times: CpuTimes, max_resident_kib: u64) -> [u8; RUSAGE_BYTES] {
    let mut bytes = [0u8; RUSAGE_BYTES];
    Timeval::from_nanoseconds(times.user).encode(&mut bytes[0..16]);
    Timeval::from_nanoseconds(times.system).encode(&mut bytes[16..32]);
    bytes[32..40].copy_from_slice(&max_resident_kib.to_le_bytes());
    bytes
}

/// Whose time a CPU clock measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClockOwner {
    /// The calling process (`CLOCK_PROCESS_CPUTIME_ID`, or pid 0).
    ThisProcess,
    /// The calling thread (`CLOCK_THREAD_CPUTIME_ID`, or thread id 0).
    ThisThread,
    /// Process `pid`.
    Process(u32),
    /// Thread `tid`.
    Thread(u32),
}

/// What a CPU clock counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClockKind {
    /// `CPUCLOCK_PROF`: user and system time.
    Profile,
    /// `CPUCLOCK_VIRT`: user time.
    Virtual,
    /// `CPUCLOCK_SCHED`: running time (what the fixed ids count).
    Scheduled,
}

/// A CPU clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuClock {
    /// Whose.
    pub owner: CpuClockOwner,
    /// Counting what.
    pub kind: CpuClockKind,
}

impl CpuClock {
    /// The CPU clock `id` names: `Ok(None)` for a clock that is not a CPU
    /// clock (realtime, monotonic…), EINVAL for a malformed CPU clock id.
    pub fn decode(id: i32) -> Result<Option<CpuClock>, Errno> {
        const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let kind_and_owner = match id {
            CLOCK_PROCESS_CPUTIME_ID => (CpuClockKind::Scheduled, CpuClockOwner::ThisProcess),
            CLOCK_THREAD_CPUTIME_ID => (CpuClockKind::Scheduled, CpuClockOwner::ThisThread),
            id if id >= 0 => return Ok(None),
            id => {
                let kind = match id & 3 {
                    0 => CpuClockKind::Profile,
                    1 => CpuClockKind::Virtual,
                    2 => CpuClockKind::Scheduled,
                    _ => return Err(Errno::EINVAL),
                };
                let pid = !(id >> 3) as u32;
                let owner = match (id & 4 != 0, pid) {
                    (true, 0) => CpuClockOwner::ThisThread,
                    (true, tid) => CpuClockOwner::Thread(tid),
                    (false, 0) => CpuClockOwner::ThisProcess,
                    (false, pid) => CpuClockOwner::Process(pid),
                };
                (kind, owner)
            }
        };
        Ok(Some(CpuClock { kind: kind_and_owner.0, owner: kind_and_owner.1 }))
    }

    /// The clock's reading, given its owner's times.
    pub fn reading(&self, times: CpuTimes) -> u64 {
        match self.kind {
            CpuClockKind::Virtual => times.user,
            CpuClockKind::Profile | CpuClockKind::Scheduled => times.total(),
        }
    }
}

/// `ITIMER_VIRTUAL` or `ITIMER_PROF`: expires when the process's user (or
/// user and system) time reaches a reading, then every interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuIntervalTimer {
    /// The clock reading (ns) of the next expiry; `None`: disarmed.
    expires_at: Option<u64>,
    /// Re-arm period (ns); 0: one shot.
    interval: u64,
}

impl CpuIntervalTimer {
    /// Armed `value` ns of CPU time after `reading` (0: disarmed), then
    /// every `interval`.
    pub fn armed(reading: u64, value: u64, interval: u64) -> Self {
        match value {
            0 => Self::default(),
            _ => Self { expires_at: Some(reading.saturating_add(value)), interval },
        }
    }

    /// Whether it is armed.
    pub fn is_armed(&self) -> bool {
        self.expires_at.is_some()
    }

    /// `(time left, interval)` at `reading`; a due expiry counts as 1 ns
    /// left (armed, never 0), a disarmed timer as `(0, 0)`.
    pub fn remaining(&self, reading: u64) -> (u64, u64) {
        match self.expires_at {
            Some(at) => (at.saturating_sub(reading).max(1), self.interval),
            None => (0, 0),
        }
    }

    /// At `reading`: whether it expires now (it then re-arms one interval
    /// past its expiry, or past `reading` if it fell further behind, or is
    /// spent).
    pub fn expire(&mut self, reading: u64) -> bool {
        let Some(at) = self.expires_at.filter(|at| reading >= *at) else { return false };
        self.expires_at = match self.interval {
            0 => None,
            interval => Some(at.saturating_add(interval).max(reading.saturating_add(1))),
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's `clock_getcpuclockid` and `pthread_getcpuclockid`.
    fn process_clock(pid: i32) -> i32 {
        (!pid << 3) | 2
    }
    fn thread_clock(tid: i32) -> i32 {
        (!tid << 3) | 2 | 4
    }

    #[test]
    fn interval_timers_expire_on_cpu_time_and_rearm() {
        let mut timer = CpuIntervalTimer::armed(1_000, 500, 200);
        assert!(timer.is_armed());
        assert_eq!(timer.remaining(1_100), (400, 200));
        assert!(!timer.expire(1_499));
        assert!(timer.expire(1_500));
        assert_eq!(timer.remaining(1_500), (200, 200));
        assert!(timer.expire(5_000), "far behind: one expiry");
        assert_eq!(timer.remaining(5_000), (1, 200), "then due again just after");
        let mut once = CpuIntervalTimer::armed(0, 10, 0);
        assert!(once.expire(10));
        assert!(!once.is_armed());
        assert_eq!(once.remaining(10), (0, 0));
        assert!(!CpuIntervalTimer::armed(7, 0, 100).is_armed(), "a zero value disarms");
    }

    #[test]
    fn clock_ids_decode_as_glibc_makes_them() {
        assert_eq!(CpuClock::decode(0), Ok(None));
        assert_eq!(CpuClock::decode(7), Ok(None));
        assert_eq!(CpuClock::decode(2), Ok(Some(CpuClock { owner: CpuClockOwner::ThisProcess, kind: CpuClockKind::Scheduled })));
        assert_eq!(CpuClock::decode(3), Ok(Some(CpuClock { owner: CpuClockOwner::ThisThread, kind: CpuClockKind::Scheduled })));
        assert_eq!(CpuClock::decode(process_clock(1234)).unwrap().unwrap().owner, CpuClockOwner::Process(1234));
        assert_eq!(CpuClock::decode(thread_clock(77)).unwrap().unwrap().owner, CpuClockOwner::Thread(77));
        assert_eq!(CpuClock::decode(process_clock(0)).unwrap().unwrap().owner, CpuClockOwner::ThisProcess);
        assert_eq!(CpuClock::decode(!5 << 3).unwrap().unwrap().kind, CpuClockKind::Profile);
        assert_eq!(CpuClock::decode((!5 << 3) | 1).unwrap().unwrap().kind, CpuClockKind::Virtual);
        assert_eq!(CpuClock::decode((!5 << 3) | 3), Err(Errno::EINVAL));
    }

    #[test]
    fn times_split_and_encode_as_linux_lays_them_out() {
        let times = CpuTimes::from_running_user(2_500_000_000, 2_000_000_000);
        assert_eq!(times, CpuTimes { user: 2_000_000_000, system: 500_000_000 });
        assert_eq!(CpuTimes::from_running_user(5, 9), CpuTimes { user: 5, system: 0 }, "user time measured past the running time is cut to it");
        assert_eq!(times.ticks(), (200, 50));
        let record = tms(times, CpuTimes { user: 10_000_000, system: 0 });
        assert_eq!(u64::from_le_bytes(record[0..8].try_into().unwrap()), 200);
        assert_eq!(u64::from_le_bytes(record[8..16].try_into().unwrap()), 50);
        assert_eq!(u64::from_le_bytes(record[16..24].try_into().unwrap()), 1);
        let usage = rusage(times, 4096);
        assert_eq!(u64::from_le_bytes(usage[0..8].try_into().unwrap()), 2);
        assert_eq!(u64::from_le_bytes(usage[16..24].try_into().unwrap()), 0);
        assert_eq!(u64::from_le_bytes(usage[24..32].try_into().unwrap()), 500_000);
        assert_eq!(u64::from_le_bytes(usage[32..40].try_into().unwrap()), 4096);
        let clock = CpuClock { owner: CpuClockOwner::ThisProcess, kind: CpuClockKind::Virtual };
        assert_eq!(clock.reading(times), 2_000_000_000);
    }
}
