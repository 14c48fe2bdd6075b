//! The sleep lock on std threads: holders that sleep while holding it
//! still exclude each other, and every increment survives.

use std::sync::Arc;
use std::thread;
use std::time::Duration;
use std::vec::Vec;

use spinlock::Level;

use crate::{SleepLock, StdBlocking};

#[test]
fn holders_that_sleep_exclude_each_other() {
    let lock = Arc::new(SleepLock::<(u64, bool), StdBlocking>::new(Level::new(6), (0, false)));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let lock = lock.clone();
            thread::spawn(move || {
                for round in 0..200 {
                    lock.with(|(count, held)| {
                        assert!(!*held, "two holders at once");
                        *held = true;
                        if round % 50 == 0 {
                            thread::sleep(Duration::from_millis(1));
                        }
                        *count += 1;
                        *held = false;
                    });
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|worker| worker.join().unwrap());
    assert_eq!(lock.with(|(count, _)| *count), 800);
}
