//! Host benchmark of the two locks, in rdtsc cycles (mC2 Fig. 11).
//!
//! `cargo run -p spinlock --release --example lock_bench` prints one JSON
//! record per line, in DESIGN.md's "Benchmark output" format:
//! - `ticket_uncontended`, `mcs_uncontended`: cycles per acquire + release
//!   of one lock, empty critical section, 10,000 in a row on core 0; the
//!   median of 5 runs;
//! - `ticket_efficiency_2`, `mcs_efficiency_2`: `n · t1 / tn` for n = 2,
//!   where `t1` is the cycles per acquire + release of one thread alone and
//!   `tn` the same per thread while threads on cores 0 and 1 hammer one lock
//!   (1.0: contention costs nothing beyond taking turns); the median of 5
//!   runs, each measuring both.
//!
//! Record names given as arguments select records. A benchmark, not a
//! test: it asserts nothing about the numbers.

use std::cell::Cell;
use std::hint::black_box;
use std::sync::Barrier;
use std::thread;

use spinlock::{CpuSlot, Level, McsLock, RawLock, SpinLock, TicketLock};

const RUNS: usize = 5;
/// Acquire + release pairs per uncontended run (as mC2).
const UNCONTENDED_OPS: u64 = 10_000;
/// Acquire + release pairs per thread in an efficiency run: longer, so that
/// the threads' start and finish skew is small against the whole.
const CONTENDED_OPS: u64 = 100_000;
const THREADS: usize = 2;
const LEVEL: Level = Level::new(1);

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// The benchmark thread's index, as the kernel's per-CPU number would be.
struct BenchSlot;

impl CpuSlot for BenchSlot {
    fn current() -> usize {
        SLOT.with(Cell::get)
    }
}

type Mcs = McsLock<BenchSlot, THREADS>;

fn cycles() -> u64 {
    // SAFETY: `rdtsc` only reads the time-stamp counter, which every x86-64
    // CPU has; it touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Runs the calling thread on `core` only, and uses slot `core` for MCS.
fn pin_to_core(core: usize) {
    SLOT.with(|slot| slot.set(core));
    // SAFETY: 1. `cpu_set_t` is a plain bit array, for which all zeroes is
    // the valid empty set; 2. `CPU_SET` writes inside the set we own, and
    // `core` < 2 < CPU_SETSIZE; 3. `sched_setaffinity` reads
    // `size_of::<cpu_set_t>()` bytes from a valid set, for thread 0 = self.
    let status = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        status,
        0,
        "sched_setaffinity to core {core} failed: {}",
        std::io::Error::last_os_error()
    );
}

/// Cycles per acquire + release over `ops` in a row on `lock`.
fn cycles_per_op<L: RawLock>(lock: &SpinLock<u64, L>, ops: u64) -> f64 {
    let start = cycles();
    for _ in 0..ops {
        drop(black_box(lock).lock());
    }
    (cycles() - start) as f64 / ops as f64
}

/// One uncontended run on the calling (pinned) thread, after a warm-up.
fn uncontended<L: RawLock>() -> f64 {
    let lock = SpinLock::<u64, L>::new(LEVEL, 0);
    cycles_per_op(&lock, UNCONTENDED_OPS);
    cycles_per_op(&lock, UNCONTENDED_OPS)
}

/// One efficiency run: `t1` alone on core 0, then `tn` with one thread per
/// core on a shared lock; returns `n · t1 / tn`.
fn efficiency<L: RawLock>() -> f64 {
    let lock = SpinLock::<u64, L>::new(LEVEL, 0);
    pin_to_core(0);
    cycles_per_op(&lock, CONTENDED_OPS);
    let alone = cycles_per_op(&lock, CONTENDED_OPS);
    let start = Barrier::new(THREADS);
    let per_thread: Vec<f64> = thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|core| {
                let (lock, start) = (&lock, &start);
                scope.spawn(move || {
                    pin_to_core(core);
                    start.wait();
                    cycles_per_op(lock, CONTENDED_OPS)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("benchmark thread panicked"))
            .collect()
    });
    let shared = per_thread.iter().sum::<f64>() / THREADS as f64;
    THREADS as f64 * alone / shared
}

/// The median and the spread, (max - min) / median, of `RUNS` runs.
fn summarize(mut runs: Vec<f64>) -> (f64, f64) {
    runs.sort_by(f64::total_cmp);
    let median = runs[runs.len() / 2];
    (median, (runs[runs.len() - 1] - runs[0]) / median)
}

fn print_record(name: &str, unit: &str, smp: usize, runs: Vec<f64>) {
    let (median, spread) = summarize(runs);
    let digits = if unit == "ratio" { 3 } else { 1 };
    println!(
        "{{\"group\": \"locks\", \"name\": \"{name}\", \"unit\": \"{unit}\", \"lamina\": {median:.digits$}, \
         \"linux\": null, \"linux_nomitig\": null, \"smp\": {smp}, \"accel\": \"host\", \"runs\": {RUNS}, \
         \"spread\": {spread:.3}}}"
    );
}

fn repeat(run: impl Fn() -> f64) -> Vec<f64> {
    (0..RUNS).map(|_| run()).collect()
}

/// One benchmark record: its name, unit, CPUs used and one run.
struct Record {
    name: &'static str,
    unit: &'static str,
    smp: usize,
    run: fn() -> f64,
}

const RECORDS: [Record; 4] = [
    Record {
        name: "ticket_uncontended",
        unit: "cycles",
        smp: 1,
        run: uncontended::<TicketLock>,
    },
    Record {
        name: "mcs_uncontended",
        unit: "cycles",
        smp: 1,
        run: uncontended::<Mcs>,
    },
    Record {
        name: "ticket_efficiency_2",
        unit: "ratio",
        smp: THREADS,
        run: efficiency::<TicketLock>,
    },
    Record {
        name: "mcs_efficiency_2",
        unit: "ratio",
        smp: THREADS,
        run: efficiency::<Mcs>,
    },
];

/// Runs the records named on the command line (all without arguments).
fn main() {
    let cores = thread::available_parallelism().map_or(1, usize::from);
    assert!(
        cores >= THREADS,
        "the efficiency benchmark needs {THREADS} cores, this host has {cores}"
    );
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    for record in RECORDS {
        if wanted.is_empty() || wanted.iter().any(|wanted| wanted == record.name) {
            pin_to_core(0);
            print_record(record.name, record.unit, record.smp, repeat(record.run));
        }
    }
}
