//! Std-thread tests of `BoundedQueue`: many producers and consumers.

use super::serial::one_at_a_time;
use std::sync::Arc;
use std::thread;
use std::vec::Vec;

use crate::{BoundedQueue, StdBlocking};

const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const ITEMS_PER_PRODUCER: u32 = 10_000;

/// An item: who made it and its number in that producer's sequence.
type Item = (usize, u32);

/// Runs the producers and consumers through one queue; returns what each
/// consumer removed, in order.
fn exchange<const CAPACITY: usize>() -> Vec<Vec<Item>> {
    let queue = Arc::new(BoundedQueue::<Item, StdBlocking, CAPACITY>::new());
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|producer| {
            let queue = queue.clone();
            thread::spawn(move || (0..ITEMS_PER_PRODUCER).for_each(|number| queue.insert((producer, number))))
        })
        .collect();
    let per_consumer = PRODUCERS * ITEMS_PER_PRODUCER as usize / CONSUMERS;
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let queue = queue.clone();
            thread::spawn(move || (0..per_consumer).map(|_| queue.remove()).collect::<Vec<Item>>())
        })
        .collect();
    producers.into_iter().for_each(|producer| producer.join().unwrap());
    let removed = consumers.into_iter().map(|consumer| consumer.join().unwrap()).collect();
    assert!(queue.is_empty(), "items left behind");
    removed
}

/// Every item exactly once, and each consumer saw each producer's items in
/// the order they were made (the queue is FIFO).
fn check_exchange(removed: &[Vec<Item>]) {
    let mut seen = std::vec![std::vec![false; ITEMS_PER_PRODUCER as usize]; PRODUCERS];
    for (consumer, items) in removed.iter().enumerate() {
        let mut last = [None::<u32>; PRODUCERS];
        for &(producer, number) in items {
            let slot = &mut seen[producer][number as usize];
            assert!(!*slot, "item {number} of producer {producer} removed twice");
            *slot = true;
            let previous = last[producer].replace(number);
            assert!(
                previous.is_none_or(|previous| previous < number),
                "consumer {consumer} got item {number} of producer {producer} after item {previous:?}"
            );
        }
    }
    for (producer, items) in seen.iter().enumerate() {
        let missing = items.iter().filter(|seen| !**seen).count();
        assert_eq!(missing, 0, "{missing} items of producer {producer} were lost");
    }
}

#[test]
fn four_producers_and_four_consumers_exchange_every_item_once_in_order_through_eight_slots() {
    let _turn = one_at_a_time();
    check_exchange(&exchange::<8>());
}

#[test]
fn four_producers_and_four_consumers_exchange_every_item_once_in_order_through_one_slot() {
    let _turn = one_at_a_time();
    check_exchange(&exchange::<1>());
}
