//! Loom: the condition variable (and its wait queue) under all
//! interleavings: no lost wake-up, FIFO signal order, broadcast wakes all.

use loom::sync::Arc;
use loom::thread;
use std::vec::Vec;

use spinlock::{Level, NoGuard, SpinLock, TicketLock, Untracked};

use super::loom_support::{check, Preemptions};
use crate::{Condvar, LoomBlocking};

type UserLock<T> = SpinLock<T, TicketLock, NoGuard, Untracked>;
const USER_LEVEL: Level = Level::new(6);

/// Whether the signaller holds the user's lock while it signals.
#[derive(Clone, Copy, Debug)]
enum Signalling {
    UnderLock,
    AfterUnlock,
}

/// A waiter waits for a flag that the other thread sets and signals: in no
/// interleaving does the waiter sleep through the signal (loom reports a
/// deadlock if it does).
fn no_lost_wakeup(signalling: Signalling) {
    let shared = Arc::new((UserLock::new(USER_LEVEL, false), Condvar::<LoomBlocking>::new()));
    let setter = {
        let shared = shared.clone();
        thread::spawn(move || {
            let (lock, condvar) = &*shared;
            let mut flag = lock.lock();
            *flag = true;
            if let Signalling::AfterUnlock = signalling {
                drop(flag);
                condvar.signal();
            } else {
                condvar.signal();
                drop(flag);
            }
        })
    };
    let (lock, condvar) = &*shared;
    let flag = condvar.wait_while(lock.lock(), lock, |flag| !*flag);
    assert!(*flag);
    drop(flag);
    setter.join().unwrap();
}

#[test]
fn condvar_never_loses_a_signal_given_under_the_lock() {
    check("condvar signal under lock", Preemptions::Unbounded, || no_lost_wakeup(Signalling::UnderLock));
}

#[test]
fn condvar_never_loses_a_signal_given_after_unlocking() {
    check("condvar signal after unlock", Preemptions::Unbounded, || no_lost_wakeup(Signalling::AfterUnlock));
}

/// What the FIFO model records under the user's lock.
#[derive(Default)]
struct Record {
    /// Waiters in the order they joined the condvar's queue.
    arrived: Vec<usize>,
    /// Waiters in the order they were woken.
    woken: Vec<usize>,
}

/// Two waiters queue in some order; the main thread signals once, waits
/// until the woken one has recorded itself, then signals again. The first
/// woken must be the first arrived.
fn fifo_signal_order() {
    let shared = Arc::new((
        UserLock::new(USER_LEVEL, Record::default()),
        Condvar::<LoomBlocking>::new(),
        Condvar::<LoomBlocking>::new(),
    ));
    let waiters: Vec<_> = (0..2)
        .map(|waiter| {
            let shared = shared.clone();
            thread::spawn(move || {
                let (lock, condvar, progress) = &*shared;
                let mut record = lock.lock();
                record.arrived.push(waiter);
                progress.signal();
                let mut record = condvar.wait(record, lock);
                record.woken.push(waiter);
                progress.signal();
            })
        })
        .collect();
    let (lock, condvar, progress) = &*shared;
    let record = progress.wait_while(lock.lock(), lock, |record| record.arrived.len() < 2);
    drop(record);
    assert!(condvar.signal());
    let record = progress.wait_while(lock.lock(), lock, |record| record.woken.is_empty());
    assert_eq!(record.woken[0], record.arrived[0], "the first signal woke the second waiter");
    drop(record);
    assert!(condvar.signal());
    waiters.into_iter().for_each(|waiter| waiter.join().unwrap());
    assert_eq!(lock.lock().woken.len(), 2);
}

#[test]
fn condvar_signals_waiters_in_arrival_order() {
    check("condvar FIFO, 3 threads", Preemptions::AtMost(1), fifo_signal_order);
}

