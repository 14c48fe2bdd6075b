//! Scheduling policies (`sched_setscheduler(2)`, `sched(7)`): which
//! policies exist, the priority range of each, and what a request to
//! change a thread's policy or priority may ask, with Linux's errno
//! values. Pure checks; the personality keeps each thread's setting.

use crate::Errno;

/// `SCHED_OTHER`, the default time-sharing policy.
pub const SCHED_OTHER: u32 = 0;
/// First in, first out, real time.
pub const SCHED_FIFO: u32 = 1;
/// Round robin, real time.
pub const SCHED_RR: u32 = 2;
/// Time sharing for batch work.
pub const SCHED_BATCH: u32 = 3;
/// Lowest of all.
pub const SCHED_IDLE: u32 = 5;
/// Earliest deadline first (only through `sched_setattr`).
pub const SCHED_DEADLINE: u32 = 6;
/// Or'ed into a policy: children start with the default policy.
pub const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;

/// Linux's real-time priorities run 1 to 99.
const REAL_TIME_PRIORITIES: core::ops::RangeInclusive<i32> = 1..=99;

/// A thread's policy and static priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduling {
    /// One of the `SCHED_*` policies.
    pub policy: u32,
    /// Its static priority (1..=99 for real time, else 0).
    pub priority: i32,
    /// `SCHED_RESET_ON_FORK` was asked for.
    pub reset_on_fork: bool,
}

impl Default for Scheduling {
    fn default() -> Self {
        Scheduling { policy: SCHED_OTHER, priority: 0, reset_on_fork: false }
    }
}

impl Scheduling {
    /// What `sched_getscheduler` returns.
    pub fn policy_word(&self) -> u32 {
        self.policy | if self.reset_on_fork { SCHED_RESET_ON_FORK } else { 0 }
    }

    /// A `fork`ed child's setting: the same, or the default with
    /// `SCHED_RESET_ON_FORK` (real-time policies become `SCHED_OTHER`).
    pub fn for_child(&self) -> Scheduling {
        if !self.reset_on_fork {
            return *self;
        }
        let policy = if is_real_time(self.policy) { SCHED_OTHER } else { self.policy };
        Scheduling { policy, priority: 0, reset_on_fork: false }
    }

    /// `sched_setscheduler(policy word, priority)`: the new setting, or
    /// EINVAL for an unknown policy or a priority outside its range.
    /// `SCHED_DEADLINE` needs `sched_setattr` (EINVAL here, as on Linux).
    pub fn with_policy(policy_word: u32, priority: i32) -> Result<Scheduling, Errno> {
        let reset_on_fork = policy_word & SCHED_RESET_ON_FORK != 0;
        let policy = policy_word & !SCHED_RESET_ON_FORK;
        if !matches!(policy, SCHED_OTHER | SCHED_FIFO | SCHED_RR | SCHED_BATCH | SCHED_IDLE) {
            return Err(Errno::EINVAL);
        }
        check_priority(policy, priority)?;
        Ok(Scheduling { policy, priority, reset_on_fork })
    }

    /// `sched_setparam(priority)`: the same policy with a new priority.
    pub fn with_priority(&self, priority: i32) -> Result<Scheduling, Errno> {
        check_priority(self.policy, priority)?;
        Ok(Scheduling { priority, ..*self })
    }
}

fn is_real_time(policy: u32) -> bool {
    matches!(policy, SCHED_FIFO | SCHED_RR)
}

fn check_priority(policy: u32, priority: i32) -> Result<(), Errno> {
    let allowed = if is_real_time(policy) { REAL_TIME_PRIORITIES } else { 0..=0 };
    if allowed.contains(&priority) { Ok(()) } else { Err(Errno::EINVAL) }
}

/// `sched_get_priority_max(policy)`.
pub fn priority_max(policy: i64) -> Result<i32, Errno> {
    priority_bounds(policy).map(|(_, max)| max)
}

/// `sched_get_priority_min(policy)`.
pub fn priority_min(policy: i64) -> Result<i32, Errno> {
    priority_bounds(policy).map(|(min, _)| min)
}

fn priority_bounds(policy: i64) -> Result<(i32, i32), Errno> {
    match u32::try_from(policy) {
        Ok(SCHED_FIFO | SCHED_RR) => Ok((*REAL_TIME_PRIORITIES.start(), *REAL_TIME_PRIORITIES.end())),
        Ok(SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE) => Ok((0, 0)),
        _ => Err(Errno::EINVAL),
    }
}

/// `sched_rr_get_interval`: Linux's round-robin slice is 100 ms; a FIFO
/// thread has none (0); a time-sharing thread gets `fair_slice`.
pub fn round_robin_interval_nanoseconds(scheduling: &Scheduling, fair_slice: u64) -> u64 {
    match scheduling.policy {
        SCHED_RR => 100_000_000,
        SCHED_FIFO => 0,
        _ => fair_slice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_ranges_are_linux_s() {
        assert_eq!((priority_min(1), priority_max(1)), (Ok(1), Ok(99)));
        assert_eq!((priority_min(2), priority_max(2)), (Ok(1), Ok(99)));
        for policy in [0, 3, 5, 6] {
            assert_eq!((priority_min(policy), priority_max(policy)), (Ok(0), Ok(0)), "{policy}");
        }
        for bad in [-1, 4, 7, 1 << 30] {
            assert_eq!(priority_max(bad), Err(Errno::EINVAL), "{bad}");
        }
    }

    #[test]
    fn a_policy_change_checks_its_priority() {
        assert_eq!(Scheduling::with_policy(SCHED_FIFO, 50).map(|s| s.priority), Ok(50));
        assert_eq!(Scheduling::with_policy(SCHED_FIFO, 0), Err(Errno::EINVAL));
        assert_eq!(Scheduling::with_policy(SCHED_RR, 100), Err(Errno::EINVAL));
        assert_eq!(Scheduling::with_policy(SCHED_OTHER, 1), Err(Errno::EINVAL));
        assert_eq!(Scheduling::with_policy(SCHED_DEADLINE, 0), Err(Errno::EINVAL));
        assert_eq!(Scheduling::with_policy(42, 0), Err(Errno::EINVAL));
        let other = Scheduling::default();
        assert_eq!(other.with_priority(5), Err(Errno::EINVAL));
        let fifo = Scheduling::with_policy(SCHED_FIFO, 10).unwrap();
        assert_eq!(fifo.with_priority(20).map(|s| (s.policy, s.priority)), Ok((SCHED_FIFO, 20)));
    }

    #[test]
    fn reset_on_fork_is_reported_and_drops_real_time_in_the_child() {
        let asked = Scheduling::with_policy(SCHED_RR | SCHED_RESET_ON_FORK, 30).unwrap();
        assert_eq!(asked.policy_word(), SCHED_RR | SCHED_RESET_ON_FORK);
        assert_eq!(asked.for_child(), Scheduling::default());
        let kept = Scheduling::with_policy(SCHED_FIFO, 30).unwrap();
        assert_eq!(kept.for_child(), kept);
    }

    #[test]
    fn round_robin_slices() {
        let rr = Scheduling::with_policy(SCHED_RR, 1).unwrap();
        let fifo = Scheduling::with_policy(SCHED_FIFO, 1).unwrap();
        assert_eq!(round_robin_interval_nanoseconds(&rr, 4), 100_000_000);
        assert_eq!(round_robin_interval_nanoseconds(&fifo, 4), 0);
        assert_eq!(round_robin_interval_nanoseconds(&Scheduling::default(), 4), 4);
    }
}
