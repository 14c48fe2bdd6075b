//! Refinement test: random sequences of wake-ups (local and remote) and
//! scheduling decisions on real `CpuQueues` match the spec's per-CPU FIFOs
//! whenever the owner absorbs its PendQ before picking (as the kernel's
//! `schedule` does), and when idle CPUs take movable threads from others'
//! ReadyQs (as the kernel's idle loop does). Also: no thread is lost or
//! duplicated.

use sched::queues::{route_wakeup, CpuQueues, WakeDelivery};
use sched::spec::RunQueuesSpec;

struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// Applies the kernel's wake-up rule: own ReadyQ when local, else the home PendQ.
fn wake(queues: &mut [CpuQueues<u32>], waker: usize, home: usize, thread: u32) {
    match route_wakeup(waker, home) {
        WakeDelivery::Local => queues[waker].push_ready(thread),
        WakeDelivery::Remote { cpu } => queues[cpu].push_pending(thread),
    }
}

#[test]
fn cpu_queues_refine_the_spec() {
    for seed in 1..=20u64 {
        let cpus = 1 + (seed % 4) as usize;
        let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut queues: Vec<CpuQueues<u32>> = (0..cpus).map(|_| CpuQueues::new()).collect();
        let mut spec = RunQueuesSpec::new(cpus);
        let mut next_thread = 0u32;
        for _ in 0..5_000 {
            let cpu = random.below(cpus as u64) as usize;
            let action = random.below(5);
            if action == 4 && cpus > 1 {
                // An idle CPU takes the oldest movable thread from another's
                // ReadyQ (threads divisible by 3 are pinned) onto its own.
                let victim = (cpu + 1 + random.below(cpus as u64 - 1) as usize) % cpus;
                if let Some(taken) = queues[victim].take_ready_where(|thread| thread % 3 != 0) {
                    assert_ne!(taken % 3, 0, "seed {seed}: a pinned thread was taken");
                    queues[cpu].push_ready(taken);
                    if let Err(violation) = spec.take(victim, cpu, taken) {
                        panic!("seed {seed}: CPU {cpu} took {taken} from CPU {victim}: {violation:?}");
                    }
                }
            } else if action < 2 {
                let home = random.below(cpus as u64) as usize;
                wake(&mut queues, cpu, home, next_thread);
                spec.make_ready(cpu, home, next_thread);
                next_thread += 1;
            } else {
                // The kernel's `schedule`: absorb the PendQ, then take the front.
                queues[cpu].absorb_pending();
                let picked = queues[cpu].pop_ready();
                if let Err(violation) = spec.schedule(cpu, picked) {
                    panic!("seed {seed}: CPU {cpu} picked {picked:?}: {violation:?}");
                }
            }
            for (index, queue) in queues.iter().enumerate() {
                let queued = queue.ready_len() + queue.pending_len();
                assert_eq!(queued, spec.runnable(index), "seed {seed}: CPU {index} lost or duplicated a thread");
            }
        }
    }
}

#[test]
fn the_spec_refuses_out_of_order_and_idle_picks() {
    let mut spec = RunQueuesSpec::new(2);
    spec.make_ready(0, 0, 1);
    spec.make_ready(0, 0, 2);
    assert!(spec.schedule(0, Some(2)).is_err(), "2 was woken after 1 by the same CPU");
    assert!(spec.schedule(0, None).is_err(), "CPU 0 has runnable threads");
    spec.make_ready(1, 0, 3);
    assert!(spec.schedule(0, Some(3)).is_ok(), "3 came from another waker and may go first");
}

#[test]
fn absorb_keeps_arrival_order() {
    let mut queues = CpuQueues::new();
    queues.push_ready(1);
    queues.push_pending(2);
    queues.push_pending(3);
    queues.push_ready(4);
    queues.absorb_pending();
    let order: Vec<u32> = std::iter::from_fn(|| queues.pop_ready()).collect();
    assert_eq!(order, vec![1, 4, 2, 3]);
    assert!(queues.is_empty());
}

#[test]
fn take_ready_where_skips_pinned_threads() {
    let mut queues = CpuQueues::new();
    for thread in [10, 11, 12] {
        queues.push_ready(thread);
    }
    assert_eq!(queues.take_ready_where(|thread| *thread != 10), Some(11));
    assert_eq!(queues.take_ready_where(|thread| *thread > 100), None);
    assert_eq!(queues.ready_len(), 2);
}
