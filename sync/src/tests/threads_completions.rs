//! Completions on std threads: outcomes reach the right waiter whatever
//! the order of completion, slots are reused, stale tickets are refused.

use std::sync::Arc;
use std::thread;
use std::vec::Vec;

use crate::{AllSlotsTaken, Completions, StdBlocking};

#[test]
fn an_outcome_recorded_before_the_wait_is_kept() {
    let completions = Completions::<u32, StdBlocking>::new(2);
    let ticket = completions.begin().unwrap();
    assert!(completions.complete(ticket.number(), 7));
    assert_eq!(completions.wait(ticket), 7);
    assert_eq!(completions.claimed(), 0);
}

#[test]
fn stale_forged_and_double_completions_are_refused() {
    let completions = Completions::<u32, StdBlocking>::new(1);
    assert!(!completions.complete(0, 1), "nobody waits in slot 0");
    assert!(!completions.complete(5, 1), "no slot 5");
    let ticket = completions.begin().unwrap();
    assert_eq!(completions.begin(), Err(AllSlotsTaken));
    assert!(completions.complete(0, 2));
    assert!(!completions.complete(0, 3), "already done: the first outcome stays");
    assert_eq!(completions.wait(ticket), 2);
    let again = completions.begin().unwrap();
    completions.cancel(again);
    assert_eq!(completions.claimed(), 0);
}

#[test]
fn many_waiters_get_their_own_outcomes_completed_in_reverse() {
    let completions = Arc::new(Completions::<usize, StdBlocking>::new(8));
    let (sender, receiver) = std::sync::mpsc::channel();
    let waiters: Vec<_> = (0..8)
        .map(|request| {
            let (completions, sender) = (completions.clone(), sender.clone());
            thread::spawn(move || {
                let ticket = completions.begin().unwrap();
                sender.send((ticket.number(), request)).unwrap();
                assert_eq!(completions.wait(ticket), request * 10);
            })
        })
        .collect();
    let mut issued: Vec<(usize, usize)> = (0..8).map(|_| receiver.recv().unwrap()).collect();
    issued.reverse();
    for (number, request) in issued {
        assert!(completions.complete(number, request * 10));
    }
    waiters.into_iter().for_each(|waiter| waiter.join().unwrap());
    assert_eq!(completions.claimed(), 0);
}
