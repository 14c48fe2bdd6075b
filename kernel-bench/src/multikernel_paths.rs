//! `multikernel/*`: the distributed capability protocol between kernels on
//! their own CPUs (issue 20; SemperOS §5.2 measures the same in cycles).
//! Each kernel is a kernel thread pinned to its own CPU with its
//! `caps::distributed::Node`; kernels share only `WordRing` channels (4
//! slots per ordered pair) and wake each other with `sched::unpark` (the
//! wake IPI to an idle CPU). The benchmark thread hands one call at a time
//! to a kernel and waits for its completion; the time is from handing the
//! call over to holding the completion.
//!
//! - `exchange_local` / `exchange_2kernels`: one delegation to a process
//!   of the same kernel / of another kernel (request, reply, acknowledge).
//! - `revoke_chain_<n>_local` / `_2kernels` / `_4kernels`: one revoke of a
//!   chain of `n` copies (each obtained from the last) that lie on one
//!   kernel, or alternate round the kernels. Building the chain is not
//!   measured.
//! - `revoke_tree_<n>_local` / `_2kernels` / `_4kernels`: one revoke of a
//!   root with `n` children (each obtained from the root), the children
//!   on one kernel or spread round the kernels (SemperOS's tree revoke).

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use caps::distributed::{peer_bit, CapKey, ChannelLinks, Channels, Completion, Kernel, KernelId, Node, Outcome, ProcessId};
use sched::Pinning;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use super::records::{now, report, ClockMode};

const LEVEL: Level = Level::new(6);
const SAMPLES: usize = 20;
const CHAIN_LENGTHS: [usize; 4] = [1, 10, 100, 1000];

#[derive(Clone, Copy)]
pub(crate) enum Request {
    Create(ProcessId),
    Delegate { caller: ProcessId, cap: CapKey, to: ProcessId },
    Obtain { caller: ProcessId, parent: CapKey },
    Revoke { caller: ProcessId, cap: CapKey },
}

/// What the kernels and the benchmark thread share.
pub(crate) struct Shared {
    kernels: usize,
    channels: Channels,
    requests: Vec<KernelTicketLock<VecDeque<Request>>>,
    /// Completions (and created roots, as `Done(Some(key))`) for the
    /// benchmark thread.
    answers: KernelTicketLock<VecDeque<Outcome>>,
    waiter: KernelTicketLock<Option<Arc<sched::Thread>>>,
    threads: KernelTicketLock<Vec<Arc<sched::Thread>>>,
    stop: AtomicBool,
}

impl Shared {
    /// For `kernels` kernels, with no requests, threads or answers yet;
    /// answers wake the current thread.
    pub(crate) fn new(kernels: usize) -> Self {
        Self {
            kernels,
            channels: Channels::new(kernels),
            requests: (0..kernels).map(|_| KernelTicketLock::new(LEVEL, VecDeque::new())).collect(),
            answers: KernelTicketLock::new(LEVEL, VecDeque::new()),
            waiter: KernelTicketLock::new(LEVEL, Some(sched::current())),
            threads: KernelTicketLock::new(LEVEL, Vec::new()),
            stop: AtomicBool::new(false),
        }
    }

    /// Kernel `me`'s ends of the channels.
    pub(crate) fn links(&self, me: usize) -> ChannelLinks<'_> {
        self.channels.links(me)
    }

    fn answer(&self, outcome: Outcome) {
        self.answers.lock().push_back(outcome);
        if let Some(waiter) = self.waiter.lock().as_ref() {
            sched::unpark(waiter);
        }
    }
}

/// One kernel's loop: [`turn`] until stopped; it parks when a turn did
/// nothing and nothing waits to be sent.
fn kernel_loop(me: usize, shared: &Shared) {
    while shared.threads.lock().len() < shared.kernels {
        sched::yield_now();
    }
    let mut node = Node::new(Kernel::new(KernelId(me as u8)), shared.kernels);
    let links = shared.links(me);
    while !shared.stop.load(Ordering::Acquire) {
        if !turn(me, &mut node, &links, shared) {
            sched::park();
        }
    }
}

/// One turn of kernel `me`'s loop: its requests, one message per peer,
/// what fits sent (its peers woken if anything was), completions
/// answered; whether it did anything (when not, the loop parks; messages
/// waiting for room wait for the receiver's wake-up). Not inlined, so that `costs/kernel_turn`
/// (`cost_paths.rs`) times the very code the kernels run.
#[inline(never)]
pub(crate) fn turn(me: usize, node: &mut Node, links: &ChannelLinks<'_>, shared: &Shared) -> bool {
    let mut busy = false;
    while let Some(request) = shared.requests[me].lock().pop_front() {
        busy = true;
        let kernel = node.kernel_mut();
        match request {
            Request::Create(owner) => shared.answer(kernel.create(owner).map_or(Outcome::Refused, |key| Outcome::Done(Some(key)))),
            Request::Delegate { caller, cap, to } => drop(kernel.delegate(caller, cap, to)),
            Request::Obtain { caller, parent } => drop(kernel.obtain(caller, parent)),
            Request::Revoke { caller, cap } => drop(kernel.revoke(caller, cap)),
        }
    }
    node.collect();
    busy |= node.receive(links).handled > 0;
    let mut wake = node.freed_for();
    if node.send(links) > 0 {
        wake |= node.sent_to();
    }
    if wake != 0 {
        // Only the kernels that were sent something or that may wait for
        // room in a channel this turn freed: waking the others costs them
        // a turn and a park for nothing.
        shared.threads.lock().iter().enumerate().filter(|(peer, _)| *peer != me && wake & peer_bit(*peer) != 0).for_each(|(_, thread)| sched::unpark(thread));
    }
    for Completion { outcome, .. } in node.kernel_mut().take_completions() {
        shared.answer(outcome);
    }
    // Messages still waiting for room do not keep the kernel spinning: the
    // receiver that frees a slot of the full channel wakes it.
    busy
}

