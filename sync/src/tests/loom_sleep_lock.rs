//! Loom: the sleep lock under all interleavings — operations exclude each
//! other (no update lost), and no thread sleeps through a release (loom
//! reports a deadlock if one does).

use loom::sync::Arc;
use loom::thread;

use spinlock::Level;

use super::loom_support::{check, Preemptions};
use crate::{LoomBlocking, SleepLock};

const LOCK_LEVEL: Level = Level::new(6);

/// `threads` threads each add 1 under the lock `rounds` times; the last
/// read sees every addition.
fn counting(threads: usize, rounds: usize) {
    let lock = Arc::new(SleepLock::<usize, LoomBlocking>::new(LOCK_LEVEL, 0));
    let workers: std::vec::Vec<_> = (0..threads)
        .map(|_| {
            let lock = lock.clone();
            thread::spawn(move || {
                for _ in 0..rounds {
                    lock.with(|count| {
                        let seen = *count;
                        thread::yield_now();
                        *count = seen + 1;
                    });
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|worker| worker.join().unwrap());
    assert_eq!(lock.with(|count| *count), threads * rounds);
}

#[test]
fn sleep_lock_two_holders_lose_nothing() {
    check("sleep lock 2 threads x 1", Preemptions::Unbounded, || counting(2, 1));
}

#[test]
fn sleep_lock_waiters_are_woken_by_every_release() {
    check("sleep lock 2 threads x 2", Preemptions::AtMost(2), || counting(2, 2));
}
