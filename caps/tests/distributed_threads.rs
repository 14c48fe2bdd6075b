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

use std::sync::Arc;
use std::thread;

use caps::distributed::exercise::{chain_scenario, check, scenario, Driver, Finished, Progress, Scenario, Summary};
use caps::distributed::wire::{decode, encode, WORDS};
use caps::distributed::{peer_bit, CapKey, Channels, Kernel, KernelId, Links, Message, Node, ProcessId};
use testkit::Rng;

const KERNELS: usize = 4;
const PROCESSES: u32 = 3;

fn process(kernel: usize, number: u32) -> ProcessId {
    ProcessId { kernel: KernelId(kernel as u8), number }
}

/// Runs one seed: each kernel's `Driver` on its own host thread.
fn run(seed: u64) -> Summary {
    let mut rng = Rng::new(seed);
    run_scenario(scenario(KERNELS, PROCESSES, |bound| rng.below(bound))).unwrap_or_else(|problem| panic!("seed {seed}: {problem}"))
}

/// Runs each of `scenario`'s kernels on its own host thread to quiescence
/// and checks the end.
fn run_scenario(scenario: Scenario) -> Result<Summary, String> {
    let kernels = scenario.kernels.len();
    let progress = Arc::new(Progress::new(&scenario));
    let channels = Arc::new(Channels::new(kernels));
    let threads: Vec<_> = scenario
        .kernels
        .into_iter()
        .zip(scenario.operations)
        .enumerate()
        .map(|(me, (kernel, operations))| {
            let (progress, channels) = (progress.clone(), channels.clone());
            thread::spawn(move || {
                let mut driver = Driver::new(kernel, operations, kernels);
                let links = channels.links(me);
                while !driver.step(&links, &progress).expect("every slot decodes").done {
                    thread::yield_now();
                }
                driver.finish()
            })
        })
        .collect();
    let finished: Vec<Finished> = threads.into_iter().map(|thread| thread.join().expect("a kernel thread")).collect();
    check(&finished)
}

#[test]
fn a_chain_round_every_kernel_is_revoked_whole() {
    for kernels in [2, 4] {
        let chain = chain_scenario(kernels, 200).expect("the chain is built");
        assert_eq!(chain.kernels.iter().map(|kernel| kernel.capabilities().len()).sum::<usize>(), 201);
        let summary = run_scenario(chain).expect("a clean end");
        assert_eq!((summary.revoked, summary.left), (1, 0), "{kernels} kernels");
    }
}

#[test]
fn four_kernels_on_threads_over_bounded_rings_stay_consistent() {
    let (mut revoked, mut left) = (0, 0);
    for seed in 1..=40 {
        let summary = run(seed);
        revoked += summary.revoked;
        left += summary.left;
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

/// Links that take every send.
struct Open;

impl Links for Open {
    fn try_send(&self, _: KernelId, _: &[u64; WORDS]) -> bool {
        true
    }

    fn try_receive(&self, _: KernelId) -> Option<[u64; WORDS]> {
        None
    }
}

#[test]
fn a_node_names_exactly_the_peers_it_sent_to() {
    let mut node = Node::new(Kernel::new(KernelId(0)), 70);
    let owner = process(0, 0);
    let root = node.kernel_mut().create(owner).expect("root");
    for peer in [1, 3, 64, 69] {
        node.kernel_mut().delegate(owner, root, process(peer, 0));
    }
    node.collect();
    assert_eq!(node.send(&Open), 4);
    // Kernels from 63 up share bit 63.
    assert_eq!(node.sent_to(), peer_bit(1) | peer_bit(3) | peer_bit(63));
    assert_eq!(peer_bit(69), peer_bit(63));
    assert_eq!(node.send(&Open), 0);
    assert_eq!(node.sent_to(), 0, "a send that sent nothing names nobody");
}
