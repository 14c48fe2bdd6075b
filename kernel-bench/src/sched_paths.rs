//! Scheduler hot paths: one yield between two threads, and a wake-up from
//! one CPU to a thread parked on another.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use machine::percpu;
use sched::Pinning;

use super::records::{now, report, ClockMode};

const YIELDS_PER_SAMPLE: u64 = 2_000;
const SAMPLES: usize = 7;

/// `sched/yield_switch`: cost of one `yield_now` that switches to the other
/// of two threads on the same CPU.
pub fn yield_switch(mode: ClockMode) {
    let cpu = percpu::current_index();
    let mut samples = Vec::new();
    for _ in 0..SAMPLES {
        let stop = Arc::new(AtomicBool::new(false));
        let partner_stop = stop.clone();
        let partner = sched::spawn_on(cpu, Pinning::Pinned, "yield-partner", move || {
            while !partner_stop.load(Ordering::Relaxed) {
                sched::yield_now();
            }
        });
        if partner.is_err() {
            return;
        }
        sched::yield_now(); // let the partner start
        let start = now();
        for _ in 0..YIELDS_PER_SAMPLE {
            sched::yield_now();
        }
        let elapsed = now() - start;
        // Each of our yields is followed by one of the partner's: two switches.
        samples.push(elapsed as f64 / (2 * YIELDS_PER_SAMPLE) as f64);
        stop.store(true, Ordering::Relaxed);
        sched::yield_now();
    }
    report("sched", "yield_switch", mode.unit(), &mut samples);
}

/// `sched/cross_cpu_wakeup`: time from `unpark` on one CPU until the parked
/// thread runs on another (idle, halted) CPU.
pub fn cross_cpu_wakeup(mode: ClockMode) {
    if percpu::online_count() < 2 {
        return;
    }
    const ROUNDS: usize = 101;
    let woke_at = Arc::new(AtomicU64::new(0));
    let round_done = Arc::new(AtomicU64::new(0));
    let (woke, done) = (woke_at.clone(), round_done.clone());
    let sleeper = sched::spawn_on(1, Pinning::Pinned, "wakee", move || {
        for round in 1..=ROUNDS as u64 {
            sched::park();
            woke.store(now(), Ordering::Release);
            done.store(round, Ordering::Release);
        }
    });
    let Ok(sleeper) = sleeper else { return };
    let mut samples = Vec::new();
    for round in 1..=ROUNDS as u64 {
        // Let the sleeper park and its CPU go idle.
        machine::timer::busy_wait_microseconds(200);
        let start = now();
        sched::unpark(&sleeper);
        while round_done.load(Ordering::Acquire) != round {
            core::hint::spin_loop();
        }
        samples.push((woke_at.load(Ordering::Acquire) - start) as f64);
    }
    report("sched", "cross_cpu_wakeup", mode.unit(), &mut samples);
}
