//! Std-thread tests of `Channel`: round trips of every size, many senders.

use super::serial::one_at_a_time;
use std::sync::Arc;
use std::thread;
use std::vec::Vec;

use crate::{Channel, MessageBuffer, StdBlocking, MAX_MESSAGE_LENGTH};

/// The reply the echo server makes: the request reversed.
fn reply_to(request: &[u8]) -> Vec<u8> {
    request.iter().rev().copied().collect()
}

/// A request of `length` bytes that no other length produces.
fn request(length: usize) -> Vec<u8> {
    (0..length).map(|index| (index * 7 + length) as u8).collect()
}

/// A client `call`s with every size from 0 to 4096 bytes; a server on
/// another thread replies with the request reversed.
#[test]
fn round_trips_of_every_size_from_0_to_4096_bytes() {
    let _turn = one_at_a_time();
    let requests = Arc::new(Channel::<StdBlocking>::new());
    let replies = Arc::new(Channel::<StdBlocking>::new());
    let server = {
        let (requests, replies) = (requests.clone(), replies.clone());
        thread::spawn(move || {
            let mut buffer = MessageBuffer::new();
            for _ in 0..=MAX_MESSAGE_LENGTH {
                requests.recv(&mut buffer).unwrap();
                replies.send(&reply_to(buffer.message())).unwrap();
            }
        })
    };
    let mut reply = MessageBuffer::new();
    for length in 0..=MAX_MESSAGE_LENGTH {
        let request = request(length);
        let got = requests.call(&request, &replies, &mut reply).unwrap();
        assert_eq!(got, length, "reply length");
        assert!(reply.message() == reply_to(&request).as_slice(), "wrong reply to the {length}-byte request");
    }
    server.join().unwrap();
}

/// Four senders, two receivers, 2,000 messages each: every message arrives
/// exactly once, and each receiver sees each sender's messages in order.
#[test]
fn many_senders_and_receivers_deliver_every_message_once_in_order() {
    let _turn = one_at_a_time();
    const SENDERS: usize = 4;
    const RECEIVERS: usize = 2;
    const MESSAGES: u32 = 2_000;
    let channel = Arc::new(Channel::<StdBlocking>::new());
    let senders: Vec<_> = (0..SENDERS)
        .map(|sender| {
            let channel = channel.clone();
            thread::spawn(move || {
                for number in 0..MESSAGES {
                    let mut message = std::vec![sender as u8];
                    message.extend_from_slice(&number.to_le_bytes());
                    message.resize(5 + (number as usize % 64), 0xAB);
                    channel.send(&message).unwrap();
                }
            })
        })
        .collect();
    let per_receiver = SENDERS * MESSAGES as usize / RECEIVERS;
    let receivers: Vec<_> = (0..RECEIVERS)
        .map(|_| {
            let channel = channel.clone();
            thread::spawn(move || {
                let mut buffer = MessageBuffer::new();
                (0..per_receiver)
                    .map(|_| {
                        channel.recv(&mut buffer).unwrap();
                        let message = buffer.message();
                        let number = u32::from_le_bytes(message[1..5].try_into().unwrap());
                        assert_eq!(message.len(), 5 + (number as usize % 64), "message length");
                        (message[0] as usize, number)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    senders.into_iter().for_each(|sender| sender.join().unwrap());
    let mut seen = std::vec![std::vec![false; MESSAGES as usize]; SENDERS];
    for receiver in receivers {
        let mut last = [None::<u32>; SENDERS];
        for (sender, number) in receiver.join().unwrap() {
            assert!(!seen[sender][number as usize], "message {number} of sender {sender} delivered twice");
            seen[sender][number as usize] = true;
            let previous = last[sender].replace(number);
            assert!(previous.is_none_or(|previous| previous < number), "sender {sender}'s messages out of order");
        }
    }
    assert!(seen.iter().flatten().all(|delivered| *delivered), "a message was lost");
}
