//! Tests of the threads layer on real CPUs: yield order, park/unpark across
//! CPUs (through the PendQ and the wake IPI), preemption, migration, and a
//! wake-up stress test that would hang on a lost wake-up.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use machine::{percpu, timer};
use machine::irq_lock::IrqLock;
use sched::Pinning;

use super::runner::{check, Outcome};
use super::waiting::{wait_for_progress, wait_until};
use kernel_objects::SystemFacts;

static ORDER: IrqLock<Vec<u32>> = IrqLock::new(Vec::new());

pub fn yield_alternates_threads_on_one_cpu(_facts: &SystemFacts) -> Outcome {
    ORDER.lock().clear();
    let arrived = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let cpu = percpu::current_index();
    for label in [1u32, 2] {
        let (arrived, finished) = (arrived.clone(), finished.clone());
        sched::spawn_on(cpu, Pinning::Pinned, "yielder", move || {
            // Interrupts off from here: a timer preemption is one more
            // yield, after which alternation is no longer owed (seen at 2
            // and 8 vCPUs). Both yielders first meet here, so neither
            // starts while the other can still be preempted on its way.
            // `yield_now` switches with interrupts off as well.
            machine::cpu::without_interrupts(|| {
                arrived.fetch_add(1, Ordering::SeqCst);
                while arrived.load(Ordering::SeqCst) < 2 {
                    sched::yield_now();
                }
                for _ in 0..3 {
                    ORDER.lock().push(label);
                    sched::yield_now();
                }
            });
            finished.fetch_add(1, Ordering::SeqCst);
        })
        .map_err(|error| format!("spawn failed: {error:?}"))?;
    }
    check(wait_until(2_000, || finished.load(Ordering::SeqCst) == 2), || "yielders did not finish".into())?;
    let order = ORDER.lock().clone();
    // Whichever arrived second goes first; from then on strictly in turn.
    let alternates = order.len() == 6 && order.windows(2).all(|pair| pair[0] != pair[1]);
    check(alternates, || format!("expected the two yielders strictly in turn, 3 times each, saw {order:?}"))
}

pub fn park_and_unpark_across_cpus(_facts: &SystemFacts) -> Outcome {
    let online = percpu::online_count();
    let target = if online > 1 { 1 } else { 0 };
    let woke = Arc::new(AtomicBool::new(false));
    let parked_on = Arc::new(AtomicUsize::new(usize::MAX));
    let (woke_flag, parked_cpu) = (woke.clone(), parked_on.clone());
    let sleeper = sched::spawn_on(target, Pinning::Pinned, "sleeper", move || {
        parked_cpu.store(percpu::current_index(), Ordering::SeqCst);
        sched::park();
        woke_flag.store(true, Ordering::SeqCst);
    })
    .map_err(|error| format!("spawn failed: {error:?}"))?;
    check(wait_until(2_000, || parked_on.load(Ordering::SeqCst) == target), || "sleeper never ran".into())?;
    // Give it time to actually park (its CPU goes idle and halts).
    timer::busy_wait_microseconds(2_000);
    check(!woke.load(Ordering::SeqCst), || "the sleeper returned from park without a permit".into())?;
    sched::unpark(&sleeper);
    check(wait_until(2_000, || woke.load(Ordering::SeqCst)), || format!("thread parked on CPU {target} was never woken"))?;
    check(wait_until(2_000, || sleeper.has_exited()), || "the woken thread did not finish".into())
}

