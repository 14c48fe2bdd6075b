//! Loom: an idle CPU taking work. While CPU 0 queues a thread on its own
//! ReadyQ and schedules, idle CPU 1 takes the oldest movable thread from
//! CPU 0's ReadyQ onto its own and schedules, as the kernel's idle loop
//! does: in every interleaving each thread runs exactly once, a pinned one
//! only on its own CPU.

use loom::sync::Arc;
use loom::thread;

use super::loom_idle::ModelCpu;
use super::loom_support::{check, Preemptions};

/// Threads 1 and 2 are movable, 10 is pinned to CPU 0.
fn movable(thread: &usize) -> bool {
    *thread < 10
}

fn idle_cpu_takes_without_loss_or_duplication() {
    let cpus: Arc<Vec<ModelCpu>> = Arc::new(vec![ModelCpu::new(), ModelCpu::new()]);
    cpus[0].queues.lock().push_ready(10);
    cpus[0].queues.lock().push_ready(1);
    let thief = {
        let cpus = cpus.clone();
        thread::spawn(move || {
            let taken = cpus[0].queues.lock().take_ready_where(movable);
            if let Some(thread) = taken {
                assert!(movable(&thread), "CPU 1 took pinned thread {thread}");
                cpus[1].queues.lock().push_ready(thread);
            }
            cpus[1].next()
        })
    };
    cpus[0].queues.lock().push_ready(2);
    let mut ran = vec![];
    ran.extend(cpus[0].next());
    ran.extend(cpus[0].next());
    ran.extend(thief.join().unwrap());
    // What is still queued runs later, on its CPU.
    while let Some(thread) = cpus[0].next() {
        ran.push(thread);
    }
    while let Some(thread) = cpus[1].next() {
        assert!(movable(&thread), "pinned thread {thread} queued on CPU 1");
        ran.push(thread);
    }
    ran.sort_unstable();
    assert_eq!(ran, [1, 2, 10], "a thread was lost or ran twice");
}

#[test]
fn an_idle_cpu_takes_a_movable_thread_without_losing_or_doubling_any() {
    check("idle CPU takes work", Preemptions::AtMost(3), idle_cpu_takes_without_loss_or_duplication);
}
