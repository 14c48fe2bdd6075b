//! Loom: the big kernel lock under all interleavings: nested entries by one
//! thread never let another in, and the last exit lets the next one in.

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::vec::Vec;

use super::loom_support::{check, Preemptions};
use super::support::ThreadSlot;
use crate::BigLock;

/// Enters twice, counts alone (a separate read and write), leaves twice.
fn count_nested(lock: &BigLock<ThreadSlot>, count: &AtomicUsize, inside: &AtomicBool) {
    lock.enter();
    lock.enter();
    // SeqCst probes: the strongest order cannot hide a race.
    assert!(!inside.swap(true, Ordering::SeqCst), "two threads inside the big lock");
    // Relaxed: only the lock may order these; a lost update is a failure.
    let seen = count.load(Ordering::Relaxed);
    count.store(seen + 1, Ordering::Relaxed);
    inside.store(false, Ordering::SeqCst);
    lock.exit();
    lock.exit();
}

fn excludes(threads: usize) {
    ThreadSlot::set(0);
    let lock = Arc::new(BigLock::<ThreadSlot>::new());
    let count = Arc::new(AtomicUsize::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (1..threads)
        .map(|slot| {
            let (lock, count, inside) = (lock.clone(), count.clone(), inside.clone());
            thread::spawn(move || {
                ThreadSlot::set(slot);
                count_nested(&lock, &count, &inside);
            })
        })
        .collect();
    count_nested(&lock, &count, &inside);
    handles.into_iter().for_each(|handle| handle.join().unwrap());
    lock.enter();
    let total = count.load(Ordering::Relaxed);
    lock.exit();
    assert_eq!(total, threads, "expected {threads} counts, saw {total}");
}

#[test]
fn big_lock_excludes_two_threads_entering_twice() {
    check(Preemptions::Unbounded, || excludes(2));
}

#[test]
fn big_lock_excludes_three_threads_entering_twice() {
    check(Preemptions::AtMost(1), || excludes(3));
}
