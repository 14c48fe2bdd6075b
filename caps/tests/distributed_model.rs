//! Model checking of the distributed capability protocol with stateright,
//! over the kernels' real state machines (`caps::distributed::Kernel`):
//! every interleaving of message deliveries (FIFO per pair of kernels) and
//! of the scripted operations' starts is explored.
//!
//! Invariants, in every state: an acknowledged revoke leaves no usable
//! descendant anywhere (checked against the lineage of every capability
//! ever made, kept beside the kernels); no channel holds more than
//! `CHANNEL_BOUND` messages. Once every operation started and every
//! message is delivered: every operation completed (so no deadlock,
//! including cycles of kernels), nothing is marked, half-delegated or
//! still open, and every parent and child link agrees with its partner.
//!
//! Each deliberate mistake of `caps::distributed::Flaws`, and an
//! unordered network, must be caught: the checker finds a counterexample.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use caps::distributed::{CapKey, Flaws, Kernel, KernelId, Message, OpId, Outcome, ProcessId};
use stateright::{Checker, Model, Property};

/// Most messages one channel (one ordered pair of kernels) may hold.
const CHANNEL_BOUND: usize = 6;

fn process(kernel: u8, number: u32) -> ProcessId {
    ProcessId { kernel: KernelId(kernel), number }
}

/// A system call (or a death) the model may start at any point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Operation {
    Obtain { caller: ProcessId, parent: CapKey },
    Delegate { caller: ProcessId, cap: CapKey, to: ProcessId },
    Revoke { caller: ProcessId, cap: CapKey },
    Kill(ProcessId),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    kernels: Vec<Kernel>,
    channels: BTreeMap<(u8, u8), VecDeque<Message>>,
    /// Per scripted operation: its call once started.
    started: Vec<Option<(KernelId, OpId)>>,
    finished: BTreeMap<(KernelId, OpId), Outcome>,
    /// Every capability ever made and all its ancestors (ghost state).
    lineage: BTreeMap<CapKey, Vec<CapKey>>,
    /// Capabilities whose revoke was acknowledged to its caller.
    revoked: BTreeSet<CapKey>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Action {
    Start(usize),
    /// Deliver the message at `position` of channel (from, to): always the
    /// head on an ordered network.
    Deliver { from: u8, to: u8, position: usize },
}

struct Scenario {
    initial: State,
    operations: Vec<Operation>,
    ordered: bool,
}

impl State {
    fn kernel(&mut self, id: KernelId) -> &mut Kernel {
        &mut self.kernels[id.0 as usize]
    }

    /// Moves what the kernels produced into the channels and the records.
    fn collect(&mut self) {
        for index in 0..self.kernels.len() {
            for envelope in self.kernels[index].take_outbox() {
                self.channels.entry((envelope.from.0, envelope.to.0)).or_default().push_back(envelope.message);
            }
            let id = self.kernels[index].id();
            for completion in self.kernels[index].take_completions() {
                self.finished.insert((id, completion.op), completion.outcome);
            }
        }
        self.channels.retain(|_, queue| !queue.is_empty());
        for kernel in &self.kernels {
            for cap in kernel.capabilities() {
                if !self.lineage.contains_key(&cap.key) {
                    let mut ancestors = Vec::new();
                    if let Some(parent) = cap.parent {
                        ancestors.extend(self.lineage.get(&parent).cloned().unwrap_or_default());
                        ancestors.push(parent);
                    }
                    self.lineage.insert(cap.key, ancestors);
                }
            }
        }
    }

    fn quiet(&self) -> bool {
        self.channels.is_empty() && self.started.iter().all(Option::is_some)
    }
}

