//! Loom: completions under all interleavings — the waiter never sleeps
//! through its outcome, whether it comes before, during or after the wait,
//! and two requests completed in either order each reach their own waiter.

use loom::sync::Arc;
use loom::thread;

use super::loom_support::{check, Preemptions};
use crate::{Completions, LoomBlocking};

/// One request: the finisher (another thread, as an interrupt handler
/// would be) completes it while the requester waits.
fn one_request() {
    let completions = Arc::new(Completions::<u32, LoomBlocking>::new(1));
    let ticket = completions.begin().unwrap();
    let number = ticket.number();
    let finisher = {
        let completions = completions.clone();
        thread::spawn(move || assert!(completions.complete(number, 42)))
    };
    assert_eq!(completions.wait(ticket), 42);
    finisher.join().unwrap();
    assert_eq!(completions.claimed(), 0);
}

#[test]
fn completions_never_lose_an_outcome_or_a_wakeup() {
    check("completions one request", Preemptions::Unbounded, one_request);
}

/// Two requesters (the second claims slot 1, the first having slot 0);
/// one finisher completes the second first, retrying until it has claimed.
fn two_requests() {
    let completions = Arc::new(Completions::<u32, LoomBlocking>::new(2));
    let first = completions.begin().unwrap();
    assert_eq!(first.number(), 0);
    let second_requester = {
        let completions = completions.clone();
        thread::spawn(move || {
            let ticket = completions.begin().unwrap();
            assert_eq!(completions.wait(ticket), 2);
        })
    };
    let finisher = {
        let completions = completions.clone();
        thread::spawn(move || {
            while !completions.complete(1, 2) {
                thread::yield_now();
            }
            assert!(completions.complete(0, 1));
        })
    };
    assert_eq!(completions.wait(first), 1);
    second_requester.join().unwrap();
    finisher.join().unwrap();
}

#[test]
fn completions_reach_their_own_waiters_in_any_order() {
    check("completions two requests", Preemptions::AtMost(1), two_requests);
}
