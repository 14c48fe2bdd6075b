//! One CPU's timed sleepers as plain data: who sleeps until when, and the
//! earliest deadline, so that a timer tick with nothing due need not look.
//!
//! The kernel keeps one [`CpuSleepers`] per CPU, touched only by the
//! threads running there and by that CPU's timer tick — which cannot
//! interrupt a holder, since the lock keeps interrupts off — so a tick
//! never waits for another CPU. A single list for the whole machine made
//! every tick of every CPU (800 a second at 8 CPUs) queue on one lock,
//! and with more vCPUs than host cores one descheduled holder stalled all
//! ticks behind it (see `docs/verification.md`, "the tick convoy"). loom
//! checks both in `tests/loom_sleepers.rs`. The one exception: a change
//! of the wall clock copies every CPU's sleepers to wake them
//! ([`CpuSleepers::copy_sleepers`]), checked in `tests/loom_clock_set.rs`.

extern crate alloc;
use alloc::collections::TryReserveError;
use alloc::vec::Vec;

use spinlock::{GuardPolicy, HeldLevels, Level, SpinLock, TicketLock};

use crate::atomics::{AtomicU64, Ordering};

/// One CPU's sleepers under their lock, and their earliest deadline
/// readable without it. `G` and `H` are the lock's guard policy and
/// lock-order record (the kernel's: interrupts off, per-CPU levels).
pub struct CpuSleepers<T, G: GuardPolicy, H: HeldLevels> {
    list: SpinLock<SleepList<T>, TicketLock, G, H>,
    earliest: AtomicU64,
    /// Ticks that found the lock held (by another CPU): should stay 0.
    contended_ticks: AtomicU64,
}

/// How a tick went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// Nothing was due: the lock was not taken.
    NothingDue,
    /// Took the lock at once and woke the sleepers that were due.
    Woke,
    /// Had to wait for the lock first (someone on another CPU held it).
    WokeAfterWaiting,
}

impl<T, G: GuardPolicy, H: HeldLevels> CpuSleepers<T, G, H> {
    loom_const_fn! {
        pub fn new(level: Level) -> Self {
            Self {
                list: SpinLock::new(level, SleepList::new()),
                earliest: AtomicU64::new(u64::MAX),
                contended_ticks: AtomicU64::new(0),
            }
        }
    }

    /// Runs `change` on the list and republishes the earliest deadline.
    pub fn change<R>(&self, change: impl FnOnce(&mut SleepList<T>) -> R) -> R {
        let mut list = self.list.lock();
        let result = change(&mut list);
        // Release, under the lock: a tick that reads the new value sees
        // the list it describes once it takes the lock.
        self.earliest.store(list.earliest(), Ordering::Release);
        result
    }

    /// The timer tick at `now`: wakes (through `wake`, with the lock
    /// released) every sleeper that is due.
    pub fn tick(&self, now: u64, mut wake: impl FnMut(T)) -> Tick {
        // Acquire: pairs with the Release in `change`.
        if self.earliest.load(Ordering::Acquire) > now {
            return Tick::NothingDue;
        }
        let mut outcome = Tick::Woke;
        loop {
            let mut list = match self.list.try_lock() {
                Some(list) => list,
                None => {
                    outcome = Tick::WokeAfterWaiting;
                    // Relaxed: a statistic.
                    self.contended_ticks.fetch_add(1, Ordering::Relaxed);
                    self.list.lock()
                }
            };
            let due = list.take_expired(now);
            self.earliest.store(list.earliest(), Ordering::Release);
            drop(list);
            match due {
                Some(sleeper) => wake(sleeper),
                None => return outcome,
            }
        }
    }

    /// Copies every sleeper into `into`, whose spare capacity the caller
    /// reserved (nothing is allocated under the lock); false, copying
    /// nothing, when there is not room for all of them. Taken from other
    /// CPUs only for a change of the wall clock, which is rare.
    pub fn copy_sleepers(&self, into: &mut Vec<T>) -> bool
    where
        T: Clone,
    {
        let list = self.list.lock();
        if into.capacity() - into.len() < list.len() {
            return false;
        }
        into.extend(list.sleepers.iter().map(|(_, sleeper)| sleeper.clone()));
        true
    }