/// Builds a starting state by running `setup` to completion, one message
/// at a time in FIFO order: the capability tree the scenario starts from.
fn build(kernels: u8, processes_per_kernel: u32, setup: impl FnOnce(&mut Vec<Kernel>) -> Vec<CapKey>, flaws: Flaws) -> (State, Vec<CapKey>) {
    let mut state = State {
        kernels: (0..kernels).map(|id| Kernel::with_flaws(KernelId(id), flaws)).collect(),
        channels: BTreeMap::new(),
        started: Vec::new(),
        finished: BTreeMap::new(),
        lineage: BTreeMap::new(),
        revoked: BTreeSet::new(),
    };
    let _ = processes_per_kernel;
    let keys = setup(&mut state.kernels);
    state.collect();
    settle(&mut state);
    state.finished.clear();
    (state, keys)
}

/// Delivers every message, FIFO, until none is left.
fn settle(state: &mut State) {
    while let Some((&(from, to), _)) = state.channels.iter().next() {
        let message = state.channels.get_mut(&(from, to)).and_then(VecDeque::pop_front).expect("a message");
        state.kernel(KernelId(to)).receive(KernelId(from), message);
        state.collect();
    }
}

/// Delegates `cap` of `caller` to `to` during setup and returns the copy.
fn delegated(kernels: &mut Vec<Kernel>, caller: ProcessId, cap: CapKey, to: ProcessId) -> CapKey {
    let mut state = State {
        kernels: std::mem::take(kernels),
        channels: BTreeMap::new(),
        started: Vec::new(),
        finished: BTreeMap::new(),
        lineage: BTreeMap::new(),
        revoked: BTreeSet::new(),
    };
    let op = state.kernel(caller.kernel).delegate(caller, cap, to);
    state.collect();
    settle(&mut state);
    let outcome = state.finished.get(&(caller.kernel, op)).copied();
    *kernels = state.kernels;
    match outcome {
        Some(Outcome::Done(Some(child))) => child,
        other => panic!("setup delegation failed: {other:?}"),
    }
}

