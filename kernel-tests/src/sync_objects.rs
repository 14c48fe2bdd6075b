//! In-kernel tests of the synchronization and IPC layer on real CPUs: the
//! wait queue and the condition variable wake in arrival order, the bounded
//! queue moves every item exactly once and in order with producers and
//! consumers on every CPU, and channels carry messages of every size
//! between CPUs and refuse one byte too many.
//!
//! The host and loom tests check the same code on std and loom threads;
//! these check it on the kernel's own threads, interrupts and IPIs.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use machine::irq_lock::IrqLock;
use machine::percpu;
use sched::{Pinning, Thread, ThreadSummary};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{BoundedQueue, Channel, Condvar, IpcError, KernelBlocking, MessageBuffer, WaitQueue, MAX_MESSAGE_LENGTH};

use super::runner::{check, Outcome};
use super::waiting::{wait_for_progress, wait_until};
use kernel_objects::SystemFacts;

/// The level of the locks these tests hand to [`Condvar::wait`]: above the
/// sync layer's own (5), as the lock order requires.
const TEST_LOCK_LEVEL: Level = Level::new(6);

/// Starts `body(index)` as a thread pinned to CPU `index % online`.
fn spawn_pinned(index: usize, name: &'static str, body: impl FnOnce() + Send + 'static) -> Result<Arc<Thread>, String> {
    let cpu = index % percpu::online_count();
    sched::spawn_on(cpu, Pinning::Pinned, name, body).map_err(|error| format!("spawn on CPU {cpu} failed: {error:?}"))
}

/// Waits for every thread in `threads` to exit; a failure names each one
/// left and where it stands (parked, notified, …).
fn join_all(threads: &[Arc<Thread>], milliseconds: u64, what: &str) -> Outcome {
    let all_exited = || threads.iter().all(|thread| thread.has_exited());
    check(wait_until(milliseconds, all_exited), || unfinished(threads, what))
}

/// Waits for every thread in `threads` to exit while `progress` keeps
/// moving; fails only after [`STALL_MILLISECONDS`] without a move.
fn join_while_moving(threads: &[Arc<Thread>], progress: impl Fn() -> u64, what: &str) -> Outcome {
    let all_exited = || threads.iter().all(|thread| thread.has_exited());
    check(wait_for_progress(STALL_MILLISECONDS, progress, all_exited), || {
        format!("{} (nothing moved for {} s)", unfinished(threads, what), STALL_MILLISECONDS / 1000)
    })
}

/// How long work spread over every CPU may stand still before a test
/// calls it hung (a healthy step takes well under a millisecond).
const STALL_MILLISECONDS: u64 = 10_000;

fn unfinished(threads: &[Arc<Thread>], what: &str) -> String {
    let left: Vec<String> =
        threads.iter().filter(|thread| !thread.has_exited()).map(|thread| format!("\n    {}", ThreadSummary::traced(thread))).collect();
    format!("{} of {} {what} threads did not finish: {}", left.len(), threads.len(), left.join(","))
}

/// One sleeper per CPU (twice round) joins the queue in a known order;
/// `wake_one` must wake them in that order.
pub fn wait_queue_wakes_in_arrival_order(_facts: &SystemFacts) -> Outcome {
    let sleepers = 2 * percpu::online_count();
    let queue: Arc<WaitQueue<KernelBlocking>> = Arc::new(WaitQueue::new());
    let woken: Arc<IrqLock<Vec<usize>>> = Arc::new(IrqLock::new(Vec::new()));
    let mut threads = Vec::new();
    for label in 0..sleepers {
        let (queue_handle, woken_handle) = (queue.clone(), woken.clone());
        threads.push(spawn_pinned(label, "wq-sleeper", move || {
            queue_handle.sleep_on(|| {});
            woken_handle.lock().push(label);
        })?);
        // The next sleeper starts only once this one is queued.
        check(wait_until(2_000, || queue.sleepers() == label + 1), || format!("sleeper {label} never joined the queue"))?;
    }
    for count in 1..=sleepers {
        check(queue.wake_one(), || format!("wake {count}: the queue said nobody sleeps"))?;
        check(wait_until(2_000, || woken.lock().len() == count), || format!("wake {count} woke nobody"))?;
    }
    check(!queue.wake_one(), || "a wake-up found a sleeper after all were woken".into())?;
    join_all(&threads, 2_000, "woken")?;
    let order = woken.lock().clone();
    let expected: Vec<usize> = (0..sleepers).collect();
    check(order == expected, || format!("woken in order {order:?}, expected arrival order {expected:?}"))
}

