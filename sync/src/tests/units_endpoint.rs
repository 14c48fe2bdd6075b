//! `Endpoint` on std threads: what the refinement test leaves out —
//! interruption, closing, a dropped answer, the `Meeting` `on_match` sees.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::{Endpoint, EndpointError, Mailbox, Meeting, StdBlocking};

type TestEndpoint = Endpoint<u64, StdBlocking>;

fn mailbox(owner: u64) -> Arc<Mailbox<u64, StdBlocking>> {
    Arc::new(Mailbox::new(owner))
}

/// Waits until `endpoint` has `senders` senders and `receivers` receivers waiting.
fn wait_for(endpoint: &TestEndpoint, waiting: (usize, usize)) {
    while endpoint.waiting() != waiting {
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_call_gets_the_answer_and_on_match_sees_the_receiver() {
    let endpoint = Arc::new(TestEndpoint::new());
    let server = {
        let endpoint = endpoint.clone();
        thread::spawn(move || {
            let me = mailbox(77);
            let received = endpoint.recv(&me, None, |_, _| {}, || false).unwrap();
            let reply = received.reply.expect("a call's message comes with its way back");
            assert!(reply.reply(received.message * 2));
        })
    };
    wait_for(&endpoint, (0, 1));
    let me = mailbox(1);
    let mut seen = None;
    let answer = endpoint.call(&me, 21, |message, meeting| {
        seen = Some(meeting);
        *message += 1;
    }, || false);
    assert_eq!(answer, Ok(44), "on_match may change the message before it arrives");
    assert_eq!(seen, Some(Meeting { sender: 1, receiver: 77 }), "the caller arrived second: its on_match ran");
    server.join().unwrap();
}

#[test]
fn a_dropped_answer_fails_the_call_with_no_reply() {
    let endpoint = Arc::new(TestEndpoint::new());
    let caller = {
        let endpoint = endpoint.clone();
        thread::spawn(move || endpoint.call(&mailbox(1), 5, |_, _| {}, || false))
    };
    wait_for(&endpoint, (1, 0));
    let received = endpoint.recv(&mailbox(2), None, |_, _| {}, || false).unwrap();
    assert_eq!(received.message, 5);
    drop(received.reply);
    assert_eq!(caller.join().unwrap(), Err(EndpointError::NoReply));
}

#[test]
fn an_interrupted_receiver_leaves_the_queue() {
    let endpoint = Arc::new(TestEndpoint::new());
    let stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (endpoint, stop) = (endpoint.clone(), stop.clone());
        thread::spawn(move || endpoint.recv(&mailbox(1), None, |_, _| {}, || stop.load(Ordering::SeqCst)).map(|got| got.message))
    };
    wait_for(&endpoint, (0, 1));
    stop.store(true, Ordering::SeqCst);
    receiver.thread().unpark();
    assert_eq!(receiver.join().unwrap(), Err(EndpointError::Interrupted));
    assert_eq!(endpoint.waiting(), (0, 0), "the interrupted receive is off the queue");
}

#[test]
fn an_interrupted_caller_gives_up_and_a_late_answer_is_dropped() {
    let endpoint = Arc::new(TestEndpoint::new());
    let stop = Arc::new(AtomicBool::new(false));
    let caller = {
        let (endpoint, stop) = (endpoint.clone(), stop.clone());
        thread::spawn(move || {
            // A mailbox wakes the thread that made it.
            let me = mailbox(1);
            let first = endpoint.call(&me, 1, |_, _| {}, || stop.load(Ordering::SeqCst));
            // The mailbox's next operation must not see the late answer.
            (first, endpoint.call(&me, 2, |_, _| {}, || false))
        })
    };
    wait_for(&endpoint, (1, 0));
    let server = mailbox(2);
    let first = endpoint.recv(&server, None, |_, _| {}, || false).unwrap();
    stop.store(true, Ordering::SeqCst);
    caller.thread().unpark();
    wait_for(&endpoint, (1, 0));
    // Answering the abandoned call delivers nothing; the next one is served.
    assert!(!first.reply.expect("a call").reply(100));
    let second = endpoint.recv(&server, None, |_, _| {}, || false).unwrap();
    assert_eq!(second.message, 2);
    assert!(second.reply.expect("a call").reply(200));
    assert_eq!(caller.join().unwrap(), (Err(EndpointError::Interrupted), Ok(200)));
}

#[test]
fn closing_fails_the_waiting_and_every_later_operation() {
    let endpoint = Arc::new(TestEndpoint::new());
    let senders: std::vec::Vec<_> = (0..2)
        .map(|index| {
            let endpoint = endpoint.clone();
            thread::spawn(move || endpoint.send(&mailbox(index), index, |_, _| {}, || false))
        })
        .collect();
    wait_for(&endpoint, (2, 0));
    endpoint.close();
    for sender in senders {
        assert_eq!(sender.join().unwrap(), Err(EndpointError::Closed));
    }
    assert_eq!(endpoint.call(&mailbox(9), 1, |_, _| {}, || false), Err(EndpointError::Closed));
    assert!(matches!(endpoint.recv(&mailbox(9), None, |_, _| {}, || false), Err(EndpointError::Closed)));
}

#[test]
fn a_plain_send_to_a_waiting_receiver_returns_at_once() {
    let endpoint = Arc::new(TestEndpoint::new());
    let receiver = {
        let endpoint = endpoint.clone();
        thread::spawn(move || {
            let got = endpoint.recv(&mailbox(1), None, |_, _| {}, || false).unwrap();
            (got.message, got.reply.is_some())
        })
    };
    wait_for(&endpoint, (0, 1));
    assert_eq!(endpoint.send(&mailbox(2), 9, |_, _| {}, || false), Ok(()));
    assert_eq!(receiver.join().unwrap(), (9, false));
}
