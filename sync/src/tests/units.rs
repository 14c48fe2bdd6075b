//! Unit tests: single-threaded behaviour, sizes and errors, the lock order.

use std::vec::Vec;

use spinlock::{NoGuard, SpinLock, ThreadLevels, TicketLock};

use crate::spec::{BoundedQueueSpec, ChannelSpec, CondvarSpec, QueueCompletion};
use crate::{BoundedQueue, Channel, Condvar, IpcError, MessageBuffer, StdBlocking, WaitQueue, MAX_MESSAGE_LENGTH};

#[test]
fn bounded_queue_returns_items_in_insertion_order() {
    let queue = BoundedQueue::<u32, StdBlocking, 4>::new();
    (0..4).for_each(|item| queue.insert(item));
    assert_eq!(queue.len(), 4);
    let items: Vec<u32> = (0..4).map(|_| queue.remove()).collect();
    assert_eq!(items, [0, 1, 2, 3]);
    assert!(queue.is_empty());
}

#[test]
fn bounded_queue_wraps_around_its_ring_many_times() {
    let queue = BoundedQueue::<u64, StdBlocking, 3>::new();
    for round in 0..1000u64 {
        queue.insert(round * 2);
        queue.insert(round * 2 + 1);
        assert_eq!((queue.remove(), queue.remove()), (round * 2, round * 2 + 1));
    }
}

#[test]
fn bounded_queue_can_be_a_static() {
    static QUEUE: BoundedQueue<u8, StdBlocking, 2> = BoundedQueue::new();
    QUEUE.insert(7);
    assert_eq!(QUEUE.remove(), 7);
}

#[test]
fn signal_and_wake_with_nobody_waiting_do_nothing() {
    let condvar = Condvar::<StdBlocking>::new();
    assert!(!condvar.signal());
    assert_eq!(condvar.broadcast(), 0);
    let queue = WaitQueue::<StdBlocking>::new();
    assert!(!queue.wake_one());
    assert_eq!(queue.wake_all(), 0);
}

#[test]
fn a_too_long_message_is_an_error_not_a_panic() {
    let channel = Channel::<StdBlocking>::new();
    for length in [MAX_MESSAGE_LENGTH + 1, 2 * MAX_MESSAGE_LENGTH, 1 << 20] {
        let message = std::vec![0u8; length];
        assert_eq!(channel.send(&message), Err(IpcError::TooLong { length }));
    }
    assert_eq!(channel.waiting_senders(), 0, "a refused send leaves nothing behind");
    let error = std::format!("{}", IpcError::TooLong { length: 5000 });
    assert_eq!(error, "message of 5000 bytes is longer than 4096");
}

#[test]
fn a_fresh_message_buffer_holds_an_empty_message() {
    let buffer = MessageBuffer::try_new().expect("the host has a page to spare");
    assert!(buffer.is_empty());
    assert_eq!(buffer.message(), &[] as &[u8]);
}

type UserLock = SpinLock<(), TicketLock, NoGuard, ThreadLevels>;

/// The condvar's queue lock sits at `SYNC_LEVEL` (5): waiting while holding
/// a lock of level 5 or lower breaks the lock order, and debug builds say so.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "lock order violation")]
fn waiting_under_a_lock_not_above_the_sync_level_is_caught() {
    let lock = UserLock::new(crate::SYNC_LEVEL, ());
    let condvar = Condvar::<StdBlocking>::new();
    let guard = lock.lock();
    let _guard = condvar.wait(guard, &lock);
}

#[test]
fn condvar_spec_wakes_in_arrival_order() {
    let mut spec = CondvarSpec::new();
    [3, 1, 2].into_iter().for_each(|thread| spec.wait(thread));
    assert_eq!(spec.signal(), Some(3));
    assert_eq!(spec.broadcast(), [1, 2]);
    assert_eq!(spec.signal(), None);
}

#[test]
fn bounded_queue_spec_serves_a_waiting_inserter_when_room_appears() {
    let mut spec = BoundedQueueSpec::new(1);
    assert_eq!(spec.insert(0, 'a'), [QueueCompletion::Inserted { thread: 0 }]);
    assert!(spec.insert(1, 'b').is_empty(), "the queue is full: thread 1 waits");
    let completed = spec.remove(2);
    assert_eq!(
        completed,
        [QueueCompletion::Removed { thread: 2, item: 'a' }, QueueCompletion::Inserted { thread: 1 }]
    );
    assert_eq!(spec.items().copied().collect::<Vec<_>>(), ['b']);
}

#[test]
fn channel_spec_pairs_oldest_sender_with_next_receiver() {
    let mut spec = ChannelSpec::new();
    assert_eq!(spec.send(0, b"first"), Ok(None));
    assert_eq!(spec.send(1, b"second"), Ok(None));
    let delivery = spec.recv(2).expect("a sender waits");
    assert_eq!((delivery.sender, delivery.receiver, delivery.message.as_slice()), (0, 2, &b"first"[..]));
    assert_eq!(spec.send(3, &[0; 4097]), Err(IpcError::TooLong { length: 4097 }));
}
