//! The distributed capability protocol run for real: each kernel a host
//! thread with its `Node` (a `Kernel` and its outgoing queues), every
//! message encoded into a slot of a
//! bounded `sync::WordRing` (4 slots per ordered pair, as SemperOS's four
//! in-flight messages per kernel pair) and decoded on the other side; a
//! full ring keeps the sender's messages in order for later. Random
//! obtains, delegations, revokes and deaths start on every kernel at once.
//! Once nothing is in flight, the consistency audit of every kernel must
//! pass, every call must have completed, and no revoked capability may have
//! a descendant left.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use caps::distributed::wire::{decode, encode, WORDS};
use caps::distributed::{audit, CapKey, Envelope, Kernel, KernelId, Links, Message, Node, Outcome, ProcessId};
use sync::WordRing;
use testkit::Rng;

const KERNELS: usize = 4;
const PROCESSES: u32 = 3;
const SLOTS: usize = 4;

type Ring = WordRing<WORDS, SLOTS>;

fn process(kernel: usize, number: u32) -> ProcessId {
    ProcessId { kernel: KernelId(kernel as u8), number }
}

/// Runs `kernels` with FIFO delivery in one thread until nothing is left
/// (for building the starting tree).
fn settle(kernels: &mut [Kernel]) {
    let mut queue: VecDeque<Envelope> = VecDeque::new();
    loop {
        for kernel in kernels.iter_mut() {
            queue.extend(kernel.take_outbox());
        }
        let Some(envelope) = queue.pop_front() else { return };
        kernels[envelope.to.0 as usize].receive(envelope.from, envelope.message);
    }
}

#[derive(Clone, Copy, Debug)]
enum Operation {
    Obtain { caller: ProcessId, parent: CapKey },
    Delegate { caller: ProcessId, cap: CapKey, to: ProcessId },
    Revoke { caller: ProcessId, cap: CapKey },
    Kill(ProcessId),
}

/// A tree of capabilities over every kernel, held by random processes,
/// and each kernel's random operations on it.
fn scenario(seed: u64) -> (Vec<Kernel>, Vec<Vec<Operation>>, Vec<(ProcessId, CapKey)>) {
    let mut rng = Rng::new(seed);
    let mut kernels: Vec<Kernel> = (0..KERNELS).map(|id| Kernel::new(KernelId(id as u8))).collect();
    let mut held: Vec<(ProcessId, CapKey)> = Vec::new();
    for kernel in 0..KERNELS {
        let owner = process(kernel, 0);
        let root = kernels[kernel].create(owner).expect("a root");
        held.push((owner, root));
    }
    for _ in 0..12 {
        let (owner, cap) = held[rng.below(held.len())];
        let to = process(rng.below(KERNELS), rng.below(PROCESSES as usize) as u32);
        kernels[owner.kernel.0 as usize].delegate(owner, cap, to);
        settle(&mut kernels);
        for kernel in kernels.iter_mut() {
            for completion in kernel.take_completions() {
                if let Outcome::Done(Some(child)) = completion.outcome {
                    held.push((to, child));
                }
            }
        }
    }
    let mut operations = vec![Vec::new(); KERNELS];
    for (kernel, list) in operations.iter_mut().enumerate() {
        for _ in 0..6 {
            let caller = process(kernel, rng.below(PROCESSES as usize) as u32);
            let mine: Vec<CapKey> = held.iter().filter(|(owner, _)| *owner == caller).map(|(_, cap)| *cap).collect();
            let any = held[rng.below(held.len())].1;
            let operation = match rng.below(10) {
                0..=2 => Operation::Obtain { caller, parent: any },
                3..=5 if !mine.is_empty() => {
                    Operation::Delegate { caller, cap: mine[rng.below(mine.len())], to: process(rng.below(KERNELS), rng.below(PROCESSES as usize) as u32) }
                }
                6..=8 if !mine.is_empty() => Operation::Revoke { caller, cap: mine[rng.below(mine.len())] },
                9 if caller.number != 0 => Operation::Kill(caller),
                _ => Operation::Obtain { caller, parent: any },
            };
            list.push(operation);
        }
    }
    (kernels, operations, held)
}

struct Shared {
    /// rings[from][to]
    rings: Vec<Vec<Ring>>,
    /// Messages produced and not yet handled (waiting, or in a ring).
    in_flight: AtomicUsize,
    /// Operations not yet started.
    to_start: AtomicUsize,
}

