//! How a test waits for work handed to other CPUs, without assuming that
//! the host gives every vCPU time within a fixed window.
//!
//! Under TCG with more vCPUs than host cores (8 on 2 in CI), a vCPU may
//! get no host time for a long while, and a FIFO spinlock it waits in then
//! passes one holder per host time slice. A wall-clock deadline fails such
//! slow runs although nothing is lost. So a wait gives up only when the
//! work had its chance: [`wait_until`] when its time has passed *and*
//! every CPU has taken that many timer ticks (a CPU ticks only while the
//! host runs it), [`wait_for_progress`] when a count of the work's own
//! progress stops moving. A lost wake-up or a livelock still fails: the
//! CPUs tick on and nothing moves. Each wait also has a hard cap of ten
//! times its time, so that a CPU stuck with interrupts off (which stops
//! its ticks) cannot keep a test waiting for ever.

use alloc::vec::Vec;

use machine::{percpu, timer};

const NANOSECONDS_PER_MILLISECOND: u64 = 1_000_000;
/// The timer's period: 100 Hz.
const MILLISECONDS_PER_TICK: u64 = 10;
/// The hard cap, in multiples of a wait's time.
const HARD_CAP_FACTOR: u64 = 10;

/// Timer ticks each online CPU has taken so far.
fn ticks_now() -> Vec<u64> {
    (0..percpu::online_count())
        .map(|cpu| percpu::cpu(cpu).map_or(0, |per_cpu| per_cpu.ticks.load(core::sync::atomic::Ordering::Relaxed)))
        .collect()
}

/// A span a wait may last: `milliseconds` of wall time that every CPU
/// also lived through (as ticks), or ten times that in wall time alone.
struct Allowance {
    started: u64,
    start_ticks: Vec<u64>,
    milliseconds: u64,
}

impl Allowance {
    fn new(milliseconds: u64) -> Self {
        Self { started: timer::uptime_nanoseconds(), start_ticks: ticks_now(), milliseconds }
    }

    fn used_up(&self) -> bool {
        let elapsed = timer::uptime_nanoseconds().saturating_sub(self.started) / NANOSECONDS_PER_MILLISECOND;
        if elapsed < self.milliseconds {
            return false;
        }
        if elapsed >= self.milliseconds.saturating_mul(HARD_CAP_FACTOR) {
            return true;
        }
        let needed = self.milliseconds / MILLISECONDS_PER_TICK;
        let now = ticks_now();
        now.iter().zip(&self.start_ticks).all(|(now, then)| now.saturating_sub(*then) >= needed)
    }
}

/// Waits (yielding) until `done` holds; gives up when `milliseconds` have
/// passed and every CPU has had that long on the host (see the module
/// comment).
pub fn wait_until(milliseconds: u64, done: impl Fn() -> bool) -> bool {
    let allowance = Allowance::new(milliseconds);
    while !done() {
        if allowance.used_up() {
            return false;
        }
        sched::yield_now();
    }
    true
}

/// Waits (yielding) until `done` holds, failing only when `progress` — a
/// count that grows while the work moves — stays the same for
/// `stall_milliseconds` (measured as [`wait_until`] measures).
pub fn wait_for_progress(stall_milliseconds: u64, progress: impl Fn() -> u64, done: impl Fn() -> bool) -> bool {
    let mut last = progress();
    let mut allowance = Allowance::new(stall_milliseconds);
    while !done() {
        let seen = progress();
        if seen != last {
            last = seen;
            allowance = Allowance::new(stall_milliseconds);
        } else if allowance.used_up() {
            return false;
        }
        sched::yield_now();
    }
    true
}

/// Waits until the free frames are `before` again: the frames a test's
/// exited threads and torn-down spaces held come back a little after the
/// test saw them exit (a stack is freed once its CPU switched away from
/// it). A test that counts free frames, or spawns threads ahead of one
/// that does, ends with this, so that no frame is still on its way back
/// when the next test counts.
pub fn frames_come_back(before: u64) -> crate::runner::Outcome {
    use kernel_objects::physical_memory::free_frames;
    let back = wait_until(10_000, || {
        sched::release_spare_stacks();
        free_frames() == before
    });
    crate::runner::check(back, || alloc::format!("free frames {before} before, {} after", free_frames()))
}
