//! A random exercise of the protocol over real channels, for the tests
//! that run each kernel on its own host thread or CPU: a starting tree of
//! capabilities over every kernel, each kernel's random operations
//! (obtain, delegate, revoke, a process's death), the loop one kernel runs
//! ([`Driver::step`]: start an operation now and then, receive, send,
//! collect completions) and the check at the end (every call completed,
//! the consistency audit passes, no revoked capability or descendant of
//! one is left).
//!
//! Randomness comes from the caller (`below(n)`: a number in `0..n`), so
//! this crate needs no generator of its own. Quiescence is two shared
//! counts ([`Progress`]): operations not yet started and messages made but
//! not yet handled; a message's consequences are counted before the
//! message is counted down, so neither reads zero early.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::{audit, CapKey, Envelope, Kernel, KernelId, Links, Node, Outcome, ProcessId};

/// One operation a kernel starts for one of its processes.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum Operation {
    Obtain { caller: ProcessId, parent: CapKey },
    Delegate { caller: ProcessId, cap: CapKey, to: ProcessId },
    Revoke { caller: ProcessId, cap: CapKey },
    Kill(ProcessId),
}

/// The kernels with their starting tree, and each kernel's operations.
pub struct Scenario {
    /// Kernel `i` has id `i`.
    pub kernels: Vec<Kernel>,
    /// `operations[i]`: what kernel `i` starts, in order.
    pub operations: Vec<Vec<Operation>>,
}

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

/// `kernels` kernels of `processes` processes each: a root per kernel,
/// 12 delegations spreading a tree over all of them, then 6 operations
/// per kernel on that tree.
pub fn scenario(kernels: usize, processes: u32, mut below: impl FnMut(usize) -> usize) -> Scenario {
    let mut all: Vec<Kernel> = (0..kernels).map(|id| Kernel::new(KernelId(id as u8))).collect();
    let mut held: Vec<(ProcessId, CapKey)> = Vec::new();
    for (kernel, state) in all.iter_mut().enumerate() {
        let owner = process(kernel, 0);
        if let Some(root) = state.create(owner) {
            held.push((owner, root));
        }
    }
    for _ in 0..12 {
        let (owner, cap) = held[below(held.len())];
        let to = process(below(kernels), below(processes as usize) as u32);
        all[owner.kernel.0 as usize].delegate(owner, cap, to);
        settle(&mut all);
        for kernel in all.iter_mut() {
            for completion in kernel.take_completions() {
                if let Outcome::Done(Some(child)) = completion.outcome {
                    held.push((to, child));
                }
            }
        }
    }
    let mut operations = vec![Vec::new(); kernels];
    for (kernel, list) in operations.iter_mut().enumerate() {
        for _ in 0..6 {
            let caller = process(kernel, below(processes as usize) as u32);
            let mine: Vec<CapKey> = held.iter().filter(|(owner, _)| *owner == caller).map(|(_, cap)| *cap).collect();
            let any = held[below(held.len())].1;
            let operation = match below(10) {
                3..=5 if !mine.is_empty() => Operation::Delegate { caller, cap: mine[below(mine.len())], to: process(below(kernels), below(processes as usize) as u32) },
                6..=8 if !mine.is_empty() => Operation::Revoke { caller, cap: mine[below(mine.len())] },
                9 if caller.number != 0 => Operation::Kill(caller),
                _ => Operation::Obtain { caller, parent: any },
            };
            list.push(operation);
        }
    }
    Scenario { kernels: all, operations }
}

/// A chain of `length` copies over `kernels` kernels — copy `i` held by
/// process 0 of kernel `i mod kernels`, each obtained from the one before —
/// and one operation: kernel 0 revokes the chain's root. `None` if the
/// chain could not be built.
pub fn chain_scenario(kernels: usize, length: usize) -> Option<Scenario> {
    let mut all: Vec<Kernel> = (0..kernels).map(|id| Kernel::new(KernelId(id as u8))).collect();
    let owner = process(0, 0);
    let root = all.first_mut()?.create(owner)?;
    let mut last = root;
    for link in 1..=length {
        let holder = process(link % kernels, 0);
        all[link % kernels].obtain(holder, last);
        settle(&mut all);
        let made = all.iter_mut().flat_map(|kernel| kernel.take_completions()).find_map(|completion| match completion.outcome {
            Outcome::Done(Some(copy)) => Some(copy),
            _ => None,
        });
        last = made?;
    }
    let mut operations = vec![Vec::new(); kernels];
    operations[0].push(Operation::Revoke { caller: owner, cap: root });
    Some(Scenario { kernels: all, operations })
}

/// What every kernel's driver shares: the counts that say when all is done.
#[derive(Debug)]
pub struct Progress {
    /// Messages produced and not yet handled (waiting, or in a channel).
    in_flight: AtomicUsize,
    /// Operations not yet started.
    to_start: AtomicUsize,
}

impl Progress {
    /// Nothing in flight, every operation of `scenario` still to start.
    pub fn new(scenario: &Scenario) -> Self {
        Self { in_flight: AtomicUsize::new(0), to_start: AtomicUsize::new(scenario.operations.iter().map(Vec::len).sum()) }
    }

