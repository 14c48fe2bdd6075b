//! Loom: the MCS lock under all interleavings (bounded preemptions).

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::vec;
use std::vec::Vec;

use super::loom_support::{check, count_alone, Preemptions};
use super::support::ThreadSlot;
use crate::{Arrival, Level, McsLock, RawLock, SpinLock};

const LEVEL: Level = Level::new(1);
const SLOTS: usize = 3;
type Mcs = McsLock<ThreadSlot, SLOTS>;

/// `threads` threads (the model's own in slot 0, the others in slots
/// `1..threads`) each increment once under the lock; every run ends at the
/// exact total and never finds two threads inside.
fn excludes(threads: usize) {
    ThreadSlot::set(0);
    let lock = Arc::new(SpinLock::<usize, Mcs>::new(LEVEL, 0));
    let inside = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (1..threads)
        .map(|slot| {
            let (lock, inside) = (lock.clone(), inside.clone());
            thread::spawn(move || {
                ThreadSlot::set(slot);
                count_alone(&mut lock.lock(), &inside);
            })
        })
        .collect();
    count_alone(&mut lock.lock(), &inside);
    handles
        .into_iter()
        .for_each(|handle| handle.join().unwrap());
    let total = *lock.lock();
    assert_eq!(
        total, threads,
        "expected {threads} increments, counted {total}"
    );
}

#[test]
fn mcs_lock_excludes_two_threads() {
    check(Preemptions::Unbounded, || excludes(2));
}

#[test]
fn mcs_lock_excludes_three_threads() {
    check(Preemptions::AtMost(2), || excludes(3));
}

/// Threads enqueue with the real step functions of `lock()` and note their
/// place in the order of entry. FIFO: whoever queued behind a slot entered
/// right after it; whoever found the lock free entered when nobody else
/// was inside or queued.
fn enters_in_queue_order(threads: usize) {
    let lock = Arc::new(Mcs::new());
    let entries = Arc::new(AtomicUsize::new(0));
    let enter = move |lock: &Mcs, entries: &AtomicUsize, slot: usize| {
        let arrival = lock.arrive(slot);
        while !lock.is_my_turn(slot) {
            thread::yield_now();
        }
        // Relaxed: an RMW reads the latest count whatever the order, and
        // the places are compared only after the joins.
        let place = entries.fetch_add(1, Ordering::Relaxed);
        lock.release(slot);
        (place, slot, arrival)
    };
    // The model's own thread takes part (slot 0): loom explores a model
    // whose own thread only waits in `join` far less efficiently.
    let handles: Vec<_> = (1..threads)
        .map(|slot| {
            let (lock, entries) = (lock.clone(), entries.clone());
            thread::spawn(move || enter(&lock, &entries, slot))
        })
        .collect();
    let mut entered = vec![enter(&lock, &entries, 0)];
    entered.extend(handles.into_iter().map(|handle| handle.join().unwrap()));
    entered.sort_by_key(|&(place, _, _)| place);
    for (place, &(_, slot, arrival)) in entered.iter().enumerate() {
        let previous = place.checked_sub(1).map(|before| entered[before].1);
        if let Arrival::Queued { behind } = arrival {
            assert_eq!(
                previous,
                Some(behind),
                "slot {slot} queued behind {behind} but entered after {previous:?}: {entered:?}"
            );
        }
    }
    assert!(!lock.is_locked(), "the lock should be free at the end");
}

#[test]
fn mcs_lock_is_fifo() {
    check(Preemptions::AtMost(2), || enters_in_queue_order(3));
}

#[test]
fn mcs_try_lock_excludes_a_locker() {
    check(Preemptions::Unbounded, || {
        ThreadSlot::set(0);
        let lock = Arc::new(SpinLock::<usize, Mcs>::new(LEVEL, 0));
        let inside = Arc::new(AtomicBool::new(false));
        let (locker_lock, locker_inside) = (lock.clone(), inside.clone());
        let locker = thread::spawn(move || {
            ThreadSlot::set(1);
            count_alone(&mut locker_lock.lock(), &locker_inside);
        });
        // Retried until it gets in, so that loom reaches a `try_lock` after
        // a release, which must see the holder's writes.
        while lock
            .try_lock()
            .map(|mut count| count_alone(&mut count, &inside))
            .is_none()
        {
            thread::yield_now();
        }
        locker.join().unwrap();
        let total = *lock.lock();
        assert_eq!(total, 2, "expected 2 increments, counted {total}");
    });
}
