//! `sched/serverclient_speedup_<n>_{fine,bkl}`: mC2's server/client
//! benchmark (§6, Fig. 12). A server/client pair per CPU; a server's
//! transaction is an IPC receive from its client, a payload of work and a
//! send back; a client does its own payload, sends the request and waits
//! for the reply. Throughput is transactions per second over all CPUs; the
//! record is the throughput on `n` CPUs over that on one, in wall time
//! under multi-threaded TCG.
//!
//! The pairs never talk across CPUs, so with fine-grained locks nothing is
//! shared but the heap; the big-kernel-lock build of the same kernel
//! (feature `big-kernel-lock`) serializes every kernel critical section
//! through one lock, which is what the `_bkl` records measure.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use machine::percpu;
use sched::Pinning;
use spinlock::kernel::BIG_KERNEL_LOCK_BUILD;
use sync::{Channel, KernelBlocking, MessageBuffer};

use super::records::{now, report};

/// Transactions per pair in one sample.
const TRANSACTIONS: u64 = 5_000;
const SAMPLES: usize = 5;
/// Turns of the payload loop: about 500 guest instructions (mC2's payload
/// is 500 cycles of `nop`s on both sides).
const PAYLOAD_TURNS: u64 = 125;
/// The most CPUs measured, as the lock-efficiency records.
const MOST_CPUS: usize = 8;
/// Each message is one word, as mC2's.
const MESSAGE: [u8; 8] = *b"request!";

/// The channels of one pair: requests to the server, replies to the client.
struct PairChannels {
    requests: Channel<KernelBlocking>,
    replies: Channel<KernelBlocking>,
}

/// Every speedup record for 1..=online CPUs.
pub fn speedups() {
    let build = if BIG_KERNEL_LOCK_BUILD { "bkl" } else { "fine" };
    each_cpu_count(|cpus, rates, baseline| {
        let mut samples: Vec<f64> = rates.iter().map(|rate| rate / baseline).collect();
        report("sched", &format!("serverclient_speedup_{cpus}_{build}"), "ratio", &mut samples);
    });
}

/// `multikernel/pairs_{throughput,speedup}_<n>_{one_kernel,groups}`
/// (issue 20): the same pairs, booted once as one kernel over every CPU
/// and once with each CPU its own group (`groups=` the CPU count), so each
/// pair lives in its own kernel instance: its CPU's scheduler, its
/// group's frames. Throughput in transactions per second of wall time
/// under multi-threaded TCG; the speedup over one pair in the same boot.
pub fn pairs_by_group() {
    let kind = if kernel_objects::groups::count() > 1 { "groups" } else { "one_kernel" };
    each_cpu_count(|cpus, rates, baseline| {
        let mut per_second: Vec<f64> = rates.iter().map(|rate| rate * 1e9).collect();
        report("multikernel", &format!("pairs_throughput_{cpus}_{kind}"), "transactions/s", &mut per_second);
        let mut speedups: Vec<f64> = rates.iter().map(|rate| rate / baseline).collect();
        report("multikernel", &format!("pairs_speedup_{cpus}_{kind}"), "ratio", &mut speedups);
    });
}

/// For 1..=online CPUs (at most [`MOST_CPUS`]): the samples of the
/// throughput with that many pairs, and the median with one pair.
fn each_cpu_count(mut record: impl FnMut(usize, &[f64], f64)) {
    let online = percpu::online_count().min(MOST_CPUS);
    // One CPU's samples are the baseline and the n = 1 record (the
    // median of those is 1 by definition; the spread says how noisy the
    // wall clock is).
    // A warm-up run first: the first threads of a boot grow the heap and
    // make stacks, which later runs reuse.
    throughput(1);
    let mut alone: Vec<f64> = (0..SAMPLES).filter_map(|_| throughput(1)).collect();
    alone.sort_by(f64::total_cmp);
    let Some(&baseline) = alone.get(alone.len() / 2) else { return };
    for cpus in 1..=online {
        let rates = if cpus == 1 { alone.clone() } else { (0..SAMPLES).filter_map(|_| throughput(cpus)).collect() };
        record(cpus, &rates, baseline);
    }
}

/// Transactions per clock unit with a pair on each of CPUs `0..cpus`.
fn throughput(cpus: usize) -> Option<f64> {
    let finished = Arc::new(AtomicUsize::new(0));
    let start = now();
    for cpu in 0..cpus {
        start_pair(cpu, finished.clone())?;
    }
    while finished.load(Ordering::Acquire) != 2 * cpus {
        sched::yield_now();
    }
    let elapsed = (now() - start).max(1);
    Some((cpus as u64 * TRANSACTIONS) as f64 / elapsed as f64)
}

/// Spawns the server and the client of CPU `cpu`; each adds one to
/// `finished` when done.
fn start_pair(cpu: usize, finished: Arc<AtomicUsize>) -> Option<()> {
    let channels = Arc::new(PairChannels { requests: Channel::new(), replies: Channel::new() });
    let (server_channels, server_finished) = (channels.clone(), finished.clone());
    sched::spawn_on(cpu, Pinning::Pinned, "server", move || {
        serve(&server_channels);
        server_finished.fetch_add(1, Ordering::AcqRel);
    })
    .ok()?;
    sched::spawn_on(cpu, Pinning::Pinned, "client", move || {
        request(&channels);
        finished.fetch_add(1, Ordering::AcqRel);
    })
    .ok()?;
    Some(())
}

fn serve(channels: &PairChannels) {
    let mut request = MessageBuffer::new();
    for _ in 0..TRANSACTIONS {
        if channels.requests.recv(&mut request).is_err() {
            return;
        }
        payload();
        if channels.replies.send(request.message()).is_err() {
            return;
        }
    }
}

fn request(channels: &PairChannels) {
    let mut reply = MessageBuffer::new();
    for _ in 0..TRANSACTIONS {
        payload();
        if channels.requests.call(&MESSAGE, &channels.replies, &mut reply).is_err() {
            return;
        }
    }
}

/// Work that stays on the CPU and touches no shared memory.
fn payload() {
    let mut accumulator = 0u64;
    for turn in 0..PAYLOAD_TURNS {
        accumulator = core::hint::black_box(accumulator.wrapping_add(turn));
    }
    core::hint::black_box(accumulator);
}
