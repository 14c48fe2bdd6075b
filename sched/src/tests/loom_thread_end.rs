//! Loom model of a thread's end (`thread_end.rs`): a waiter that sees the
//! thread exited and then destroys its container finds nothing charged.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p sched --release loom`.

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::loom_support::{check, finds_a_failure, Preemptions};
use crate::thread_end::ThreadEnd;

/// One thread's charge (`THREAD_PAGES` at 64 KiB stacks).
const THREAD_PAGES: u64 = 19;

/// The exiting thread settles with `finish` (or the old order); the waiter
/// polls `has_exited` like `wait_for_exit` and then checks the container
/// the way `destroy` does.
fn model(old_order: bool) {
    let end = Arc::new(ThreadEnd::new());
    let charged = Arc::new(AtomicU64::new(THREAD_PAGES));
    let exiting = {
        let (end, charged) = (end.clone(), charged.clone());
        thread::spawn(move || {
            // Relaxed, as the container counters are: the exit flag orders it.
            let settle = || _ = charged.fetch_sub(THREAD_PAGES, Ordering::Relaxed);
            if old_order {
                end.finish_publishing_first(settle);
            } else {
                end.finish(settle);
            }
        })
    };
    if end.has_exited() {
        assert_eq!(charged.load(Ordering::Relaxed), 0, "a waiter saw the thread exited with its charge still held");
    }
    exiting.join().unwrap();
    assert_eq!(charged.load(Ordering::Relaxed), 0);
}

#[test]
fn a_thread_seen_exited_has_given_its_charge_back() {
    check("thread end", Preemptions::Unbounded, || model(false));
}

#[test]
fn the_model_catches_an_exit_published_before_the_charge_returns() {
    assert!(finds_a_failure(Preemptions::Unbounded, || model(true)), "the model missed the old order's failure");
}
