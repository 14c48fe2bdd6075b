//! loom model of the word ring: a sender pushing three two-word messages
//! through two slots (retrying while full) and a receiver taking them;
//! under every interleaving the receiver gets all three, whole (no torn
//! message: both words agree), in order.

use loom::sync::Arc;
use loom::thread;

use super::loom_support::{check, Preemptions};
use crate::WordRing;

#[test]
fn messages_arrive_whole_and_in_order_through_a_small_ring() {
    check("word ring: 3 messages, 2 slots", Preemptions::Unbounded, || {
        let ring: Arc<WordRing<2, 2>> = Arc::new(WordRing::new());
        let sender = ring.clone();
        let sending = thread::spawn(move || {
            for number in 1..=3u64 {
                while sender.try_send(&[number, number * 10]).is_err() {
                    thread::yield_now();
                }
            }
        });
        let mut got = 0;
        while got < 3 {
            match ring.try_receive() {
                Some([number, tens]) => {
                    got += 1;
                    assert_eq!((number, tens), (got, got * 10), "torn or out of order");
                }
                None => thread::yield_now(),
            }
        }
        sending.join().expect("sender");
        assert!(ring.is_empty());
    });
}

#[test]
fn a_sender_parked_on_a_full_ring_is_woken_by_the_receive_that_frees_it() {
    check("word ring: park on full (3 messages, 2 slots), wake on freeing a full ring", Preemptions::Unbounded, || {
        let ring: Arc<WordRing<1, 2>> = Arc::new(WordRing::new());
        let sender = ring.clone();
        let sending = thread::spawn(move || {
            for number in 1..=3u64 {
                while sender.try_send(&[number]).is_err() {
                    thread::park();
                }
            }
        });
        let sender_thread = sending.thread().clone();
        let mut got = 0;
        while got < 3 {
            match ring.try_receive_noting_full() {
                Some(([number], was_full)) => {
                    got += 1;
                    assert_eq!(number, got, "out of order");
                    if was_full {
                        sender_thread.unpark();
                    }
                }
                None => thread::yield_now(),
            }
        }
        sending.join().expect("sender");
    });
}
