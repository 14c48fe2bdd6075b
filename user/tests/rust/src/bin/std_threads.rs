//! std::thread on the kernel: spawn and join, shared state behind a
//! mutex, channels, condition variables, scoped threads, sleep, and a
//! panic in a thread seen by join.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

fn main() {
    let total = Arc::new(Mutex::new(0u64));
    let handles: Vec<_> = (0..4)
        .map(|index| {
            let total = total.clone();
            thread::spawn(move || {
                for _ in 0..1000 {
                    *total.lock().unwrap() += 1;
                }
                index * 2
            })
        })
        .collect();
    let results: Vec<u64> = handles.into_iter().map(|handle| handle.join().unwrap()).collect();
    println!("total {} results {results:?}", total.lock().unwrap());

    let (sender, receiver) = mpsc::channel();
    for index in 0..3 {
        let sender = sender.clone();
        thread::spawn(move || sender.send(index * index).unwrap());
    }
    drop(sender);
    let mut received: Vec<u32> = receiver.iter().collect();
    received.sort();
    println!("received {received:?}");

    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let waker = pair.clone();
    let waiter = thread::spawn(move || {
        let (flag, condvar) = &*waker;
        let mut ready = flag.lock().unwrap();
        while !*ready {
            ready = condvar.wait(ready).unwrap();
        }
        "woken"
    });
    thread::sleep(Duration::from_millis(20));
    *pair.0.lock().unwrap() = true;
    pair.1.notify_all();
    println!("waiter: {}", waiter.join().unwrap());

    let mut numbers = vec![1, 2, 3, 4];
    thread::scope(|scope| {
        for number in numbers.iter_mut() {
            scope.spawn(move || *number *= 10);
        }
    });
    println!("scoped {numbers:?}");

    let start = Instant::now();
    thread::sleep(Duration::from_millis(30));
    println!("slept enough {}", start.elapsed() >= Duration::from_millis(30));
    println!("named {:?}", thread::Builder::new().name("worker".into()).spawn(|| thread::current().name().map(str::to_string)).unwrap().join().unwrap());
}