    /// How many sleep on the list now.
    pub fn count(&self) -> usize {
        self.list.lock().len()
    }

    /// The earliest deadline on the list (`u64::MAX`: none), read
    /// without the lock.
    pub fn earliest(&self) -> u64 {
        // Acquire: pairs with the Release in `change`.
        self.earliest.load(Ordering::Acquire)
    }

    /// Ticks so far that had to wait for the lock.
    pub fn contended_ticks(&self) -> u64 {
        self.contended_ticks.load(Ordering::Relaxed)
    }
}

/// Sleepers with their deadlines (nanoseconds of uptime), in no order,
/// and the earliest deadline among them (kept, so that adding a sleeper
/// and removing one that is not the earliest cost no scan of the rest:
/// every sleep does both).
#[derive(Debug)]
pub struct SleepList<T> {
    sleepers: Vec<(u64, T)>,
    earliest: u64,
}

impl<T> Default for SleepList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SleepList<T> {
    pub const fn new() -> Self {
        Self { sleepers: Vec::new(), earliest: u64::MAX }
    }

    /// Adds `sleeper` until `deadline`; fails, changing nothing, when there
    /// is no memory for it.
    pub fn add(&mut self, deadline: u64, sleeper: T) -> Result<(), TryReserveError> {
        self.sleepers.try_reserve(1)?;
        self.sleepers.push((deadline, sleeper));
        self.earliest = self.earliest.min(deadline);
        Ok(())
    }

    /// Removes the first sleeper for which `is_it` holds (a thread sleeps
    /// on one list at most once).
    pub fn remove(&mut self, is_it: impl Fn(&T) -> bool) {
        if let Some(position) = self.sleepers.iter().position(|(_, sleeper)| is_it(sleeper)) {
            self.take_at(position);
        }
    }

    /// Takes one sleeper whose deadline is at or before `now`, if any.
    pub fn take_expired(&mut self, now: u64) -> Option<T> {
        if self.earliest > now {
            return None;
        }
        let position = self.sleepers.iter().position(|(deadline, _)| *deadline <= now)?;
        Some(self.take_at(position))
    }

    fn take_at(&mut self, position: usize) -> T {
        let (deadline, sleeper) = self.sleepers.swap_remove(position);
        if deadline == self.earliest {
            self.earliest = self.sleepers.iter().map(|(deadline, _)| *deadline).min().unwrap_or(u64::MAX);
        }
        sleeper
    }

    /// The earliest deadline; `u64::MAX` when nobody sleeps.
    pub fn earliest(&self) -> u64 {
        self.earliest
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

    #[test]
    fn the_kept_earliest_deadline_is_always_the_minimum_of_those_sleeping() {
        let mut list = SleepList::new();
        let mut model: Vec<(u64, u32)> = Vec::new();
        let mut random = testkit::Rng::new(45);
        let mut next = |bound: u64| random.below(bound as usize) as u64;
        for step in 0..5_000u32 {
            match next(3) {
                0 => {
                    let deadline = next(100);
                    list.add(deadline, step).unwrap();
                    model.push((deadline, step));
                }
                1 if !model.is_empty() => {
                    let (_, gone) = model.swap_remove(next(model.len() as u64) as usize);
                    list.remove(|sleeper| *sleeper == gone);
                }
                _ => {
                    let now = next(100);
                    if let Some(taken) = list.take_expired(now) {
                        let at = model.iter().position(|(_, sleeper)| *sleeper == taken).expect("taken once");
                        assert!(model.swap_remove(at).0 <= now, "only expired sleepers are taken");
                    } else {
                        assert!(model.iter().all(|(deadline, _)| *deadline > now), "an expired sleeper was left");
                    }
                }
            }
            assert_eq!(list.earliest(), model.iter().map(|(deadline, _)| *deadline).min().unwrap_or(u64::MAX));
            assert_eq!(list.len(), model.len());
        }
    }
}
