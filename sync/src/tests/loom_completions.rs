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

/// Two requesters; one finisher completes the second-issued first.
fn two_requests() {
    let completions = Arc::new(Completions::<u32, LoomBlocking>::new(2));
    let first = completions.begin().unwrap();
    let (sender, receiver) = loom::sync::mpsc::channel();
    let second_requester = {
        let completions = completions.clone();
        thread::spawn(move || {
            let ticket = completions.begin().unwrap();
            sender.send(ticket.number()).unwrap();
            assert_eq!(completions.wait(ticket), 2);
        })
    };
    let first_number = first.number();
    let finisher = {
        let completions = completions.clone();
        thread::spawn(move || {
            let second_number = receiver.recv().unwrap();
            assert!(completions.complete(second_number, 2));
            assert!(completions.complete(first_number, 1));
        })
    };
    assert_eq!(completions.wait(first), 1);
    second_requester.join().unwrap();
    finisher.join().unwrap();
}

#[test]
fn completions_reach_their_own_waiters_in_any_order() {
    check("completions two requests", Preemptions::AtMost(3), two_requests);
}
