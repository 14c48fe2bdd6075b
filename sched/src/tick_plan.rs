//! When a CPU's one-shot timer fires next: at its next periodic tick, or
//! earlier, at the deadline of a thread sleeping on that CPU.
//!
//! A CPU's timer runs one-shot. Each interrupt re-arms it for the earlier
//! of the next periodic tick (preemption, CPU-time charging) and the
//! earliest sleeper's deadline, so a `nanosleep` of 1 ms ends about 1 ms
//! later instead of on the next 10 ms tick. Ticks still come every period
//! whatever the sleepers do, so code that counts ticks keeps its meaning.
//!
//! Pure bookkeeping on uptime nanoseconds, owned by one CPU and changed
//! only with its interrupts off; it never touches the hardware (the
//! caller arms what [`TickPlan::arm`] returns).

/// A fire this close before the tick's time (ns) counts as the tick: the
/// APIC timer and the uptime clock are calibrated separately, and a tick
/// that fired a hair early must not cost a second interrupt.
pub const EARLY_TICK_SLACK: u64 = 200_000;

/// One CPU's timer plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickPlan {
    /// Nanoseconds between periodic ticks.
    period: u64,
    /// Uptime of the next periodic tick.
    next_tick: u64,
    /// Uptime the timer is armed for; `u64::MAX` when unarmed.
    armed_for: u64,
}

impl TickPlan {
    /// A plan with ticks every `period` ns, the first at `now + period`,
    /// not yet armed.
    pub const fn new(period: u64, now: u64) -> Self {
        Self { period, next_tick: now.saturating_add(period), armed_for: u64::MAX }
    }

    /// The timer fired at `now`: whether this fire is a periodic tick. The
    /// timer is unarmed until [`arm`](Self::arm) runs.
    pub fn fired(&mut self, now: u64) -> bool {
        self.armed_for = u64::MAX;
        if now.saturating_add(EARLY_TICK_SLACK) < self.next_tick {
            return false;
        }
        // Missed ticks (a long stretch with interrupts off, a host that
        // did not run this vCPU) are not made up: the next is a period on.
        let following = self.next_tick.saturating_add(self.period);
        self.next_tick = if following > now { following } else { now.saturating_add(self.period) };
        true
    }

    /// Makes sure the timer fires by `wake` (or by the next tick, if that
    /// is earlier). Returns the uptime to arm the timer for, or `None` when
    /// it is already armed for that time or earlier.
    pub fn arm(&mut self, wake: u64) -> Option<u64> {
        let target = wake.min(self.next_tick);
        if target >= self.armed_for {
            return None;
        }
        self.armed_for = target;
        Some(target)
    }

    /// Uptime of the next periodic tick.
    pub fn next_tick(&self) -> u64 {
        self.next_tick
    }

    /// Uptime the timer is armed for (`u64::MAX`: unarmed).
    pub fn armed_for(&self) -> u64 {
        self.armed_for
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn an_unarmed_plan_is_armed_for_the_first_tick() {
        let mut plan = TickPlan::new(10 * MS, 0);
        assert_eq!(plan.arm(u64::MAX), Some(10 * MS));
        assert_eq!(plan.arm(u64::MAX), None, "already armed for the tick");
    }

    #[test]
    fn a_sleeper_due_before_the_tick_arms_it_earlier() {
        let mut plan = TickPlan::new(10 * MS, 0);
        plan.arm(u64::MAX);
        assert_eq!(plan.arm(3 * MS), Some(3 * MS));
        assert_eq!(plan.arm(5 * MS), None, "a later sleeper leaves the earlier arming");
        assert_eq!(plan.arm(2 * MS), Some(2 * MS));
        assert_eq!(plan.armed_for(), 2 * MS);
    }

    #[test]
    fn a_sleeper_due_after_the_tick_never_delays_it() {
        let mut plan = TickPlan::new(10 * MS, 0);
        assert_eq!(plan.arm(25 * MS), Some(10 * MS));
    }

    #[test]
    fn an_early_fire_for_a_sleeper_is_not_a_tick() {
        let mut plan = TickPlan::new(10 * MS, 0);
        plan.arm(3 * MS);
        assert!(!plan.fired(3 * MS));
        assert_eq!(plan.next_tick(), 10 * MS);
        assert_eq!(plan.armed_for(), u64::MAX, "a fire disarms");
        assert_eq!(plan.arm(u64::MAX), Some(10 * MS), "re-armed for the tick");
    }

    #[test]
    fn ticks_keep_their_period_across_sleeper_fires() {
        let mut plan = TickPlan::new(10 * MS, 0);
        let mut ticks = 0;
        let mut now = 0;
        for sleeper in [1 * MS, 4 * MS, 9 * MS, 12 * MS, 17 * MS, 25 * MS, 31 * MS] {
            while let Some(at) = plan.arm(sleeper) {
                now = at;
                if plan.fired(now) {
                    ticks += 1;
                }
                if now >= sleeper {
                    break;
                }
            }
        }
        assert!(now >= 31 * MS);
        assert_eq!(ticks, 3, "ticks at 10, 20 and 30 ms and no others");
        assert_eq!(plan.next_tick(), 40 * MS);
    }

    #[test]
    fn a_tick_fired_a_hair_early_counts() {
        let mut plan = TickPlan::new(10 * MS, 0);
        plan.arm(u64::MAX);
        assert!(plan.fired(10 * MS - EARLY_TICK_SLACK));
        assert_eq!(plan.next_tick(), 20 * MS);
    }

    #[test]
    fn missed_ticks_are_not_made_up() {
        let mut plan = TickPlan::new(10 * MS, 0);
        plan.arm(u64::MAX);
        assert!(plan.fired(95 * MS));
        assert_eq!(plan.next_tick(), 105 * MS, "one period on, not a burst of nine ticks");
    }

    #[test]
    fn the_armed_time_is_never_later_than_the_next_tick() {
        // Whatever sleepers ask, a CPU's timer never stops: every arming
        // is at most the next tick.
        let mut plan = TickPlan::new(10 * MS, 0);
        let mut now = 0;
        for step in 0..1_000u64 {
            let wake = if step % 3 == 0 { u64::MAX } else { now + (step * 7_919 % 23) * MS / 2 };
            plan.arm(wake);
            assert!(plan.armed_for() <= plan.next_tick());
            now = plan.armed_for();
            plan.fired(now);
        }
        assert!(now >= 1_000 * MS / 3, "time moved on: {now}");
    }
}