    fn quiet(&self) -> bool {
        self.to_start.load(Ordering::SeqCst) == 0 && self.in_flight.load(Ordering::SeqCst) == 0
    }
}

/// One kernel's loop state.
pub struct Driver {
    node: Node,
    operations: VecDeque<Operation>,
    revokes: BTreeMap<u32, CapKey>,
    calls: usize,
    completed: usize,
    turn: u64,
    revoked: Vec<CapKey>,
}

/// What one turn of a kernel's loop did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// This kernel is idle and nothing is left anywhere: its loop ends
    /// (and should wake its peers so that they see it too).
    pub done: bool,
    /// Messages put into channels (their receivers should be woken).
    pub sent: usize,
    /// Nothing to do until a peer sends or finishes: no operation left to
    /// start, nothing handled, nothing waiting to be sent. A kernel may
    /// then sleep until a peer wakes it.
    pub may_wait: bool,
}

/// A kernel once everything is done.
pub struct Finished {
    /// Its part of the tree.
    pub kernel: Kernel,
    /// Calls it started (deaths are not calls).
    pub calls: usize,
    /// Calls that completed.
    pub completed: usize,
    /// Capabilities whose revoke was acknowledged.
    pub revoked: Vec<CapKey>,
}

/// What a run did: revokes acknowledged and capabilities left.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    /// Revokes acknowledged.
    pub revoked: usize,
    /// Capabilities left in all kernels.
    pub left: usize,
}

impl Driver {
    /// The loop of `kernel`, which starts `operations`; `kernels` in all.
    pub fn new(kernel: Kernel, operations: Vec<Operation>, kernels: usize) -> Self {
        Self { node: Node::new(kernel, kernels), operations: operations.into(), revokes: BTreeMap::new(), calls: 0, completed: 0, turn: 0, revoked: Vec::new() }
    }

    /// One turn of the kernel's loop: every third turn starts an operation;
    /// then one message per peer is handled and what fits is sent. `Err`
    /// for a slot that did not decode.
    pub fn step(&mut self, links: &impl Links, progress: &Progress) -> Result<Turn, String> {
        self.turn += 1;
        if self.turn % 3 == 0 {
            if let Some(operation) = self.operations.pop_front() {
                self.start(operation);
                let produced = self.node.collect();
                progress.in_flight.fetch_add(produced, Ordering::SeqCst);
                progress.to_start.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let round = self.node.receive(links);
        if round.malformed != 0 {
            return Err(format!("kernel {:?}: a slot did not decode", self.node.kernel().id()));
        }
        // What a message caused is counted before the message is counted
        // down, and before any of it is sent.
        progress.in_flight.fetch_add(round.produced, Ordering::SeqCst);
        progress.in_flight.fetch_sub(round.handled, Ordering::SeqCst);
        let sent = self.node.send(links);
        for completion in self.node.kernel_mut().take_completions() {
            self.completed += 1;
            if let (Outcome::Done(None), Some(cap)) = (completion.outcome, self.revokes.get(&completion.op.0)) {
                self.revoked.push(*cap);
            }
        }
        let idle = self.node.idle();
        let done = idle && progress.quiet();
        Ok(Turn { done, sent, may_wait: !done && idle && round.handled == 0 && self.operations.is_empty() })
    }

    fn start(&mut self, operation: Operation) {
        let kernel = self.node.kernel_mut();
        match operation {
            Operation::Obtain { caller, parent } => {
                kernel.obtain(caller, parent);
                self.calls += 1;
            }
            Operation::Delegate { caller, cap, to } => {
                kernel.delegate(caller, cap, to);
                self.calls += 1;
            }
            Operation::Revoke { caller, cap } => {
                let op = kernel.revoke(caller, cap);
                self.revokes.insert(op.0, cap);
                self.calls += 1;
            }
            Operation::Kill(victim) => kernel.kill(victim.number),
        }
    }

    /// The kernel and its counts, once `step` said all is done.
    pub fn finish(self) -> Finished {
        Finished { kernel: self.node.into_kernel(), calls: self.calls, completed: self.completed, revoked: self.revoked }
    }
}

/// The end of a run: every call completed, the audit of every kernel
/// passes, and no revoked capability, nor anything below one, is left.
pub fn check(finished: &[Finished]) -> Result<Summary, String> {
    for done in finished {
        if done.calls != done.completed {
            return Err(format!("kernel {:?} completed {} of {} calls", done.kernel.id(), done.completed, done.calls));
        }
    }
    audit(finished.iter().map(|done| &done.kernel))?;
    let revoked: BTreeSet<CapKey> = finished.iter().flat_map(|done| done.revoked.iter().copied()).collect();
    let all: BTreeMap<CapKey, Option<CapKey>> = finished.iter().flat_map(|done| done.kernel.capabilities()).map(|cap| (cap.key, cap.parent)).collect();
    for (key, mut parent) in all.iter().map(|(key, parent)| (*key, *parent)) {
        if revoked.contains(&key) {
            return Err(format!("revoked {key:?} is still there"));
        }
        while let Some(up) = parent {
            if revoked.contains(&up) {
                return Err(format!("{key:?} descends from revoked {up:?}"));
            }
            parent = all.get(&up).copied().flatten();
        }
    }
    Ok(Summary { revoked: revoked.len(), left: all.len() })
}
