//! The word ring under real threads: 100,000 messages through 4 slots
//! arrive whole and in order, and a full ring refuses without losing the
//! message.

use std::sync::Arc;
use std::thread;

use crate::{RingFull, WordRing};

#[test]
fn a_full_ring_refuses_and_keeps_its_order() {
    let ring: WordRing<3, 2> = WordRing::new();
    assert_eq!(ring.try_send(&[1, 2, 3]), Ok(()));
    assert_eq!(ring.try_send(&[4, 5, 6]), Ok(()));
    assert_eq!(ring.try_send(&[7, 8, 9]), Err(RingFull));
    assert_eq!(ring.len(), 2);
    assert_eq!(ring.try_receive(), Some([1, 2, 3]));
    assert_eq!(ring.try_send(&[7, 8, 9]), Ok(()));
    assert_eq!(ring.try_receive(), Some([4, 5, 6]));
    assert_eq!(ring.try_receive(), Some([7, 8, 9]));
    assert_eq!(ring.try_receive(), None);
}

#[test]
fn a_hundred_thousand_messages_cross_threads_whole_and_in_order() {
    const COUNT: u64 = 100_000;
    let ring: Arc<WordRing<4, 4>> = Arc::new(WordRing::new());
    let sender = ring.clone();
    let sending = thread::spawn(move || {
        for number in 0..COUNT {
            let message = [number, !number, number.rotate_left(7), number ^ 0x5555];
            while sender.try_send(&message).is_err() {
                std::hint::spin_loop();
            }
        }
    });
    let mut next = 0;
    while next < COUNT {
        if let Some(message) = ring.try_receive() {
            assert_eq!(message, [next, !next, next.rotate_left(7), next ^ 0x5555]);
            next += 1;
        }
    }
    sending.join().expect("sender");
}