/// Two waiters wait for a flag; one broadcast after setting it wakes both.
fn broadcast_wakes_all() {
    let shared = Arc::new((UserLock::new(USER_LEVEL, false), Condvar::<LoomBlocking>::new()));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let shared = shared.clone();
            thread::spawn(move || {
                let (lock, condvar) = &*shared;
                drop(condvar.wait_while(lock.lock(), lock, |open| !*open));
            })
        })
        .collect();
    let (lock, condvar) = &*shared;
    *lock.lock() = true;
    condvar.broadcast();
    waiters.into_iter().for_each(|waiter| waiter.join().unwrap());
}

#[test]
fn condvar_broadcast_wakes_every_waiter() {
    check("condvar broadcast, 3 threads", Preemptions::AtMost(1), broadcast_wakes_all);
}

/// The in-kernel ring test in small: three members pass a token round once
/// through a counter under the user's lock; each waits with `wait_while`
/// until it is its turn, moves the token and broadcasts. A lost wake-up
/// leaves a member waiting forever, which loom reports as a deadlock.
fn broadcast_ring_of_three() {
    const MEMBERS: usize = 3;
    let shared = Arc::new((UserLock::new(USER_LEVEL, 0usize), Condvar::<LoomBlocking>::new()));
    let member = |me: usize, shared: Arc<(UserLock<usize>, Condvar<LoomBlocking>)>| {
        let (lock, condvar) = &*shared;
        let mut turn = condvar.wait_while(lock.lock(), lock, |turn| *turn != me);
        *turn += 1;
        drop(turn);
        condvar.broadcast();
    };
    let others: Vec<_> = (1..MEMBERS)
        .map(|me| {
            let shared = shared.clone();
            thread::spawn(move || member(me, shared))
        })
        .collect();
    member(0, shared.clone());
    others.into_iter().for_each(|other| other.join().unwrap());
    assert_eq!(*shared.0.lock(), MEMBERS);
}

#[test]
fn a_broadcast_ring_of_three_never_stalls() {
    check("condvar broadcast ring of three", Preemptions::AtMost(1), broadcast_ring_of_three);
}

/// A waiter waits for a flag nobody sets; a "signal" sets the interruption
/// and unparks the waiter (as `Process::notify` does). The waiter must come
/// back interrupted and leave the queue empty (loom reports a deadlock if
/// it sleeps on). Pipes once checked the interruption and then waited with
/// plain `wait`, so a signal sent while a reader slept was never seen
/// (SIGKILL could not end a process blocked in `read`); loom finds that
/// deadlock, but its deadlock panic aborts the test process instead of
/// unwinding, so that version is not kept as a negative control here:
/// `user/tests/c/deaths.c` is the check that fails with it.
fn interrupted_waiter() {
    let shared = Arc::new((UserLock::new(USER_LEVEL, false), Condvar::<LoomBlocking>::new()));
    let interruption = Arc::new(loom::sync::atomic::AtomicBool::new(false));
    let waiter = {
        let (shared, interruption) = (shared.clone(), interruption.clone());
        thread::spawn(move || {
            let (lock, condvar) = &*shared;
            let interrupted = || interruption.load(loom::sync::atomic::Ordering::Acquire);
            let mut flag = lock.lock();
            loop {
                assert!(!*flag);
                if interrupted() {
                    break;
                }
                let (guard, slept) = condvar.wait_interruptible(flag, lock, &interrupted);
                flag = guard;
                if slept == crate::Slept::Interrupted {
                    break;
                }
            }
            drop(flag);
            assert_eq!(condvar.waiters(), 0, "an interrupted waiter stayed in the queue");
        })
    };
    interruption.store(true, loom::sync::atomic::Ordering::Release);
    waiter.thread().unpark();
    waiter.join().unwrap();
}

#[test]
fn an_interrupted_waiter_always_comes_back_and_leaves_the_queue() {
    check("interruptible wait", Preemptions::Unbounded, || interrupted_waiter());
}