impl Model for Scenario {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut state = self.initial.clone();
        state.started = vec![None; self.operations.len()];
        vec![state]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (index, started) in state.started.iter().enumerate() {
            if started.is_none() {
                actions.push(Action::Start(index));
            }
        }
        for (&(from, to), queue) in &state.channels {
            let positions = if self.ordered { 1 } else { queue.len() };
            for position in 0..positions {
                actions.push(Action::Deliver { from, to, position });
            }
        }
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        let mut next = state.clone();
        match action {
            Action::Start(index) => {
                let call = match self.operations[index] {
                    Operation::Obtain { caller, parent } => Some((caller.kernel, next.kernel(caller.kernel).obtain(caller, parent))),
                    Operation::Delegate { caller, cap, to } => Some((caller.kernel, next.kernel(caller.kernel).delegate(caller, cap, to))),
                    Operation::Revoke { caller, cap } => {
                        let op = next.kernel(caller.kernel).revoke(caller, cap);
                        Some((caller.kernel, op))
                    }
                    Operation::Kill(victim) => {
                        next.kernel(victim.kernel).kill(victim.number);
                        None
                    }
                };
                // A death is an operation with nothing to wait for.
                next.started[index] = Some(call.unwrap_or((KernelId(u8::MAX), OpId(index as u32))));
                if call.is_none() {
                    next.finished.insert((KernelId(u8::MAX), OpId(index as u32)), Outcome::Done(None));
                }
            }
            Action::Deliver { from, to, position } => {
                let message = next.channels.get_mut(&(from, to))?.remove(position)?;
                next.kernel(KernelId(to)).receive(KernelId(from), message);
            }
        }
        let before: BTreeSet<(KernelId, OpId)> = next.finished.keys().copied().collect();
        next.collect();
        // Revokes acknowledged by this step.
        for (index, operation) in self.operations.iter().enumerate() {
            if let (Operation::Revoke { cap, .. }, Some(call)) = (operation, next.started[index]) {
                if !before.contains(&call) && next.finished.get(&call) == Some(&Outcome::Done(None)) {
                    next.revoked.insert(*cap);
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("an acknowledged revoke leaves no descendant", |_, state: &State| {
                // Usable ones: a copy not yet committed (or being revoked)
                // gives no access, and quiescence checks none is left.
                state.kernels.iter().flat_map(Kernel::capabilities).filter(|cap| cap.live).all(|cap| {
                    !state.revoked.contains(&cap.key) && state.lineage.get(&cap.key).is_none_or(|ancestors| ancestors.iter().all(|a| !state.revoked.contains(a)))
                })
            }),
            Property::always("channels stay bounded", |_, state: &State| state.channels.values().all(|queue| queue.len() <= CHANNEL_BOUND)),
            Property::always("every operation completes", |_, state: &State| {
                !state.quiet() || state.started.iter().flatten().all(|call| state.finished.contains_key(call))
            }),
            Property::always("at quiescence nothing is open and every link agrees", |_, state: &State| {
                !state.quiet() || consistent(state)
            }),
        ]
    }
}

/// The crate's own audit (every capability live, nothing open, links
/// agreeing across kernels).
fn consistent(state: &State) -> bool {
    caps::distributed::audit(&state.kernels).is_ok()
}

/// A chain spanning three kernels and back: R@0 → A@1 → B@2 → C@0, each
/// held by process 0 of its kernel (a revoke of R crosses 0→1→2→0).
fn chain_of_three(flaws: Flaws) -> (State, Vec<CapKey>) {
    build(3, 2, |kernels| {
        let root = kernels[0].create(process(0, 0)).expect("root");
        let a = delegated(kernels, process(0, 0), root, process(1, 0));
        let b = delegated(kernels, process(1, 0), a, process(2, 0));
        let c = delegated(kernels, process(2, 0), b, process(0, 0));
        vec![root, a, b, c]
    }, flaws)
}

fn check(scenario: Scenario) -> impl Checker<Scenario> {
    scenario.checker().spawn_bfs().join()
}

/// Three kernels, one open operation each (exhaustive): the root's
/// revoke, a delegation from the middle of the chain to a third process,
/// and an obtain of the chain's end from another kernel.
fn three_kernels_one_operation_each(flaws: Flaws, ordered: bool) -> Scenario {
    let (initial, keys) = chain_of_three(flaws);
    let (root, a, _b, c) = (keys[0], keys[1], keys[2], keys[3]);
    Scenario {
        initial,
        operations: vec![
            Operation::Revoke { caller: process(0, 0), cap: root },
            Operation::Delegate { caller: process(1, 0), cap: a, to: process(2, 1) },
            Operation::Obtain { caller: process(2, 1), parent: c },
        ],
        ordered,
    }
}

#[test]
fn three_kernels_with_one_operation_each_keep_every_invariant() {
    let checker = check(three_kernels_one_operation_each(Flaws::default(), true));
    checker.assert_properties();
    println!("three kernels, one operation each: {} states", checker.unique_state_count());
    assert!(checker.unique_state_count() > 100, "the model explored too little to mean anything");
}

#[test]
fn overlapping_revokes_deaths_and_exchanges_on_four_kernels_keep_every_invariant() {
    let (initial, keys) = build(4, 2, |kernels| {
        let root = kernels[0].create(process(0, 0)).expect("root");
        let a = delegated(kernels, process(0, 0), root, process(1, 0));
        let b = delegated(kernels, process(1, 0), a, process(2, 0));
        let c = delegated(kernels, process(2, 0), b, process(3, 0));
        vec![root, a, b, c]
    }, Flaws::default());
    let (root, _a, b, c) = (keys[0], keys[1], keys[2], keys[3]);
    let scenario = Scenario {
        initial,
        operations: vec![
            Operation::Revoke { caller: process(0, 0), cap: root },
            Operation::Revoke { caller: process(2, 0), cap: b },
            Operation::Delegate { caller: process(3, 0), cap: c, to: process(0, 1) },
            Operation::Kill(process(1, 0)),
        ],
        ordered: true,
    };
    let checker = check(scenario);
    checker.assert_properties();
    println!("four kernels, four operations: {} states", checker.unique_state_count());
}

#[test]
fn a_receiver_or_obtainer_dying_mid_exchange_leaves_no_orphan() {
    let (initial, keys) = build(2, 2, |kernels| vec![kernels[0].create(process(0, 0)).expect("root")], Flaws::default());
    let root = keys[0];
    let scenario = Scenario {
        initial,
        operations: vec![
            Operation::Delegate { caller: process(0, 0), cap: root, to: process(1, 0) },
            Operation::Obtain { caller: process(1, 1), parent: root },
            Operation::Kill(process(1, 0)),
            Operation::Kill(process(1, 1)),
        ],
        ordered: true,
    };
    check(scenario).assert_properties();
}

fn must_be_caught(flaws: Flaws, ordered: bool, property: &'static str) {
    let checker = check(three_kernels_one_operation_each(flaws, ordered));
    checker.assert_any_discovery(property);
}

#[test]
fn an_early_acknowledgement_is_caught() {
    must_be_caught(Flaws { early_ack: true, ..Flaws::default() }, true, "an acknowledged revoke leaves no descendant");
}

/// Two revokes of one chain at once: the root's (kernel 0) and its first
/// link's (kernel 1, which the root's reaches and joins or is joined by).
fn overlapping_revokes(flaws: Flaws) -> Scenario {
    let (initial, keys) = chain_of_three(flaws);
    Scenario {
        initial,
        operations: vec![Operation::Revoke { caller: process(0, 0), cap: keys[0] }, Operation::Revoke { caller: process(1, 0), cap: keys[1] }],
        ordered: true,
    }
}

#[test]
fn overlapping_revokes_are_acknowledged_only_when_complete() {
    check(overlapping_revokes(Flaws::default())).assert_properties();
}

#[test]
fn an_overlapping_revoke_acknowledged_at_once_is_caught() {
    check(overlapping_revokes(Flaws { join_acks_at_once: true, ..Flaws::default() })).assert_any_discovery("an acknowledged revoke leaves no descendant");
}

#[test]
fn a_tree_over_five_kernels_with_four_operations_keeps_every_invariant() {
    // R@0 with children on 1 and 2; 1's copy delegated on to 3, 2's to 4,
    // and 4's back to 1.
    let (initial, keys) = build(5, 2, |kernels| {
        let root = kernels[0].create(process(0, 0)).expect("root");
        let one = delegated(kernels, process(0, 0), root, process(1, 0));
        let two = delegated(kernels, process(0, 0), root, process(2, 0));
        let three = delegated(kernels, process(1, 0), one, process(3, 0));
        let four = delegated(kernels, process(2, 0), two, process(4, 0));
        let back = delegated(kernels, process(4, 0), four, process(1, 1));
        vec![root, one, two, three, four, back]
    }, Flaws::default());
    let scenario = Scenario {
        initial,
        operations: vec![
            Operation::Revoke { caller: process(0, 0), cap: keys[0] },
            Operation::Revoke { caller: process(2, 0), cap: keys[2] },
            Operation::Obtain { caller: process(3, 1), parent: keys[5] },
            Operation::Kill(process(4, 0)),
        ],
        ordered: true,
    };
    let checker = check(scenario);
    checker.assert_properties();
    println!("five kernels, four operations: {} states", checker.unique_state_count());
}

#[test]
fn a_delegation_committed_without_rechecking_its_parent_is_caught() {
    must_be_caught(Flaws { delegate_without_recheck: true, ..Flaws::default() }, true, "at quiescence nothing is open and every link agrees");
}

#[test]
fn counting_a_remote_child_twice_is_caught() {
    must_be_caught(Flaws { count_twice: true, ..Flaws::default() }, true, "every operation completes");
}

#[test]
fn a_joiner_never_told_is_caught() {
    check(overlapping_revokes(Flaws { forget_joiners: true, ..Flaws::default() })).assert_any_discovery("every operation completes");
}

#[test]
fn an_unordered_network_is_caught() {
    let checker = check(three_kernels_one_operation_each(Flaws::default(), false));
    let caught = ["an acknowledged revoke leaves no descendant", "every operation completes", "at quiescence nothing is open and every link agrees"]
        .iter()
        .any(|property| checker.discovery(property).is_some());
    assert!(caught, "reordering messages between two kernels broke nothing the checker sees");
}
