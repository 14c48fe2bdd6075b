//! Loom: the synchronous channel under all interleavings: rendezvous,
//! exactly-once delivery, order, and round trips.

use loom::sync::Arc;
use loom::thread;
use std::vec::Vec;

use super::loom_support::{check, Preemptions};
use crate::{Channel, LoomBlocking, MessageBuffer};

/// A sender sends two messages (one empty); the main thread receives both,
/// in order and intact.
fn send_then_receive() {
    let channel = Arc::new(Channel::<LoomBlocking>::new());
    let sender = {
        let channel = channel.clone();
        thread::spawn(move || {
            channel.send(b"abc").unwrap();
            channel.send(b"").unwrap();
        })
    };
    let mut buffer = MessageBuffer::new();
    assert_eq!(channel.recv(&mut buffer), Ok(3));
    assert_eq!(buffer.message(), b"abc");
    assert_eq!(channel.recv(&mut buffer), Ok(0));
    sender.join().unwrap();
}

#[test]
fn channel_delivers_two_messages_in_order() {
    check("channel 1→1, 2 messages", Preemptions::AtMost(3), send_then_receive);
}

/// Two senders send one message each; the main thread receives two: each
/// message exactly once.
fn two_senders_one_receiver() {
    let channel = Arc::new(Channel::<LoomBlocking>::new());
    let senders: Vec<_> = [b"first", b"other"]
        .into_iter()
        .map(|message| {
            let channel = channel.clone();
            thread::spawn(move || channel.send(message).unwrap())
        })
        .collect();
    let mut buffer = MessageBuffer::new();
    let mut got: Vec<Vec<u8>> = (0..2)
        .map(|_| {
            channel.recv(&mut buffer).unwrap();
            buffer.message().to_vec()
        })
        .collect();
    senders.into_iter().for_each(|sender| sender.join().unwrap());
    got.sort();
    assert_eq!(got, [b"first".to_vec(), b"other".to_vec()], "a message lost or duplicated");
}

#[test]
fn channel_with_two_senders_delivers_each_message_once() {
    check("channel 2→1", Preemptions::AtMost(1), two_senders_one_receiver);
}

/// A client calls a server that answers on a reply channel. (Every
/// interleaving is 976,379 executions and 57 s; three preemptions cover
/// the races of one send meeting one receive on each channel.)
fn round_trip() {
    let requests = Arc::new(Channel::<LoomBlocking>::new());
    let replies = Arc::new(Channel::<LoomBlocking>::new());
    let server = {
        let (requests, replies) = (requests.clone(), replies.clone());
        thread::spawn(move || {
            let mut buffer = MessageBuffer::new();
            requests.recv(&mut buffer).unwrap();
            let answer: Vec<u8> = buffer.message().iter().map(|byte| byte + 1).collect();
            replies.send(&answer).unwrap();
        })
    };
    let mut reply = MessageBuffer::new();
    assert_eq!(requests.call(&[1, 2], &replies, &mut reply), Ok(2));
    assert_eq!(reply.message(), [2, 3]);
    server.join().unwrap();
}

#[test]
fn channel_call_gets_its_reply() {
    check("channel round trip", Preemptions::AtMost(3), round_trip);
}