/// `kernels` kernels on CPUs 0.. (round robin), running until dropped
/// (also `costs/kernel_hop`'s, `cost_paths.rs`).
pub(crate) struct Cluster {
    shared: Arc<Shared>,
}

impl Cluster {
    pub(crate) fn start(kernels: usize) -> Option<Self> {
        let shared = Arc::new(Shared::new(kernels));
        let cpus = machine::percpu::online_count();
        for me in 0..kernels {
            let mine = shared.clone();
            let thread = sched::spawn_on(me % cpus, Pinning::Pinned, "bench-kernel", move || kernel_loop(me, &mine)).ok()?;
            shared.threads.lock().push(thread);
        }
        Some(Self { shared })
    }

    /// Hands `request` to `kernel` and waits for the answer.
    pub(crate) fn call(&self, kernel: usize, request: Request) -> Outcome {
        self.shared.requests[kernel].lock().push_back(request);
        if let Some(thread) = self.shared.threads.lock().get(kernel) {
            sched::unpark(thread);
        }
        loop {
            if let Some(outcome) = self.shared.answers.lock().pop_front() {
                return outcome;
            }
            sched::park();
        }
    }

    /// `call`, and the time it took.
    fn timed(&self, kernel: usize, request: Request) -> (Outcome, u64) {
        let start = now();
        let outcome = self.call(kernel, request);
        (outcome, now() - start)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        let threads = self.shared.threads.lock().clone();
        for thread in &threads {
            sched::unpark(thread);
        }
        for thread in &threads {
            while !thread.has_exited() {
                sched::unpark(thread);
                sched::yield_now();
            }
        }
    }
}

pub(crate) fn process(kernel: usize, number: u32) -> ProcessId {
    ProcessId { kernel: KernelId(kernel as u8), number }
}

/// A root held by process 0 of kernel 0.
fn root(cluster: &Cluster) -> Option<CapKey> {
    match cluster.call(0, Request::Create(process(0, 0))) {
        Outcome::Done(key) => key,
        _ => None,
    }
}

pub fn protocol_paths(mode: ClockMode) {
    let unit = mode.unit();
    let Some(cluster) = Cluster::start(4) else { return };
    for (name, span) in [("exchange_local", 1), ("exchange_2kernels", 2)] {
        let Some(cap) = root(&cluster) else { return };
        let mut samples = Vec::new();
        for _ in 0..SAMPLES {
            let to = if span == 1 { process(0, 1) } else { process(1, 0) };
            let (outcome, spent) = cluster.timed(0, Request::Delegate { caller: process(0, 0), cap, to });
            if !matches!(outcome, Outcome::Done(Some(_))) {
                return;
            }
            samples.push(spent as f64);
        }
        let _ = cluster.call(0, Request::Revoke { caller: process(0, 0), cap });
        report("multikernel", name, unit, &mut samples);
    }
    for (shape, lengths) in [("chain", CHAIN_LENGTHS), ("tree", CHAIN_LENGTHS)] {
        for length in lengths {
            for (suffix, span) in [("local", 1), ("2kernels", 2), ("4kernels", 4)] {
                let mut samples = Vec::new();
                for _ in 0..if length >= 100 { 3 } else { 5 } {
                    let Some(spent) = build_and_revoke(&cluster, shape == "chain", length, span) else { return };
                    samples.push(spent as f64);
                }
                report("multikernel", &alloc::format!("revoke_{shape}_{length}_{suffix}"), unit, &mut samples);
            }
        }
    }
}

/// Builds a chain (each copy obtained from the last) or a tree (each from
/// the root) of `length` copies below a new root, copy i on kernel
/// i mod `span` (on one kernel, alternating between two processes), then
/// times the root's revoke; None (after saying why) if a step fails.
fn build_and_revoke(cluster: &Cluster, chain: bool, length: usize, span: usize) -> Option<u64> {
    let shape = if chain { "chain" } else { "tree" };
    let first = root(cluster)?;
    let holder = |i: usize| if span == 1 { process(0, (i % 2) as u32) } else { process(i % span, 0) };
    let mut last = first;
    for i in 1..=length {
        // Obtained, so that the copy is usable when the call returns (a
        // delegation's receiver commits its copy only when the
        // acknowledgement reaches it).
        let parent = if chain { last } else { first };
        match cluster.call(holder(i).kernel.0 as usize, Request::Obtain { caller: holder(i), parent }) {
            Outcome::Done(Some(copy)) => last = copy,
            other => {
                machine::println!("kbench: multikernel: link {i} of a {shape} of {length} over {span} kernel(s): {other:?}");
                return None;
            }
        }
    }
    let (outcome, spent) = cluster.timed(0, Request::Revoke { caller: process(0, 0), cap: first });
    if outcome != Outcome::Done(None) {
        machine::println!("kbench: multikernel: revoke of a {shape} of {length} over {span} kernel(s): {outcome:?}");
        return None;
    }
    Some(spent)
}