/// Waiters on every CPU wait on a condition variable under a user lock in a
/// known order; `signal` must pick them oldest first, and a signal with no
/// waiter must be lost.
pub fn condvar_signals_oldest_waiter_across_cpus(_facts: &SystemFacts) -> Outcome {
    struct Shared {
        lock: KernelTicketLock<Vec<usize>>,
        condvar: Condvar<KernelBlocking>,
    }
    let waiters = 2 * percpu::online_count();
    let shared = Arc::new(Shared { lock: KernelTicketLock::new(TEST_LOCK_LEVEL, Vec::new()), condvar: Condvar::new() });
    check(!shared.condvar.signal(), || "a signal with no waiter reported a wake-up".into())?;
    let mut threads = Vec::new();
    for label in 0..waiters {
        let handle = shared.clone();
        threads.push(spawn_pinned(label, "cv-waiter", move || {
            let guard = handle.lock.lock();
            let mut guard = handle.condvar.wait(guard, &handle.lock);
            guard.push(label);
        })?);
        check(wait_until(2_000, || shared.condvar.waiters() == label + 1), || format!("waiter {label} never waited"))?;
    }
    for count in 1..=waiters {
        check(shared.condvar.signal(), || format!("signal {count} found no waiter"))?;
        check(wait_until(2_000, || shared.lock.lock().len() == count), || format!("signal {count} woke nobody"))?;
    }
    join_all(&threads, 2_000, "signalled")?;
    let order = shared.lock.lock().clone();
    let expected: Vec<usize> = (0..waiters).collect();
    check(order == expected, || format!("signalled in order {order:?}, expected arrival order {expected:?}"))
}

/// A token passes round one thread per CPU (at least 3) through a counter
/// guarded by a user lock; each waits with `wait_while` until it is its
/// turn and then broadcasts. A single lost wake-up stops the ring.
pub fn condvar_broadcast_loses_no_wakeup(_facts: &SystemFacts) -> Outcome {
    const ROUNDS: usize = 200;
    struct Ring {
        turn: KernelTicketLock<usize>,
        changed: Condvar<KernelBlocking>,
    }
    let members = percpu::online_count().max(3);
    let ring = Arc::new(Ring { turn: KernelTicketLock::new(TEST_LOCK_LEVEL, 0), changed: Condvar::new() });
    let mut threads = Vec::new();
    for member in 0..members {
        let ring = ring.clone();
        threads.push(spawn_pinned(member, "cv-ring", move || {
            for round in 0..ROUNDS {
                let mine = round * members + member;
                let guard = ring.turn.lock();
                let mut guard = ring.changed.wait_while(guard, &ring.turn, |turn| *turn != mine);
                *guard += 1;
                drop(guard);
                ring.changed.broadcast();
            }
        })?);
    }
    join_while_moving(&threads, || *ring.turn.lock() as u64, "ring").map_err(|why| {
        format!("{why}; the token is at {}, {} threads wait on the condition variable", *ring.turn.lock(), ring.changed.waiters())
    })?;
    let turns = *ring.turn.lock();
    check(turns == ROUNDS * members, || format!("the token moved {turns} times, expected {}", ROUNDS * members))
}

/// A queue of `CAPACITY` items between a producer and a consumer on every
/// CPU: every item arrives exactly once, and each consumer sees each
/// producer's items in the order they were made.
fn bounded_queue_moves_every_item_once<const CAPACITY: usize>() -> Outcome {
    const ITEMS_PER_PRODUCER: usize = 300;
    let online = percpu::online_count();
    let (producers, consumers) = (online.max(2), online.max(2));
    let total = producers * ITEMS_PER_PRODUCER;
    let queue: Arc<BoundedQueue<(usize, usize), KernelBlocking, CAPACITY>> = Arc::new(BoundedQueue::new());
    let taken = Arc::new(AtomicUsize::new(0));
    let received: Arc<IrqLock<Vec<Vec<(usize, usize)>>>> = Arc::new(IrqLock::new(Vec::new()));
    let mut threads = Vec::new();
    for producer in 0..producers {
        let queue = queue.clone();
        threads.push(spawn_pinned(producer, "bbq-producer", move || {
            (0..ITEMS_PER_PRODUCER).for_each(|sequence| queue.insert((producer, sequence)));
        })?);
    }
    for consumer in 0..consumers {
        let (queue, taken, received) = (queue.clone(), taken.clone(), received.clone());
        threads.push(spawn_pinned(consumer + 1, "bbq-consumer", move || {
            let mut mine = Vec::new();
            // Claim an item before removing it, so consumers remove exactly
            // `total` items between them and none waits forever.
            while taken.fetch_add(1, Ordering::SeqCst) < total {
                mine.push(queue.remove());
            }
            received.lock().push(mine);
        })?);
    }
    join_while_moving(&threads, || taken.load(Ordering::SeqCst) as u64, "producer and consumer")?;
    check(queue.is_empty(), || format!("{} items left in the queue", queue.len()))?;
    let received = received.lock().clone();
    let mut seen = alloc::vec![0usize; total];
    for items in &received {
        let mut last: Vec<Option<usize>> = alloc::vec![None; producers];
        for &(producer, sequence) in items {
            check(producer < producers && sequence < ITEMS_PER_PRODUCER, || format!("item {producer}/{sequence} was never made"))?;
            check(last[producer].is_none_or(|before| before < sequence), || {
                format!("producer {producer}'s item {sequence} came after item {:?}", last[producer])
            })?;
            last[producer] = Some(sequence);
            seen[producer * ITEMS_PER_PRODUCER + sequence] += 1;
        }
    }
    match seen.iter().position(|count| *count != 1) {
        Some(index) => Err(format!(
            "item {}/{} arrived {} times",
            index / ITEMS_PER_PRODUCER,
            index % ITEMS_PER_PRODUCER,
            seen[index]
        )),
        None => Ok(()),
    }
}

