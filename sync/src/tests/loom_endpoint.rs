//! Loom: the IPC endpoint under all interleavings (within a preemption
//! bound): a call meets its receiver from either side and gets exactly its
//! answer; a plain send is taken exactly once; an interruption racing an
//! answer ends in exactly one of "answered" and "gave up", and the server
//! learns which.

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

// Mailboxes are shared through `alloc`'s `Arc`, as the endpoint keeps them.

use super::loom_support::{check, Preemptions};
use crate::{Endpoint, EndpointError, LoomBlocking, Mailbox, Meeting};

type LoomEndpoint = Endpoint<u32, LoomBlocking>;

/// A server receives one call and answers it with twice the message; the
/// client calls. Whichever arrives first, the client gets 2 × its message,
/// the server's `reply` reports it delivered, and exactly one side's
/// `on_match` ran, seeing both mailboxes.
fn call_and_answer() {
    let endpoint = Arc::new(LoomEndpoint::new());
    let meetings = Arc::new(AtomicUsize::new(0));
    let record = |meetings: &Arc<AtomicUsize>| {
        let meetings = meetings.clone();
        move |_: &mut u32, meeting: Meeting| {
            assert_eq!(meeting, Meeting { sender: 1, receiver: 2 });
            meetings.fetch_add(1, Ordering::Relaxed);
        }
    };
    let server = {
        let (endpoint, on_match) = (endpoint.clone(), record(&meetings));
        thread::spawn(move || {
            let me = std::sync::Arc::new(Mailbox::new(2));
            let received = endpoint.recv(&me, None, on_match, || false).unwrap();
            let reply = received.reply.expect("a call's message comes with its way back");
            assert!(reply.reply(received.message * 2), "the caller waits for its answer");
        })
    };
    let me = std::sync::Arc::new(Mailbox::new(1));
    assert_eq!(endpoint.call(&me, 21, record(&meetings), || false), Ok(42));
    server.join().unwrap();
    assert_eq!(meetings.load(Ordering::Relaxed), 1, "on_match ran on neither side or on both");
    assert_eq!(endpoint.waiting(), (0, 0));
}

#[test]
fn a_call_gets_exactly_its_answer() {
    check("endpoint call/answer", Preemptions::Unbounded, call_and_answer);
}

/// A sender sends two messages from one mailbox (its operations
/// numbered 1 and 2); the receiver takes both: each exactly once, in
/// order, and the sender's second operation never sees news of its first.
/// (Two senders with a third thread receiving ran over 10 minutes even at
/// two preemptions; the queue order among senders is the refinement
/// test's.)
fn two_sends_in_a_row() {
    let endpoint = Arc::new(LoomEndpoint::new());
    let sender = {
        let endpoint = endpoint.clone();
        thread::spawn(move || {
            let me = std::sync::Arc::new(Mailbox::new(1));
            for message in [5, 7] {
                assert_eq!(endpoint.send(&me, message, |_, _| {}, || false), Ok(()));
            }
        })
    };
    let me = std::sync::Arc::new(Mailbox::new(0));
    for expected in [5, 7] {
        let received = endpoint.recv(&me, None, |_, _| {}, || false).unwrap();
        assert!(received.reply.is_none(), "a plain send has no answer");
        assert_eq!(received.message, expected, "a message lost, duplicated or out of order");
    }
    sender.join().unwrap();
    assert_eq!(endpoint.waiting(), (0, 0));
}

#[test]
fn each_sent_message_is_received_once_in_order() {
    check("endpoint 2 sends in a row", Preemptions::AtMost(3), two_sends_in_a_row);
}

/// The server answers a call while a signal interrupts the caller. The
/// caller either gets the answer or gives up; `reply` reports true exactly
/// when the caller got it, and the endpoint's queues end empty either way.
/// (Fails when a give-up drops an answer that came in just before it.)
fn interruption_races_the_answer() {
    let endpoint = Arc::new(LoomEndpoint::new());
    let stop = Arc::new(AtomicBool::new(false));
    let delivered = Arc::new(AtomicBool::new(false));
    let caller = {
        let (endpoint, stop) = (endpoint.clone(), stop.clone());
        thread::spawn(move || {
            let me = std::sync::Arc::new(Mailbox::new(1));
            endpoint.call(&me, 3, |_, _| {}, || stop.load(Ordering::Acquire))
        })
    };
    let server = {
        let (endpoint, delivered) = (endpoint.clone(), delivered.clone());
        thread::spawn(move || {
            let me = std::sync::Arc::new(Mailbox::new(2));
            // A caller interrupted before its message was taken never
            // reaches this receiver: it then waits on until closed.
            if let Ok(received) = endpoint.recv(&me, None, |_, _| {}, || false) {
                let reply = received.reply.expect("a call");
                delivered.store(reply.reply(received.message + 1), Ordering::Release);
            }
        })
    };
    stop.store(true, Ordering::Release);
    caller.thread().unpark();
    let outcome = caller.join().unwrap();
    // Free a server still waiting for a message that will not come.
    endpoint.close();
    server.join().unwrap();
    match outcome {
        Ok(answer) => {
            assert_eq!(answer, 4);
            assert!(delivered.load(Ordering::Acquire), "the caller got an answer its server thinks was refused");
        }
        Err(error) => {
            assert_eq!(error, EndpointError::Interrupted);
            assert!(!delivered.load(Ordering::Acquire), "an answer reported delivered to a caller that gave up");
        }
    }
}

#[test]
fn an_interrupted_call_ends_answered_or_given_up_never_both() {
    check("endpoint interrupt vs answer", Preemptions::AtMost(3), interruption_races_the_answer);
}
