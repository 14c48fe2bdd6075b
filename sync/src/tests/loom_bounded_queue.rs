//! Loom: the FIFO bounded buffer queue under all interleavings (bounded
//! preemptions for three threads): FIFO, no loss, no duplication, no
//! deadlock (loom fails a model in which every thread sleeps).

use loom::sync::Arc;
use loom::thread;
use std::vec::Vec;

use super::loom_support::{check, Preemptions};
use crate::{BoundedQueue, LoomBlocking};

/// One producer inserts `1..=items`, the main thread removes them all: they
/// come out in order.
fn one_producer_in_order<const CAPACITY: usize>(items: u32) {
    let queue = Arc::new(BoundedQueue::<u32, LoomBlocking, CAPACITY>::new());
    let producer = {
        let queue = queue.clone();
        thread::spawn(move || (1..=items).for_each(|item| queue.insert(item)))
    };
    let removed: Vec<u32> = (0..items).map(|_| queue.remove()).collect();
    producer.join().unwrap();
    let expected: Vec<u32> = (1..=items).collect();
    assert_eq!(removed, expected, "items out of insertion order");
}

#[test]
fn bounded_queue_of_one_passes_two_items_in_order() {
    check("queue[1] 1→1, 2 items", Preemptions::Unbounded, || one_producer_in_order::<1>(2));
}

#[test]
fn bounded_queue_of_two_passes_three_items_in_order() {
    check("queue[2] 1→1, 3 items", Preemptions::Unbounded, || one_producer_in_order::<2>(3));
}

/// Two producers insert `items` each (producer `p` inserts `p*10+1`,
/// `p*10+2`, …); the main thread removes them all: each exactly once, each
/// producer's in order.
fn two_producers<const CAPACITY: usize>(items: u32) {
    let queue = Arc::new(BoundedQueue::<u32, LoomBlocking, CAPACITY>::new());
    let producers: Vec<_> = (0..2u32)
        .map(|producer| {
            let queue = queue.clone();
            thread::spawn(move || (1..=items).for_each(|item| queue.insert(producer * 10 + item)))
        })
        .collect();
    let removed: Vec<u32> = (0..2 * items).map(|_| queue.remove()).collect();
    producers.into_iter().for_each(|producer| producer.join().unwrap());
    for producer in 0..2 {
        let mine: Vec<u32> = removed.iter().copied().filter(|item| item / 10 == producer).collect();
        let expected: Vec<u32> = (1..=items).map(|item| producer * 10 + item).collect();
        assert_eq!(mine, expected, "producer {producer}'s items: lost, duplicated or reordered in {removed:?}");
    }
}

#[test]
fn bounded_queue_of_one_with_two_producers_loses_and_duplicates_nothing() {
    check("queue[1] 2→1, 1 item each", Preemptions::AtMost(1), || two_producers::<1>(1));
}

#[test]
fn bounded_queue_of_two_with_two_producers_keeps_each_producers_order() {
    check("queue[2] 2→1, 2 items each", Preemptions::AtMost(0), || two_producers::<2>(2));
}

/// The main thread inserts `1..=2*items`; two consumers remove `items`
/// each: together they get every item exactly once, each in increasing
/// order.
fn two_consumers<const CAPACITY: usize>(items: u32) {
    let queue = Arc::new(BoundedQueue::<u32, LoomBlocking, CAPACITY>::new());
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let queue = queue.clone();
            thread::spawn(move || (0..items).map(|_| queue.remove()).collect::<Vec<u32>>())
        })
        .collect();
    (1..=2 * items).for_each(|item| queue.insert(item));
    let mut all = Vec::new();
    for consumer in consumers {
        let got = consumer.join().unwrap();
        assert!(got.windows(2).all(|pair| pair[0] < pair[1]), "a consumer got {got:?}: out of order");
        all.extend(got);
    }
    all.sort_unstable();
    let expected: Vec<u32> = (1..=2 * items).collect();
    assert_eq!(all, expected, "items lost or duplicated");
}

#[test]
fn bounded_queue_of_one_with_two_consumers_loses_and_duplicates_nothing() {
    check("queue[1] 1→2, 1 item each", Preemptions::AtMost(1), || two_consumers::<1>(1));
}

#[test]
fn bounded_queue_of_two_with_two_consumers_keeps_fifo() {
    check("queue[2] 1→2, 2 items each", Preemptions::AtMost(0), || two_consumers::<2>(2));
}
