//! One CPU's timed sleepers as plain data: who sleeps until when, and the
//! earliest deadline, so that a timer tick with nothing due need not look.
//!
//! The kernel keeps one list per CPU, touched by the threads homed there
//! and by that CPU's timer tick. A single list for the whole machine made
//! every tick of every CPU (800 a second at 8 CPUs) queue on one lock,
//! and with more vCPUs than host cores one descheduled holder stalled all
//! ticks behind it (see `docs/verification.md`, "the tick convoy").
//! Nothing here knows about locks or hardware; `tests/` checks it.

extern crate alloc;
use alloc::collections::TryReserveError;
use alloc::vec::Vec;

/// Sleepers with their deadlines (nanoseconds of uptime).
#[derive(Debug)]
pub struct SleepList<T> {
    sleepers: Vec<(u64, T)>,
}

impl<T> Default for SleepList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SleepList<T> {
    pub const fn new() -> Self {
        Self { sleepers: Vec::new() }
    }

    /// Adds `sleeper` until `deadline`; fails, changing nothing, when there
    /// is no memory for it.
    pub fn add(&mut self, deadline: u64, sleeper: T) -> Result<(), TryReserveError> {
        self.sleepers.try_reserve(1)?;
        self.sleepers.push((deadline, sleeper));
        Ok(())
    }

    /// Removes every sleeper for which `is_it` holds.
    pub fn remove(&mut self, is_it: impl Fn(&T) -> bool) {
        self.sleepers.retain(|(_, sleeper)| !is_it(sleeper));
    }

    /// Takes one sleeper whose deadline is at or before `now`, if any.
    pub fn take_expired(&mut self, now: u64) -> Option<T> {
        let position = self.sleepers.iter().position(|(deadline, _)| *deadline <= now)?;
        Some(self.sleepers.swap_remove(position).1)
    }

    /// The earliest deadline; `u64::MAX` when nobody sleeps.
    pub fn earliest(&self) -> u64 {
        self.sleepers.iter().map(|(deadline, _)| *deadline).min().unwrap_or(u64::MAX)
    }

    pub fn len(&self) -> usize {
        self.sleepers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sleepers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_expired_sleepers_are_taken_and_the_earliest_follows() {
        let mut list = SleepList::new();
        assert_eq!(list.earliest(), u64::MAX);
        list.add(30, 'a').unwrap();
        list.add(10, 'b').unwrap();
        list.add(20, 'c').unwrap();
        assert_eq!(list.earliest(), 10);
        assert_eq!(list.take_expired(9), None);
        let mut woken: Vec<char> = core::iter::from_fn(|| list.take_expired(20)).collect();
        woken.sort();
        assert_eq!(woken, ['b', 'c']);
        assert_eq!((list.len(), list.earliest()), (1, 30));
    }

    #[test]
    fn a_sleeper_that_leaves_is_never_woken() {
        let mut list = SleepList::new();
        list.add(5, 1).unwrap();
        list.add(5, 2).unwrap();
        list.remove(|sleeper| *sleeper == 1);
        assert_eq!(list.take_expired(100), Some(2));
        assert_eq!(list.take_expired(100), None);
        assert!(list.is_empty());
    }
}