/// Two threads that never yield share one CPU: the timer must take it from
/// one to give it to the other. Measured in that CPU's own timer ticks, not
/// in time: how much host time a vCPU gets under TCG is the host's choice.
pub fn preemption_shares_a_cpu_between_spinners(_facts: &SystemFacts) -> Outcome {
    /// Ticks of the spinners' CPU by which both must have run.
    const TICKS: u64 = 20;
    let online = percpu::online_count();
    let cpu = online - 1;
    let ticks = || percpu::cpu(cpu).map_or(0, |per_cpu| per_cpu.ticks.load(Ordering::Relaxed));
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<AtomicU64>> = (0..2).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut threads = Vec::new();
    for counter in &counters {
        let (counter, stop) = (counter.clone(), stop.clone());
        let thread = sched::spawn_on(cpu, Pinning::Pinned, "spinner", move || {
            // Never yields: only the timer can take the CPU away.
            while !stop.load(Ordering::Relaxed) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        })
        .map_err(|error| format!("spawn failed: {error:?}"))?;
        threads.push(thread);
    }
    // Count from the moment one spinner holds the CPU.
    while counters.iter().all(|counter| counter.load(Ordering::Relaxed) == 0) {
        sched::yield_now();
    }
    let start = ticks();
    let both_ran = || counters.iter().all(|counter| counter.load(Ordering::Relaxed) > 0);
    while !both_ran() && ticks() - start < TICKS {
        sched::yield_now();
    }
    let (counts, elapsed): (Vec<u64>, u64) = (counters.iter().map(|counter| counter.load(Ordering::Relaxed)).collect(), ticks() - start);
    stop.store(true, Ordering::Relaxed);
    check(wait_until(2_000, || threads.iter().all(|thread| thread.has_exited())), || "spinners did not stop".into())?;
    check(counts.iter().all(|count| *count > 0), || {
        format!("after {elapsed} timer ticks of CPU {cpu} a spinner had never run: counts {counts:?}")
    })
}

pub fn a_thread_migrates_to_every_cpu(_facts: &SystemFacts) -> Outcome {
    let online = percpu::online_count();
    let visited = Arc::new(IrqLock::new(Vec::new()));
    let record = visited.clone();
    let mover = sched::spawn("mover", move || {
        for cpu in (0..online).rev() {
            if sched::migrate_current(cpu, Pinning::Pinned).is_ok() {
                record.lock().push(percpu::current_index());
            }
        }
    })
    .map_err(|error| format!("spawn failed: {error:?}"))?;
    check(wait_until(5_000, || mover.has_exited()), || "the migrating thread did not finish".into())?;
    let visited = visited.lock().clone();
    let expected: Vec<usize> = (0..online).rev().collect();
    check(visited == expected, || format!("expected to run on CPUs {expected:?}, ran on {visited:?}"))
}

/// Ping-pong between pairs of threads on different CPUs, each round a
/// park/unpark handshake; a single lost wake-up hangs a pair.
pub fn no_lost_wakeups_under_stress(_facts: &SystemFacts) -> Outcome {
    const ROUNDS: u64 = 300;
    let online = percpu::online_count();
    let pairs = online.max(2);
    let finished = Arc::new(AtomicUsize::new(0));
    let mut turns = Vec::new();
    for pair in 0..pairs {
        let turn = Arc::new(AtomicU64::new(0));
        turns.push(turn.clone());
        let slots: Arc<IrqLock<[Option<Arc<sched::Thread>>; 2]>> = Arc::new(IrqLock::new([None, None]));
        for side in 0..2u64 {
            let (turn, partners, finished) = (turn.clone(), slots.clone(), finished.clone());
            let cpu = (pair + side as usize) % online;
            let thread = sched::spawn_on(cpu, Pinning::Pinned, "ping-pong", move || {
                for round in 0..ROUNDS {
                    while turn.load(Ordering::Acquire) != round * 2 + side {
                        sched::park();
                    }
                    turn.store(round * 2 + side + 1, Ordering::Release);
                    let partner = partners.lock()[1 - side as usize].clone();
                    if let Some(partner) = partner {
                        sched::unpark(&partner);
                    }
                }
                finished.fetch_add(1, Ordering::SeqCst);
            })
            .map_err(|error| format!("spawn failed: {error:?}"))?;
            slots.lock()[side as usize] = Some(thread.clone());
            sched::unpark(&thread);
        }
    }
    let all = pairs * 2;
    let moves = || turns.iter().map(|turn| turn.load(Ordering::Acquire)).sum::<u64>();
    check(wait_for_progress(10_000, moves, || finished.load(Ordering::SeqCst) == all), || {
        format!("only {} of {all} ping-pong threads finished {ROUNDS} rounds; nothing moved for 10 s", finished.load(Ordering::SeqCst))
    })
}

crate::kernel_tests! {
    "threads" => [
        yield_alternates_threads_on_one_cpu,
        park_and_unpark_across_cpus,
        preemption_shares_a_cpu_between_spinners,
        a_thread_migrates_to_every_cpu,
        no_lost_wakeups_under_stress,
    ],
}
