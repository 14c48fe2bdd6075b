//! The guard policy is entered before the lock is taken and exited after
//! it is released.

use std::cell::RefCell;
use std::vec::Vec;

use crate::{GuardPolicy, Level, SpinLock, TicketLock, Untracked};

std::thread_local! {
    static EVENTS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// Entered; was the lock held at that moment?
    Enter { locked: bool },
    /// Exited; was the lock held at that moment?
    Exit { locked: bool },
}

/// Records each enter and exit with the state of `LOCK`.
struct Recording;

static LOCK: SpinLock<u32, TicketLock, Recording, Untracked> = SpinLock::new(Level::new(1), 0);

impl GuardPolicy for Recording {
    type Token = u32;

    fn enter() -> u32 {
        EVENTS.with(|events| {
            events.borrow_mut().push(Event::Enter {
                locked: LOCK.is_locked(),
            })
        });
        7
    }

    fn exit(token: u32) {
        assert_eq!(token, 7, "exit got another token than enter returned");
        EVENTS.with(|events| {
            events.borrow_mut().push(Event::Exit {
                locked: LOCK.is_locked(),
            })
        });
    }
}

#[test]
fn policy_wraps_the_whole_time_the_lock_is_held() {
    *LOCK.lock() += 1;
    let refused = {
        let _held = LOCK.lock();
        std::thread::scope(|scope| scope.spawn(|| LOCK.try_lock().is_none()).join().unwrap())
    };
    assert!(refused, "try_lock entered a held lock");
    let events = EVENTS.with(|events| events.borrow().clone());
    let expected = [
        Event::Enter { locked: false },
        Event::Exit { locked: false },
    ]
    .repeat(2);
    assert_eq!(events, expected, "this thread's policy events");
}
