//! The simulator's clock: a queue of events ordered by time, ties broken by
//! the order they were scheduled, so that every run is the same run.
//!
//! Must not reorder two events of one time: FIFO channels rely on it.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

struct Entry<E> {
    time: u64,
    sequence: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.sequence) == (other.time, other.sequence)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.time, self.sequence).cmp(&(other.time, other.sequence))
    }
}

/// Events waiting for their time.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    scheduled: u64,
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self { heap: BinaryHeap::new(), scheduled: 0 }
    }

    /// `event` happens at `time`, after every event already scheduled then.
    pub fn schedule(&mut self, time: u64, event: E) {
        self.heap.push(Reverse(Entry { time, sequence: self.scheduled, event }));
        self.scheduled += 1;
    }

    /// The earliest event and its time.
    pub fn next(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|Reverse(entry)| (entry.time, entry.event))
    }

    /// Events scheduled so far.
    pub fn scheduled(&self) -> u64 {
        self.scheduled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_by_time_then_in_the_order_scheduled() {
        let mut queue = EventQueue::new();
        for (time, name) in [(5, "b"), (3, "a"), (5, "c"), (9, "d"), (5, "e")] {
            queue.schedule(time, name);
        }
        let order: Vec<&str> = std::iter::from_fn(|| queue.next()).map(|(_, name)| name).collect();
        assert_eq!(order, ["a", "b", "c", "e", "d"]);
    }
}
