//! Loom: the ticket lock under all interleavings (bounded preemptions).

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::vec;
use std::vec::Vec;

use super::loom_support::{check, count_alone, Preemptions};
use crate::{Level, RawLock, SpinLock, TicketLock};

const LEVEL: Level = Level::new(1);

/// `threads` threads (the model's own and `threads - 1` spawned) each
/// increment once under the lock; every run ends at the exact total and
/// never finds two threads inside.
fn excludes(first_ticket: u32, threads: usize) {
    let lock = Arc::new(SpinLock::<usize>::with_raw(
        TicketLock::starting_at(first_ticket),
        LEVEL,
        0,
    ));
    let inside = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (1..threads)
        .map(|_| {
            let (lock, inside) = (lock.clone(), inside.clone());
            thread::spawn(move || count_alone(&mut lock.lock(), &inside))
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
fn ticket_lock_excludes_two_threads() {
    check(Preemptions::Unbounded, || excludes(0, 2));
}

#[test]
fn ticket_lock_excludes_three_threads() {
    check(Preemptions::AtMost(1), || excludes(0, 3));
}

/// Threads take tickets with the real step functions of `lock()` and note
/// their place in the order of entry; sorted by ticket (from
/// `first_ticket`, wrapping), the places must be 0, 1, 2, …: whoever took a
/// ticket first entered first.
fn enters_in_ticket_order(first_ticket: u32, threads: usize) {
    let lock = Arc::new(TicketLock::starting_at(first_ticket));
    let entries = Arc::new(AtomicUsize::new(0));
    let enter = |lock: &TicketLock, entries: &AtomicUsize| {
        let ticket = lock.take_ticket();
        while !lock.is_my_turn(ticket) {
            thread::yield_now();
        }
        // Relaxed: an RMW reads the latest count whatever the order, and
        // the places are compared only after the joins.
        let place = entries.fetch_add(1, Ordering::Relaxed);
        lock.release(ticket);
        (ticket, place)
    };
    // The model's own thread takes part: loom explores a model whose own
    // thread only waits in `join` far less efficiently.
    let handles: Vec<_> = (1..threads)
        .map(|_| {
            let (lock, entries) = (lock.clone(), entries.clone());
            thread::spawn(move || enter(&lock, &entries))
        })
        .collect();
    let mut entered = vec![enter(&lock, &entries)];
    entered.extend(handles.into_iter().map(|handle| handle.join().unwrap()));
    entered.sort_by_key(|(ticket, _)| ticket.0.wrapping_sub(first_ticket));
    let places: Vec<usize> = entered.iter().map(|&(_, place)| place).collect();
    let expected: Vec<usize> = (0..threads).collect();
    assert_eq!(
        places, expected,
        "places of entry in ticket order: {entered:?}"
    );
    assert!(!lock.is_locked(), "the lock should be free at the end");
}

#[test]
fn ticket_lock_is_fifo_two_threads() {
    check(Preemptions::Unbounded, || enters_in_ticket_order(0, 2));
}

#[test]
fn ticket_lock_is_fifo() {
    check(Preemptions::AtMost(1), || enters_in_ticket_order(0, 3));
}

#[test]
fn ticket_lock_is_fifo_across_wrap_around_two_threads() {
    // Tickets u32::MAX and 0: mC2's bug let ticket 0 in at once.
    check(Preemptions::Unbounded, || {
        enters_in_ticket_order(u32::MAX, 2)
    });
}

#[test]
fn ticket_lock_is_fifo_across_wrap_around() {
    // Tickets u32::MAX - 1, u32::MAX, 0.
    check(Preemptions::AtMost(1), || {
        enters_in_ticket_order(u32::MAX - 1, 3)
    });
}

#[test]
fn ticket_lock_excludes_across_wrap_around() {
    check(Preemptions::AtMost(1), || excludes(u32::MAX - 1, 3));
}

/// `lockers` threads lock and the model's own thread tries until it gets
/// in; every increment counts once and nobody meets anybody inside. (The
/// retries make loom reach a `try_lock` after a release, which must see
/// the holder's writes.)
fn try_lock_excludes_lockers(lockers: usize) {
    let lock = Arc::new(SpinLock::<usize, TicketLock>::new(LEVEL, 0));
    let inside = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..lockers)
        .map(|_| {
            let (lock, inside) = (lock.clone(), inside.clone());
            thread::spawn(move || count_alone(&mut lock.lock(), &inside))
        })
        .collect();
    while lock
        .try_lock()
        .map(|mut count| count_alone(&mut count, &inside))
        .is_none()
    {
        thread::yield_now();
    }
    handles
        .into_iter()
        .for_each(|handle| handle.join().unwrap());
    let total = *lock.lock();
    assert_eq!(
        total,
        lockers + 1,
        "expected {} increments, counted {total}",
        lockers + 1
    );
}

#[test]
fn ticket_try_lock_excludes_a_locker() {
    check(Preemptions::Unbounded, || try_lock_excludes_lockers(1));
}

#[test]
fn ticket_try_lock_excludes_two_lockers() {
    check(Preemptions::AtMost(1), || try_lock_excludes_lockers(2));
}
