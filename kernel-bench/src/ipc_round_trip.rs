//! `ipc/ipc_roundtrip_{0w,10w,4k}_kernel`: one synchronous IPC call and its
//! reply between two kernel threads on one CPU, in guest instructions.
//!
//! The client sends a request of the given size on one channel and
//! receives a reply of the same size on another; the server does the
//! opposite. A round trip is two sends, two receives and the two context
//! switches between the threads, as mC2 and seL4 measure it.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use machine::percpu;
use sched::Pinning;
use sync::{Channel, KernelBlocking, MessageBuffer};

use super::records::{now, report, ClockMode};

const ROUND_TRIPS_PER_SAMPLE: u64 = 1_000;
const SAMPLES: usize = 5;

/// The two channels of a client/server pair.
struct Pair {
    requests: Channel<KernelBlocking>,
    replies: Channel<KernelBlocking>,
}

/// Every round-trip record, for messages of 0 words, 10 words and a page.
pub fn round_trips(mode: ClockMode) {
    for (name, bytes) in [("ipc_roundtrip_0w_kernel", 0), ("ipc_roundtrip_10w_kernel", 80), ("ipc_roundtrip_4k_kernel", 4096)] {
        let mut samples: Vec<f64> = (0..SAMPLES).filter_map(|_| sample(bytes)).collect();
        report("ipc", name, mode.unit(), &mut samples);
    }
}

/// Instructions (or ns) per round trip of `bytes`-byte messages, or `None`
/// when the server thread cannot be made.
fn sample(bytes: usize) -> Option<f64> {
    let pair = Arc::new(Pair { requests: Channel::new(), replies: Channel::new() });
    let server_pair = pair.clone();
    let rounds = ROUND_TRIPS_PER_SAMPLE + 1;
    let server = sched::spawn_on(percpu::current_index(), Pinning::Pinned, "ipc-server", move || {
        serve(&server_pair, bytes, rounds)
    })
    .ok()?;
    let request = vec![0x5a_u8; bytes];
    let mut reply = MessageBuffer::new();
    // A warm-up round trip: both threads reach their steady loop.
    pair.requests.call(&request, &pair.replies, &mut reply).ok()?;
    let start = now();
    for _ in 0..ROUND_TRIPS_PER_SAMPLE {
        pair.requests.call(&request, &pair.replies, &mut reply).ok()?;
    }
    let elapsed = now() - start;
    while !server.has_exited() {
        sched::yield_now();
    }
    Some(elapsed as f64 / ROUND_TRIPS_PER_SAMPLE as f64)
}

/// Receives `rounds` requests and answers each with `bytes` bytes.
fn serve(pair: &Pair, bytes: usize, rounds: u64) {
    let mut request = MessageBuffer::new();
    let reply = vec![0xa5_u8; bytes];
    for _ in 0..rounds {
        if pair.requests.recv(&mut request).is_err() || pair.replies.send(&reply).is_err() {
            return;
        }
    }
}
