//! Std-thread tests of `Condvar`: FIFO wake order, no lost wake-up.

use super::serial::one_at_a_time;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use std::vec::Vec;

use spinlock::{Level, NoGuard, SpinLock, ThreadLevels, TicketLock};

use crate::{Condvar, StdBlocking};

type UserLock<T> = SpinLock<T, TicketLock, NoGuard, ThreadLevels>;
const USER_LEVEL: Level = Level::new(6);

/// Spins (yielding) until `done`, for at most ten seconds.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::yield_now();
    }
}

/// Waiters arrive one by one; each signal wakes the one that came first,
/// seen by who records itself before the next signal goes out.
#[test]
fn signal_wakes_waiters_in_arrival_order() {
    let _turn = one_at_a_time();
    const WAITERS: usize = 6;
    let shared = Arc::new((UserLock::new(USER_LEVEL, Vec::new()), Condvar::<StdBlocking>::new()));
    let mut threads = Vec::new();
    for waiter in 0..WAITERS {
        let mine = shared.clone();
        threads.push(thread::spawn(move || {
            let (lock, condvar) = &*mine;
            let guard = lock.lock();
            let mut guard = condvar.wait(guard, lock);
            guard.push(waiter);
        }));
        wait_for("the waiter to queue", || shared.1.waiters() == waiter + 1);
    }
    for signalled in 1..=WAITERS {
        assert!(shared.1.signal());
        wait_for("the woken waiter", || shared.0.lock().len() == signalled);
    }
    threads.into_iter().for_each(|thread| thread.join().unwrap());
    let order = shared.0.lock().clone();
    let expected: Vec<usize> = (0..WAITERS).collect();
    assert_eq!(order, expected, "expected wake order {expected:?}, saw {order:?}");
}

/// Two threads pass a turn back and forth 5,000 times, each signalling the
/// other after changing the condition: a lost wake-up would hang it.
#[test]
fn ping_pong_through_one_condvar_never_loses_a_wakeup() {
    let _turn = one_at_a_time();
    const ROUNDS: u64 = 5_000;
    let shared = Arc::new((UserLock::new(USER_LEVEL, 0u64), Condvar::<StdBlocking>::new()));
    let players: Vec<_> = (0..2u64)
        .map(|side| {
            let shared = shared.clone();
            thread::spawn(move || {
                let (lock, condvar) = &*shared;
                for round in 0..ROUNDS {
                    let guard = lock.lock();
                    let mut turn = condvar.wait_while(guard, lock, |turn| *turn != round * 2 + side);
                    *turn += 1;
                    condvar.broadcast();
                }
            })
        })
        .collect();
    players.into_iter().for_each(|player| player.join().unwrap());
    assert_eq!(*shared.0.lock(), ROUNDS * 2);
}

/// Many threads wait for one flag; one broadcast releases them all.
#[test]
fn broadcast_releases_every_waiter() {
    let _turn = one_at_a_time();
    const WAITERS: usize = 8;
    let shared = Arc::new((UserLock::new(USER_LEVEL, false), Condvar::<StdBlocking>::new()));
    let threads: Vec<_> = (0..WAITERS)
        .map(|_| {
            let shared = shared.clone();
            thread::spawn(move || {
                let (lock, condvar) = &*shared;
                drop(condvar.wait_while(lock.lock(), lock, |open| !*open));
            })
        })
        .collect();
    wait_for("every waiter to queue", || shared.1.waiters() == WAITERS);
    *shared.0.lock() = true;
    assert_eq!(shared.1.broadcast(), WAITERS);
    threads.into_iter().for_each(|thread| thread.join().unwrap());
}
