//! `mem/frame_alloc_free`: one allocate + free of a frame on one CPU, in
//! guest instructions (the per-CPU cache's fast path, with the occasional
//! batch to or from the bitmap amortized in); and
//! `mem/frame_alloc_free_<n>`: wall ns per allocate + free with all of n
//! vCPUs doing it at once, which shows whether the caches keep CPUs off the
//! shared bitmap lock.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use machine::percpu;
use sched::Pinning;

use super::records::{now, report, ClockMode};
use kernel_objects::physical_memory::{allocate_frame, KernelFrame};

const PAIRS_PER_SAMPLE: u64 = 5_000;
const SAMPLES: usize = 5;
/// Frames each round holds at once: more than a cache batch, so that the
/// batches to and from the bitmap are part of what is measured.
const HELD: usize = 48;
const MOST_CPUS: usize = 8;

/// Allocates `HELD` frames then frees them, until `pairs` pairs are done.
/// Returns false if an allocation failed.
fn churn(pairs: u64) -> bool {
    let mut held: Vec<KernelFrame> = Vec::with_capacity(HELD);
    let mut done = 0;
    while done < pairs {
        for _ in 0..HELD {
            let Ok(frame) = allocate_frame() else { return false };
            held.push(frame);
        }
        held.clear(); // each handle frees its frame
        done += HELD as u64;
    }
    true
}

/// Instructions (or ns) per allocate + free on this CPU alone.
pub fn alloc_free(mode: ClockMode) {
    churn(PAIRS_PER_SAMPLE); // warm the caches and the `held` vector's allocator
    let mut samples = Vec::new();
    for _ in 0..SAMPLES {
        let start = now();
        if !churn(PAIRS_PER_SAMPLE) {
            return;
        }
        let pairs = PAIRS_PER_SAMPLE.div_ceil(HELD as u64) * HELD as u64;
        samples.push((now() - start) as f64 / pairs as f64);
    }
    report("mem", "frame_alloc_free", mode.unit(), &mut samples);
}

/// Wall ns per allocate + free with `n` CPUs at once, n = 1..online.
pub fn alloc_free_parallel() {
    let online = percpu::online_count().min(MOST_CPUS);
    for cpus in 1..=online {
        let mut samples: Vec<f64> = (0..SAMPLES).filter_map(|_| parallel_sample(cpus)).collect();
        report("mem", &format!("frame_alloc_free_{cpus}"), "ns", &mut samples);
    }
}

/// Wall ns from the first CPU's start to the last CPU's end, per pair of
/// one CPU. The workers read the clock themselves: the coordinating thread
/// shares CPU 0 with one of them and may not run until it is done.
fn parallel_sample(cpus: usize) -> Option<f64> {
    let ready = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let first_start = Arc::new(AtomicU64::new(u64::MAX));
    let last_end = Arc::new(AtomicU64::new(0));
    for cpu in 0..cpus {
        let (ready, finished) = (ready.clone(), finished.clone());
        let (first_start, last_end) = (first_start.clone(), last_end.clone());
        sched::spawn_on(cpu, Pinning::Pinned, "frame-churn", move || {
            ready.fetch_add(1, Ordering::AcqRel);
            while ready.load(Ordering::Acquire) < cpus {
                sched::yield_now();
            }
            first_start.fetch_min(now(), Ordering::AcqRel);
            churn(PAIRS_PER_SAMPLE);
            last_end.fetch_max(now(), Ordering::AcqRel);
            finished.fetch_add(1, Ordering::AcqRel);
        })
        .ok()?;
    }
    while finished.load(Ordering::Acquire) < cpus {
        sched::yield_now();
    }
    let pairs = PAIRS_PER_SAMPLE.div_ceil(HELD as u64) * HELD as u64;
    let elapsed = last_end.load(Ordering::Acquire).saturating_sub(first_start.load(Ordering::Acquire));
    Some(elapsed as f64 / pairs as f64)
}
