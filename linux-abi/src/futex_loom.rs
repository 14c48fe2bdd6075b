//! loom models of the futex protocol the kernel runs over [`FutexQueue`]
//! (`linux-objects/src/futexes.rs`): a waiter joins the queue *before*
//! it reads the word, a waker changes the word *before* it wakes. Every
//! interleaving ends with the waiter awake (loom reports a thread parked
//! forever as a deadlock); the model of the opposite order finds the lost
//! wake-up, which shows the check has teeth.
//!
//! The wake fast path: the kernel publishes how many threads are queued
//! (`futexes::QUEUED`, stored under the table's lock after every change)
//! and a wake that reads 0 returns without the lock. Its models: the waiter
//! publishes its join and fences before it reads the word; the waker fences
//! between its change of the word and its read of the count (a Dekker
//! pair: one of the two reads sees the other's write). Without the waker's
//! fence the model finds the waiter asleep with nobody to wake it.

use loom::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread::{self, Thread};

use crate::futex::{FutexKey, FutexQueue, MATCH_ANY};

const WORD: FutexKey = FutexKey::Private { space: 1, address: 0x1000 };
const OTHER: FutexKey = FutexKey::Private { space: 1, address: 0x2000 };

struct Shared {
    word: AtomicU32,
    queue: Mutex<FutexQueue<Thread>>,
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared { word: AtomicU32::new(0), queue: Mutex::new(FutexQueue::new()) })
}

fn is_me(thread: &Thread) -> bool {
    thread.id() == thread::current().id()
}

/// The kernel's `futexes::wait` with "wait while the word is 0".
fn wait_while_zero(shared: &Shared, join_first: bool) {
    if join_first {
        shared.queue.lock().unwrap().join(WORD, MATCH_ANY, thread::current()).unwrap();
        if shared.word.load(Ordering::SeqCst) != 0 {
            shared.queue.lock().unwrap().leave(is_me);
            return;
        }
    } else {
        // The wrong order: read, then join.
        if shared.word.load(Ordering::SeqCst) != 0 {
            return;
        }
        shared.queue.lock().unwrap().join(WORD, MATCH_ANY, thread::current()).unwrap();
    }
    while shared.queue.lock().unwrap().is_waiting(is_me) {
        thread::park();
    }
}

fn unpark_all(threads: alloc::vec::Vec<Thread>) {
    for thread in threads {
        thread.unpark();
    }
}

/// A waiter waiting while the word is 0, and the word set to 1 (the
/// waker's first step); the caller wakes.
fn waiter_and_changed_word() -> (Arc<Shared>, thread::JoinHandle<()>) {
    let state = shared();
    let waiter = {
        let state = state.clone();
        thread::spawn(move || wait_while_zero(&state, true))
    };
    state.word.store(1, Ordering::SeqCst);
    (state, waiter)
}

#[test]
fn a_wake_after_the_word_changes_is_never_lost() {
    loom::model(|| {
        let (state, waiter) = waiter_and_changed_word();
        let woken = state.queue.lock().unwrap().wake(WORD, 1, MATCH_ANY).unwrap();
        unpark_all(woken);
        waiter.join().unwrap();
        assert_eq!(state.queue.lock().unwrap().waiting_on(WORD), 0);
    });
}

#[test]
fn a_requeued_waiter_is_woken_on_its_new_word() {
    loom::model(|| {
        let (state, waiter) = waiter_and_changed_word();
        let (woken, _moved) = state.queue.lock().unwrap().requeue(WORD, OTHER, 0, 1);
        unpark_all(woken);
        let woken = state.queue.lock().unwrap().wake(OTHER, 1, MATCH_ANY).unwrap();
        unpark_all(woken);
        // A waiter that had not joined yet sees the word changed instead.
        waiter.join().unwrap();
    });
}

