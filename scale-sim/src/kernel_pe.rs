//! A kernel PE: the protocol's `Kernel` state machine behind a queue of
//! messages from other kernels and system calls from its group's PEs, one
//! item at a time, each charged from the cost model.
//!
//! Must never hold back a message from another kernel (that is what keeps
//! cycles of kernels from deadlocking); only system calls wait for a free
//! kernel thread.

use std::collections::{BTreeMap, VecDeque};

use caps::distributed::{Kernel, KernelId, Message, OpId, Outcome, ProcessId};

use crate::costs::CostModel;
use crate::world::{Call, Event, KernelWait, Pe, World};

/// What a kernel item started: an operation to answer later, an answer
/// now, or nothing to answer.
enum Started {
    Op(OpId),
    Answered(Outcome),
    Nothing,
}

struct WaitingCall {
    caller: ProcessId,
    pe: Pe,
    call: Call,
}

pub(crate) struct KernelPe {
    pub state: Kernel,
    messages: VecDeque<(usize, Message)>,
    calls: VecDeque<WaitingCall>,
    busy: bool,
    parked: bool,
    open: BTreeMap<OpId, Pe>,
    /// The most system calls open at once.
    pub most_open: usize,
    /// Instructions spent on items.
    pub busy_time: u64,
}

impl KernelPe {
    pub fn new(state: Kernel) -> Self {
        Self { state, messages: VecDeque::new(), calls: VecDeque::new(), busy: false, parked: true, open: BTreeMap::new(), most_open: 0, busy_time: 0 }
    }
}

/// What handling one message costs before its per-capability work.
fn message_cost(costs: &CostModel, message: &Message) -> u64 {
    costs.message_receive
        + match message {
            Message::ObtainRequest { .. } => costs.handle_obtain_request,
            Message::ObtainReply { .. } => costs.handle_obtain_reply,
            Message::DelegateRequest { .. } => costs.handle_delegate_request,
            Message::DelegateReply { .. } => costs.handle_delegate_reply,
            Message::DelegateAck { .. } => costs.handle_delegate_ack,
            Message::RevokeRequest { .. } => costs.handle_revoke_request,
            Message::RevokeReply { .. } => costs.handle_revoke_reply,
            Message::ObtainAbandoned { .. } | Message::DelegateAbandoned { .. } | Message::Unlink { .. } => costs.handle_unlink,
        }
}

/// What a system call costs on kernel `me` before its per-capability work.
fn call_cost(costs: &CostModel, me: KernelId, call: &Call) -> u64 {
    costs.message_receive
        + match call {
            Call::Create => costs.call_obtain_local,
            Call::Obtain { parent } if parent.kernel == me => costs.call_obtain_local,
            Call::Obtain { .. } => costs.call_obtain_remote,
            Call::Delegate { to, .. } if to.kernel == me => costs.call_delegate_local,
            Call::Delegate { .. } => costs.call_delegate_remote,
            Call::Revoke { .. } | Call::Exit => costs.call_revoke_leaf,
        }
}

impl World {
    pub(crate) fn kernel_message_arrived(&mut self, kernel: usize, from: usize, message: Message) {
        self.kernels[kernel].messages.push_back((from, message));
        self.kernel_start_next(kernel);
    }

    pub(crate) fn kernel_call_arrived(&mut self, kernel: usize, caller: ProcessId, pe: Pe, call: Call) {
        self.kernels[kernel].calls.push_back(WaitingCall { caller, pe, call });
        self.kernel_start_next(kernel);
    }

    pub(crate) fn kernel_free(&mut self, kernel: usize) {
        self.kernels[kernel].busy = false;
        self.kernel_start_next(kernel);
    }

