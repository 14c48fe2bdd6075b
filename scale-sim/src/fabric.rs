//! The channels between kernels: per ordered pair, a bounded number of
//! message slots (SemperOS's in-flight limit), FIFO, and the messages that
//! wait at the sender for a slot, in order.
//!
//! Must never reorder a pair's messages, hold more than `slots` in flight
//! on a pair, or drop one: the counters let every run check all three.

use std::collections::VecDeque;

use caps::distributed::Message;

/// What one ordered pair of kernels has in flight and waiting.
#[derive(Default)]
struct Pair {
    in_flight: usize,
    waiting: VecDeque<Message>,
}

/// All pairs' channels.
pub struct Fabric {
    kernels: usize,
    slots: usize,
    pairs: Vec<Pair>,
    /// Messages sent and taken, and the most ever in flight on a pair.
    pub sent: u64,
    pub taken: u64,
    pub most_in_flight: usize,
}

impl Fabric {
    pub fn new(kernels: usize, slots: usize) -> Self {
        Self { kernels, slots, pairs: (0..kernels * kernels).map(|_| Pair::default()).collect(), sent: 0, taken: 0, most_in_flight: 0 }
    }

    fn pair(&mut self, from: usize, to: usize) -> &mut Pair {
        &mut self.pairs[from * self.kernels + to]
    }

    /// `message` from `from` to `to`: `Some` when it takes a slot now
    /// (deliver it), `None` when it waits for one at the sender.
    pub fn send(&mut self, from: usize, to: usize, message: Message) -> Option<Message> {
        self.sent += 1;
        let slots = self.slots;
        let pair = self.pair(from, to);
        if pair.in_flight < slots && pair.waiting.is_empty() {
            pair.in_flight += 1;
            let in_flight = pair.in_flight;
            self.most_in_flight = self.most_in_flight.max(in_flight);
            Some(message)
        } else {
            pair.waiting.push_back(message);
            None
        }
    }

    /// The receiver took a message of the pair from its slot: the slot is
    /// free, and the next waiting message (to deliver now) takes it.
    pub fn take(&mut self, from: usize, to: usize) -> Option<Message> {
        self.taken += 1;
        let pair = self.pair(from, to);
        pair.in_flight -= 1;
        let next = pair.waiting.pop_front()?;
        pair.in_flight += 1;
        Some(next)
    }

    /// Messages sent and not yet taken by their receiver.
    pub fn outstanding(&self) -> u64 {
        self.sent - self.taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caps::distributed::{CapKey, KernelId};

    fn unlink(index: u32) -> Message {
        let key = CapKey { kernel: KernelId(0), index };
        Message::Unlink { parent: key, child: key }
    }

    #[test]
    fn a_full_pair_keeps_its_messages_in_order_until_slots_free() {
        let mut fabric = Fabric::new(2, 2);
        assert_eq!(fabric.send(0, 1, unlink(0)), Some(unlink(0)));
        assert_eq!(fabric.send(0, 1, unlink(1)), Some(unlink(1)));
        assert_eq!(fabric.send(0, 1, unlink(2)), None);
        assert_eq!(fabric.send(0, 1, unlink(3)), None);
        // Another pair is not held up.
        assert_eq!(fabric.send(1, 0, unlink(9)), Some(unlink(9)));
        assert_eq!(fabric.take(0, 1), Some(unlink(2)));
        assert_eq!(fabric.take(0, 1), Some(unlink(3)));
        assert_eq!(fabric.take(0, 1), None);
        assert_eq!(fabric.take(0, 1), None);
        assert_eq!(fabric.take(1, 0), None);
        assert_eq!((fabric.outstanding(), fabric.most_in_flight), (0, 2));
    }
}