pub fn bounded_queue_of_one_moves_every_item_once(_facts: &SystemFacts) -> Outcome {
    bounded_queue_moves_every_item_once::<1>()
}

pub fn bounded_queue_of_four_moves_every_item_once(_facts: &SystemFacts) -> Outcome {
    bounded_queue_moves_every_item_once::<4>()
}

/// The sizes every channel test sends: empty, one byte, ten words, one
/// byte short of a page, a page.
const MESSAGE_SIZES: [usize; 5] = [0, 1, 80, MAX_MESSAGE_LENGTH - 1, MAX_MESSAGE_LENGTH];

/// The request a client sends for `size` in `round`.
fn request_bytes(size: usize, round: usize) -> Vec<u8> {
    (0..size).map(|index| (index + round) as u8).collect()
}

/// What the echo server answers: every byte plus one.
fn reply_bytes(request: &[u8]) -> Vec<u8> {
    request.iter().map(|byte| byte.wrapping_add(1)).collect()
}

/// A client on every CPU calls an echo server on the next CPU with
/// messages of every size; each reply must be the transformed request, of
/// the same length. A message one byte over a page is refused and sends
/// nothing.
pub fn channels_carry_every_size_across_cpus(_facts: &SystemFacts) -> Outcome {
    const ROUNDS: usize = 20;
    struct Pair {
        requests: Channel<KernelBlocking>,
        replies: Channel<KernelBlocking>,
    }
    let online = percpu::online_count();
    let calls = ROUNDS * MESSAGE_SIZES.len();
    let failures: Arc<IrqLock<Vec<String>>> = Arc::new(IrqLock::new(Vec::new()));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for client in 0..online.max(2) {
        let pair = Arc::new(Pair { requests: Channel::new(), replies: Channel::new() });
        let (server_pair, server_failures) = (pair.clone(), failures.clone());
        threads.push(spawn_pinned(client + 1, "echo-server", move || {
            let mut request = MessageBuffer::new();
            for _ in 0..calls {
                let answered = server_pair
                    .requests
                    .recv(&mut request)
                    .and_then(|_| server_pair.replies.send(&reply_bytes(request.message())));
                if let Err(error) = answered {
                    server_failures.lock().push(format!("server: {error}"));
                    return;
                }
            }
        })?);
        let (client_failures, client_answered) = (failures.clone(), answered.clone());
        threads.push(spawn_pinned(client, "echo-client", move || {
            let mut reply = MessageBuffer::new();
            for round in 0..ROUNDS {
                for size in MESSAGE_SIZES {
                    let request = request_bytes(size, round);
                    let outcome = match pair.requests.call(&request, &pair.replies, &mut reply) {
                        Ok(length) if length == size && reply.message() == reply_bytes(&request).as_slice() => Ok(()),
                        Ok(length) => Err(format!("a {size}-byte call got a wrong {length}-byte reply")),
                        Err(error) => Err(format!("a {size}-byte call failed: {error}")),
                    };
                    if let Err(why) = outcome {
                        client_failures.lock().push(why);
                        return;
                    }
                    client_answered.fetch_add(1, Ordering::Relaxed);
                }
            }
            let too_long = alloc::vec![0u8; MAX_MESSAGE_LENGTH + 1];
            if pair.requests.send(&too_long) != Err(IpcError::TooLong { length: MAX_MESSAGE_LENGTH + 1 }) {
                client_failures.lock().push("a message one byte over a page was not refused".into());
            }
            if pair.requests.waiting_senders() != 0 {
                client_failures.lock().push("a refused message left a sender waiting".into());
            }
        })?);
    }
    join_while_moving(&threads, || answered.load(Ordering::Relaxed) as u64, "echo")?;
    let failures = failures.lock().clone();
    check(failures.is_empty(), || failures.join("; "))
}

crate::kernel_tests! {
    "sync" => [
        wait_queue_wakes_in_arrival_order,
        condvar_signals_oldest_waiter_across_cpus,
        condvar_broadcast_loses_no_wakeup,
        bounded_queue_of_one_moves_every_item_once,
        bounded_queue_of_four_moves_every_item_once,
        channels_carry_every_size_across_cpus,
    ],
}
