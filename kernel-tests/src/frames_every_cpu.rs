//! The frame allocator on every CPU at once: per-CPU caches never hand one
//! frame to two CPUs, every CPU together can take all of memory (the last
//! frames are found in other CPUs' caches), and every frame comes back.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;

use machine::irq_lock::IrqLock;
use machine::percpu;
use sched::Pinning;

use super::runner::{check, Outcome};
use super::waiting::wait_for_progress;
use kernel_objects::physical_memory::{allocate_frame, free_frames, KernelFrame};
use kernel_objects::SystemFacts;

/// What each CPU's thread took, to compare after all are done.
type Takings = Arc<IrqLock<Vec<Vec<KernelFrame>>>>;

/// Allocations and frees done by the threads of the running test: the
/// progress the waiting thread watches. When every CPU takes the last
/// frames at once, each refill goes through the bitmap's one FIFO lock,
/// which a loaded 2-core host passes on about once per host time slice:
/// the test can take tens of seconds while moving all the time.
static OPERATIONS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

fn count_operation() {
    // Relaxed: only a progress count.
    OPERATIONS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
}

/// Runs `work` on a thread pinned to every CPU and collects what each
/// returns. The threads start together once all exist; the free-frame
/// count at that moment (their stacks already taken) is the second result.
fn on_every_cpu(work: fn() -> Vec<KernelFrame>) -> Result<(Vec<Vec<KernelFrame>>, u64), alloc::string::String> {
    let online = percpu::online_count();
    let takings: Takings = Arc::new(IrqLock::new(Vec::new()));
    let go = Arc::new(core::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::new();
    for cpu in 0..online {
        let (takings, go) = (takings.clone(), go.clone());
        let thread = sched::spawn_on(cpu, Pinning::Pinned, "frames", move || {
            while !go.load(core::sync::atomic::Ordering::Acquire) {
                sched::yield_now();
            }
            let taken = work();
            takings.lock().push(taken);
        })
        .map_err(|error| format!("spawn on CPU {cpu} failed: {error:?}"))?;
        threads.push(thread);
    }
    let free_at_start = free_frames();
    go.store(true, core::sync::atomic::Ordering::Release);
    let progress = || OPERATIONS.load(core::sync::atomic::Ordering::Relaxed);
    check(wait_for_progress(10_000, progress, || threads.iter().all(|thread| thread.has_exited())), || {
        "frame threads stopped moving before they finished".into()
    })?;
    let takings = core::mem::take(&mut *takings.lock());
    Ok((takings, free_at_start))
}

/// Checks that no frame appears twice among `takings`; returns how many.
fn count_distinct(takings: &[Vec<KernelFrame>]) -> Result<u64, alloc::string::String> {
    let mut seen = BTreeSet::new();
    for frame in takings.iter().flatten() {
        check(seen.insert(frame.number()), || format!("frame {frame:?} was handed to two CPUs at once"))?;
    }
    Ok(seen.len() as u64)
}

/// Frees every frame taken (each handle frees its own).
fn free_all(takings: Vec<Vec<KernelFrame>>) {
    drop(takings);
}

/// Each CPU allocates and frees in rounds, keeping what it holds at the end.
fn churn() -> Vec<KernelFrame> {
    let mut held = Vec::new();
    for round in 0..40 {
        held.extend((0..100).filter_map(|_| {
            count_operation();
            allocate_frame().ok()
        }));
        // Free two thirds, through this CPU's cache.
        let keep = held.len() / 3 + round % 3;
        held.drain(keep.min(held.len())..).for_each(|frame| {
            count_operation();
            drop(frame);
        });
    }
    held
}

pub fn every_cpu_allocates_and_frees_at_once(_facts: &SystemFacts) -> Outcome {
    let (takings, before) = on_every_cpu(churn)?;
    let distinct = count_distinct(&takings);
    free_all(takings);
    distinct?;
    let after = free_frames();
    check(after == before, || format!("free frames {before} before, {after} after"))
}

/// Each CPU takes frames until there are none.
fn take_everything() -> Vec<KernelFrame> {
    let mut taken = Vec::new();
    while let Ok(frame) = allocate_frame() {
        count_operation();
        taken.push(frame);
    }
    taken
}

pub fn all_cpus_together_get_every_frame(_facts: &SystemFacts) -> Outcome {
    let (takings, before) = on_every_cpu(take_everything)?;
    let distinct = count_distinct(&takings);
    let left = free_frames();
    // Give everything back before judging, so a failure leaves memory free.
    free_all(takings);
    let distinct = distinct?;
    check(distinct == before && left == 0, || {
        format!("{before} frames were free; the CPUs got {distinct} distinct frames and {left} stayed free")
    })?;
    let after = free_frames();
    check(after == before, || format!("free frames {before} before, {after} after"))
}

crate::kernel_tests! {
    "memory" => [
        every_cpu_allocates_and_frees_at_once,
        all_cpus_together_get_every_frame,
    ],
}