/// The waiter's decision alone (no parking): `true` when it would sleep.
fn decides_to_sleep(shared: &Shared, join_first: bool) -> bool {
    if join_first {
        shared.queue.lock().unwrap().join(WORD, MATCH_ANY, thread::current()).unwrap();
        let sleeps = shared.word.load(Ordering::SeqCst) == 0;
        if !sleeps {
            shared.queue.lock().unwrap().leave(is_me);
        }
        sleeps
    } else {
        let sleeps = shared.word.load(Ordering::SeqCst) == 0;
        if sleeps {
            shared.queue.lock().unwrap().join(WORD, MATCH_ANY, thread::current()).unwrap();
        }
        sleeps
    }
}

/// After the waker is done, a waiter that sleeps must have been taken out
/// of the queue (woken); one still queued would sleep forever.
fn check_no_sleeper_left(join_first: bool) {
    loom::model(move || {
        let state = shared();
        let waiter = {
            let state = state.clone();
            thread::spawn(move || decides_to_sleep(&state, join_first))
        };
        state.word.store(1, Ordering::SeqCst);
        let _woken = state.queue.lock().unwrap().wake(WORD, 1, MATCH_ANY).unwrap();
        let sleeps = waiter.join().unwrap();
        let still_queued = state.queue.lock().unwrap().waiting_on(WORD) > 0;
        assert!(!(sleeps && still_queued), "a waiter sleeps with no wake to come");
    });
}

#[test]
fn joining_before_reading_leaves_no_sleeper_behind() {
    check_no_sleeper_left(true);
}

#[test]
#[should_panic(expected = "a waiter sleeps with no wake to come")]
fn reading_the_word_before_joining_loses_a_wake() {
    check_no_sleeper_left(false);
}

/// The fast path's state: the table, its published count, the word.
struct Published {
    word: AtomicU32,
    queue: Mutex<FutexQueue<Thread>>,
    queued: AtomicUsize,
}

/// The kernel's `futexes::wait` decision over the published count: joins,
/// publishes, fences, then reads the word (plain memory: Relaxed here).
fn decides_to_sleep_published(shared: &Published) -> bool {
    {
        let mut queue = shared.queue.lock().unwrap();
        queue.join(WORD, MATCH_ANY, thread::current()).unwrap();
        shared.queued.store(queue.queued(), Ordering::SeqCst);
    }
    fence(Ordering::SeqCst);
    let sleeps = shared.word.load(Ordering::Relaxed) == 0;
    if !sleeps {
        let mut queue = shared.queue.lock().unwrap();
        queue.leave(is_me);
        shared.queued.store(queue.queued(), Ordering::SeqCst);
    }
    sleeps
}

/// A waker that changed the word (a plain user store: Relaxed) and then
/// reads the published count, with or without the fence between.
fn check_fast_wake(waker_fences: bool) {
    loom::model(move || {
        let state = Arc::new(Published { word: AtomicU32::new(0), queue: Mutex::new(FutexQueue::new()), queued: AtomicUsize::new(0) });
        let waiter = {
            let state = state.clone();
            thread::spawn(move || decides_to_sleep_published(&state))
        };
        state.word.store(1, Ordering::Relaxed);
        if waker_fences {
            fence(Ordering::SeqCst);
        }
        if state.queued.load(Ordering::Relaxed) != 0 {
            let mut queue = state.queue.lock().unwrap();
            let _woken = queue.wake(WORD, 1, MATCH_ANY).unwrap();
            state.queued.store(queue.queued(), Ordering::SeqCst);
        }
        let sleeps = waiter.join().unwrap();
        let still_queued = state.queue.lock().unwrap().waiting_on(WORD) > 0;
        assert!(!(sleeps && still_queued), "a waiter sleeps with no wake to come");
    });
}

#[test]
fn a_wake_that_skips_the_lock_on_a_zero_count_loses_no_waiter() {
    check_fast_wake(true);
}

#[test]
#[should_panic(expected = "a waiter sleeps with no wake to come")]
fn without_the_wakers_fence_the_count_can_miss_a_waiter() {
    check_fast_wake(false);
}