    /// Starts the kernel's next item if it is idle: a message first, else a
    /// call if a thread is free; with nothing to do it parks.
    fn kernel_start_next(&mut self, kernel: usize) {
        let pe = &mut self.kernels[kernel];
        if pe.busy {
            return;
        }
        // Every item costs a turn of the loop; waking from a park, the
        // wake-up and the empty turn that decided to park.
        let wake = self.costs.kernel_turn
            + match (pe.parked, self.wait) {
                (true, KernelWait::Park) => self.costs.notify + self.costs.kernel_turn,
                _ => 0,
            };
        if let Some((from, message)) = pe.messages.pop_front() {
            if let Some(next) = self.fabric.take(from, kernel) {
                self.queue.schedule(self.now, Event::KernelMessage { kernel, from, message: next });
            }
            let mut cost = wake + message_cost(&self.costs, &message);
            if matches!(message, Message::RevokeReply { .. }) && !self.kernels[kernel].state.finishes_with_reply(&message) {
                // Not the last reply: a count goes down, nothing is removed.
                cost = cost - self.costs.handle_revoke_reply + self.costs.handle_unlink;
            }
            self.kernel_run(kernel, cost, Pe::Driver, |state| {
                state.receive(KernelId(from as u8), message);
                Started::Nothing
            });
        } else if pe.open.len() < self.layout.threads && !pe.calls.is_empty() {
            let Some(WaitingCall { caller, pe: who, call }) = pe.calls.pop_front() else { return };
            let cost = wake + call_cost(&self.costs, pe.state.id(), &call);
            self.kernel_run(kernel, cost, who, |state| match call {
                Call::Create => Started::Answered(state.create(caller).map_or(Outcome::Refused, |key| Outcome::Done(Some(key)))),
                Call::Obtain { parent } => Started::Op(state.obtain(caller, parent)),
                Call::Delegate { cap, to } => Started::Op(state.delegate(caller, cap, to)),
                Call::Revoke { cap } => Started::Op(state.revoke(caller, cap)),
                Call::Exit => {
                    state.kill(caller.number);
                    Started::Nothing
                }
            });
        } else {
            pe.parked = true;
        }
    }

    /// Runs one item on `kernel` for `cost` plus what it did (capabilities
    /// removed, requests and messages sent, callers answered); its messages
    /// and answers leave when it ends.
    fn kernel_run(&mut self, kernel: usize, cost: u64, who: Pe, step: impl FnOnce(&mut Kernel) -> Started) {
        let costs = &self.costs;
        let pe = &mut self.kernels[kernel];
        let before = pe.state.capability_count();
        let started = step(&mut pe.state);
        let removed = before.saturating_sub(pe.state.capability_count()) as u64;
        let mut cost = cost + costs.revoke_per_local_cap * removed.saturating_sub(1);
        let mut answers = Vec::new();
        match started {
            Started::Op(op) => {
                pe.open.insert(op, who);
                pe.most_open = pe.most_open.max(pe.open.len());
            }
            Started::Answered(outcome) => answers.push((who, outcome)),
            Started::Nothing => {}
        }
        let outbox = pe.state.take_outbox();
        for envelope in &outbox {
            cost += costs.message_send;
            if matches!(envelope.message, Message::RevokeRequest { .. }) {
                cost += costs.revoke_per_remote_child;
            }
        }
        for completion in pe.state.take_completions() {
            if let Some(caller) = pe.open.remove(&completion.op) {
                answers.push((caller, completion.outcome));
            }
        }
        cost += costs.message_send * answers.len() as u64;
        pe.busy = true;
        pe.parked = false;
        pe.busy_time += cost;
        let end = self.now + cost;
        for envelope in outbox {
            let to = usize::from(envelope.to.0);
            if let Some(message) = self.fabric.send(kernel, to, envelope.message) {
                self.queue.schedule(end, Event::KernelMessage { kernel: to, from: kernel, message });
            }
        }
        for (caller, outcome) in answers {
            self.answer(caller, outcome, end);
        }
        self.queue.schedule(end, Event::KernelFree { kernel });
    }
}
