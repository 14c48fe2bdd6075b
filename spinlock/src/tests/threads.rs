//! Real host threads hammering one lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::vec::Vec;

use super::support::ThreadSlot;
use crate::{Level, McsLock, RawLock, SpinLock, TicketLock};

const THREADS: usize = 4;
const INCREMENTS: u64 = 100_000;
const LEVEL: Level = Level::new(1);

type Mcs = McsLock<ThreadSlot, THREADS>;

/// Every thread adds 1 `increments` times, by a read and a separate write,
/// and checks that it is alone inside; the total must be exact.
fn hammer<L: RawLock>(lock: &SpinLock<u64, L>, increments: u64) {
    let inside = AtomicBool::new(false);
    thread::scope(|scope| {
        for slot in 0..THREADS {
            let inside = &inside;
            scope.spawn(move || {
                ThreadSlot::set(slot);
                for _ in 0..increments {
                    let mut count = lock.lock();
                    // Relaxed: a probe, ordered by the lock itself.
                    assert!(
                        !inside.swap(true, Ordering::Relaxed),
                        "two threads inside the lock"
                    );
                    let seen = *count;
                    *count = seen + 1;
                    inside.store(false, Ordering::Relaxed);
                }
            });
        }
    });
    ThreadSlot::set(0);
    let total = *lock.lock();
    assert_eq!(
        total,
        THREADS as u64 * increments,
        "expected {} increments, counted {total}",
        THREADS as u64 * increments
    );
}

#[test]
fn ticket_lock_excludes_four_threads() {
    hammer(&SpinLock::<u64, TicketLock>::new(LEVEL, 0), INCREMENTS);
}

#[test]
fn mcs_lock_excludes_four_threads() {
    hammer(&SpinLock::<u64, Mcs>::new(LEVEL, 0), INCREMENTS);
}

#[test]
fn ticket_lock_excludes_across_wrap_around() {
    // 4 × 10,000 tickets from 2³² - 20,000: the counters wrap half-way.
    let lock = SpinLock::with_raw(TicketLock::starting_at(u32::MAX - 20_000), LEVEL, 0);
    hammer(&lock, 10_000);
    assert!(!lock.is_locked(), "the lock should be free at the end");
}

#[test]
fn try_lock_never_enters_a_held_lock() {
    try_lock_race(&SpinLock::<u64, TicketLock>::new(LEVEL, 0));
    try_lock_race(&SpinLock::<u64, Mcs>::new(LEVEL, 0));
}

/// Two threads lock, two try; every increment must count once.
fn try_lock_race<L: RawLock>(lock: &SpinLock<u64, L>) {
    const ROUNDS: u64 = 20_000;
    let successes = thread::scope(|scope| {
        let lockers: Vec<_> = (0..2)
            .map(|slot| {
                scope.spawn(move || {
                    ThreadSlot::set(slot);
                    (0..ROUNDS).for_each(|_| *lock.lock() += 1);
                    0
                })
            })
            .collect();
        let triers: Vec<_> = (2..4)
            .map(|slot| {
                scope.spawn(move || {
                    ThreadSlot::set(slot);
                    (0..ROUNDS)
                        .filter_map(|_| lock.try_lock().map(|mut count| *count += 1))
                        .count() as u64
                })
            })
            .collect();
        lockers
            .into_iter()
            .chain(triers)
            .map(|handle| handle.join().unwrap())
            .sum::<u64>()
    });
    ThreadSlot::set(0);
    let total = *lock.lock();
    assert_eq!(
        total,
        2 * ROUNDS + successes,
        "expected {} increments, counted {total}",
        2 * ROUNDS + successes
    );
}

#[test]
fn spin_lock_works_as_a_static() {
    static COUNTER: SpinLock<u64> = SpinLock::new(Level::new(1), 0);
    static MCS_COUNTER: SpinLock<u64, McsLock<ThreadSlot, 1>> = SpinLock::new(Level::new(1), 0);
    ThreadSlot::set(0);
    COUNTER.with(|count| *count += 2);
    MCS_COUNTER.with(|count| *count += 3);
    assert_eq!((*COUNTER.lock(), *MCS_COUNTER.lock()), (2, 3));
}
