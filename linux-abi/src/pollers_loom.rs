//! loom model of the poll wake-up protocol over the real [`PollerSet`] and
//! [`PollerGate`]: a poller enters the gate, registers, then checks a
//! descriptor's readiness, then sleeps while the generation has not moved;
//! a writer makes the descriptor ready, then — only if the gate shows a
//! poller — reports the change and unparks the pollers. Every interleaving
//! ends with the poller awake and seeing the descriptor ready.

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread::{self, Thread};

use crate::pollers::{PollerGate, PollerSet};

#[test]
fn a_change_after_the_check_wakes_the_poller() {
    change_after_check(Ordering::SeqCst, Ordering::SeqCst);
}

/// A pipe publishes its readiness with a Release store and a poll reads it
/// with an Acquire load, no lock (`linux_objects::pipes::Pipe::publish`):
/// the gate's fences are what order them against the poller's count.
#[test]
fn a_change_published_with_release_wakes_the_poller() {
    change_after_check(Ordering::Release, Ordering::Acquire);
}

fn change_after_check(publish: Ordering, look: Ordering) {
    loom::model(move || {
        let set = Arc::new(Mutex::new(PollerSet::<Thread>::new()));
        let gate = Arc::new(PollerGate::new());
        let ready = Arc::new(AtomicBool::new(false));
        let poller = {
            let (set, gate, ready) = (set.clone(), gate.clone(), ready.clone());
            thread::spawn(move || {
                let me = thread::current();
                gate.enter();
                let mut seen = set.lock().unwrap().register(me.clone());
                loop {
                    if ready.load(look) {
                        break;
                    }
                    while !set.lock().unwrap().moved_since(seen) {
                        thread::park();
                    }
                    seen = set.lock().unwrap().generation();
                }
                set.lock().unwrap().unregister(|poller| poller.id() == me.id());
                gate.leave();
            })
        };
        ready.store(true, publish);
        if gate.anyone() {
            let woken = set.lock().unwrap().changed();
            for thread in woken {
                thread.unpark();
            }
        }
        poller.join().unwrap();
    });
}