/// One kernel's view of the rings.
struct KernelLinks<'a> {
    me: usize,
    shared: &'a Shared,
}

impl Links for KernelLinks<'_> {
    fn try_send(&self, to: KernelId, words: &[u64; WORDS]) -> bool {
        self.shared.rings[self.me][to.0 as usize].try_send(words).is_ok()
    }

    fn try_receive(&self, from: KernelId) -> Option<[u64; WORDS]> {
        self.shared.rings[from.0 as usize][self.me].try_receive()
    }
}

fn run_kernel(kernel: Kernel, mut operations: VecDeque<Operation>, shared: Arc<Shared>, revoked: Arc<Mutex<BTreeSet<CapKey>>>) -> (Kernel, usize, usize) {
    let me = kernel.id().0 as usize;
    let mut node = Node::new(kernel, KERNELS);
    let links = KernelLinks { me, shared: &shared };
    let mut revokes: BTreeMap<u32, CapKey> = BTreeMap::new();
    let (mut calls, mut completed) = (0, 0);
    let mut turn = 0u64;
    loop {
        turn += 1;
        // Start an operation now and then.
        if turn % 3 == 0 {
            if let Some(operation) = operations.pop_front() {
                let kernel = node.kernel_mut();
                match operation {
                    Operation::Obtain { caller, parent } => {
                        kernel.obtain(caller, parent);
                        calls += 1;
                    }
                    Operation::Delegate { caller, cap, to } => {
                        kernel.delegate(caller, cap, to);
                        calls += 1;
                    }
                    Operation::Revoke { caller, cap } => {
                        let op = kernel.revoke(caller, cap);
                        revokes.insert(op.0, cap);
                        calls += 1;
                    }
                    Operation::Kill(victim) => kernel.kill(victim.number),
                }
                let produced = node.collect();
                shared.in_flight.fetch_add(produced, Ordering::SeqCst);
                shared.to_start.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let round = node.receive(&links);
        assert_eq!(round.malformed, 0, "a slot did not decode");
        // What a message caused is counted before the message is counted
        // down, and before any of it is sent (so the count never reads 0
        // while something is still to be handled).
        shared.in_flight.fetch_add(round.produced, Ordering::SeqCst);
        shared.in_flight.fetch_sub(round.handled, Ordering::SeqCst);
        node.send(&links);
        for completion in node.kernel_mut().take_completions() {
            completed += 1;
            if let (Outcome::Done(None), Some(cap)) = (completion.outcome, revokes.get(&completion.op.0)) {
                revoked.lock().expect("revoked").insert(*cap);
            }
        }
        if node.idle() && shared.to_start.load(Ordering::SeqCst) == 0 && shared.in_flight.load(Ordering::SeqCst) == 0 {
            return (node.into_kernel(), calls, completed);
        }
        thread::yield_now();
    }
}

/// Runs one seed; the revokes acknowledged and the capabilities left.
fn run(seed: u64) -> (usize, usize) {
    let (kernels, operations, _) = scenario(seed);
    let total: usize = operations.iter().map(Vec::len).sum();
    let shared = Arc::new(Shared {
        rings: (0..KERNELS).map(|_| (0..KERNELS).map(|_| Ring::new()).collect()).collect(),
        in_flight: AtomicUsize::new(0),
        to_start: AtomicUsize::new(total),
    });
    let revoked = Arc::new(Mutex::new(BTreeSet::new()));
    let threads: Vec<_> = kernels
        .into_iter()
        .zip(operations)
        .map(|(kernel, list)| {
            let (shared, revoked) = (shared.clone(), revoked.clone());
            thread::spawn(move || run_kernel(kernel, list.into(), shared, revoked))
        })
        .collect();
    let results: Vec<(Kernel, usize, usize)> = threads.into_iter().map(|thread| thread.join().expect("a kernel thread")).collect();
    for (kernel, calls, completed) in &results {
        assert_eq!(calls, completed, "seed {seed}: kernel {:?} completed {completed} of {calls} calls", kernel.id());
    }
    let kernels: Vec<&Kernel> = results.iter().map(|(kernel, _, _)| kernel).collect();
    if let Err(problem) = audit(kernels.iter().copied()) {
        panic!("seed {seed}: {problem}");
    }
    let revoked = revoked.lock().expect("revoked");
    let all: BTreeMap<CapKey, Option<CapKey>> = kernels.iter().flat_map(|kernel| kernel.capabilities()).map(|cap| (cap.key, cap.parent)).collect();
    for (key, mut parent) in all.iter().map(|(key, parent)| (*key, *parent)) {
        assert!(!revoked.contains(&key), "seed {seed}: revoked {key:?} is still there");
        while let Some(up) = parent {
            assert!(!revoked.contains(&up), "seed {seed}: {key:?} descends from revoked {up:?}");
            parent = all.get(&up).copied().flatten();
        }
    }
    (revoked.len(), all.len())
}

#[test]
fn four_kernels_on_threads_over_bounded_rings_stay_consistent() {
    let (mut revoked, mut left) = (0, 0);
    for seed in 1..=40 {
        let (revokes, caps) = run(seed);
        revoked += revokes;
        left += caps;
    }
    // The runs did something: revokes were acknowledged, and not everything went.
    println!("40 runs: {revoked} revokes acknowledged, {left} capabilities left");
    assert!(revoked >= 20 && left >= 40, "{revoked} revokes, {left} capabilities left");
}

#[test]
fn every_message_survives_its_encoding_and_bad_words_are_refused() {
    let key = |kernel: u8, index: u32| CapKey { kernel: KernelId(kernel), index };
    let to = process(3, 7);
    let all = [
        Message::ObtainRequest { op: caps::distributed::OpId(1), parent: key(0, 2), child: key(1, 3) },
        Message::ObtainReply { op: caps::distributed::OpId(u32::MAX), parent: key(255, u32::MAX), child: key(1, 0), granted: true },
        Message::ObtainAbandoned { parent: key(2, 9), child: key(3, 1) },
        Message::DelegateRequest { op: caps::distributed::OpId(4), parent: key(0, 0), to },
        Message::DelegateReply { op: caps::distributed::OpId(5), parent: key(0, 1), child: None },
        Message::DelegateReply { op: caps::distributed::OpId(5), parent: key(0, 1), child: Some(key(2, 2)) },
        Message::DelegateAck { parent: key(0, 1), child: key(2, 2), commit: false },
        Message::DelegateAbandoned { parent: key(0, 1), child: key(2, 2) },
        Message::RevokeRequest { cap: key(1, 1), reply_to: key(0, 0) },
        Message::RevokeReply { root: key(0, 0) },
        Message::Unlink { parent: key(3, 3), child: key(0, 4) },
    ];
    for message in &all {
        assert_eq!(decode(&encode(message)).as_ref(), Ok(message));
    }
    // Random words: decoded or refused, never a panic; what decodes
    // encodes back to the same words (one encoding per message).
    let mut rng = Rng::new(7);
    for _ in 0..200_000 {
        let mut words = [0u64; WORDS];
        words[0] = rng.below(12) as u64;
        for word in words.iter_mut().skip(1) {
            *word = match rng.below(4) {
                0 => 0,
                1 => rng.below(3) as u64,
                2 => rng.next_u64() & 0xFF_FFFF_FFFF,
                _ => rng.next_u64(),
            };
        }
        if let Ok(message) = decode(&words) {
            assert_eq!(encode(&message), words);
        }
    }
}

/// Links that deliver one garbage slot from kernel 1 and refuse every send.
struct Garbage(std::cell::Cell<bool>);

impl Links for Garbage {
    fn try_send(&self, _: KernelId, _: &[u64; WORDS]) -> bool {
        false
    }

    fn try_receive(&self, from: KernelId) -> Option<[u64; WORDS]> {
        (from == KernelId(1) && !self.0.replace(true)).then_some([99, 1, 2, 3, 4])
    }
}

#[test]
fn a_node_refuses_a_malformed_slot_and_keeps_what_it_cannot_send() {
    let mut node = Node::new(Kernel::new(KernelId(0)), 2);
    let owner = process(0, 0);
    let root = node.kernel_mut().create(owner).expect("root");
    node.kernel_mut().delegate(owner, root, process(1, 0));
    assert_eq!(node.collect(), 1);
    let links = Garbage(std::cell::Cell::new(false));
    let round = node.poll(&links);
    assert_eq!((round.handled, round.malformed, round.sent), (0, 1, 0));
    assert_eq!(node.malformed(), 1);
    assert!(!node.idle(), "the delegation request waits for room");
}
