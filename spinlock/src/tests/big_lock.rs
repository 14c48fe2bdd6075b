//! The big kernel lock on host threads: reentrant on one thread, exclusive
//! between threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use super::support::ThreadSlot;
use crate::BigLock;

const THREADS: usize = 4;
const ROUNDS: u64 = 20_000;

/// Enters `depth` times, checks it is alone and counts (by a separate read
/// and write, so that two threads inside would lose updates), leaves.
fn nested_count(lock: &BigLock<ThreadSlot>, depth: u64, count: &AtomicU64, inside: &AtomicBool) {
    (0..depth).for_each(|_| lock.enter());
    assert!(lock.is_held_here(), "entered but not held");
    // Relaxed: probes, ordered by the lock itself.
    assert!(!inside.swap(true, Ordering::Relaxed), "two threads inside the big lock");
    let seen = count.load(Ordering::Relaxed);
    count.store(seen + 1, Ordering::Relaxed);
    inside.store(false, Ordering::Relaxed);
    (0..depth).for_each(|_| lock.exit());
}

#[test]
fn big_lock_is_reentrant_and_free_after_the_last_exit() {
    ThreadSlot::set(0);
    let lock = BigLock::<ThreadSlot>::new();
    lock.enter();
    lock.enter();
    lock.exit();
    assert!(lock.is_held_here(), "one exit of two freed the lock");
    lock.exit();
    assert!(!lock.is_held_here(), "still held after the last exit");
    ThreadSlot::set(1);
    lock.enter();
    assert!(lock.is_held_here(), "another thread could not take the freed lock");
    lock.exit();
}

#[test]
fn big_lock_excludes_threads_at_every_nesting_depth() {
    let lock = BigLock::<ThreadSlot>::new();
    let count = AtomicU64::new(0);
    let inside = AtomicBool::new(false);
    thread::scope(|scope| {
        for slot in 0..THREADS {
            let (lock, count, inside) = (&lock, &count, &inside);
            scope.spawn(move || {
                ThreadSlot::set(slot);
                for round in 0..ROUNDS {
                    nested_count(lock, 1 + round % 3, count, inside);
                }
            });
        }
    });
    let total = count.load(Ordering::Relaxed);
    assert_eq!(total, THREADS as u64 * ROUNDS, "expected {} counts, saw {total}", THREADS as u64 * ROUNDS);
}
