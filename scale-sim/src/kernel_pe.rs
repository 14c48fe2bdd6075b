//! A kernel PE: the protocol's `Kernel` state machine behind a queue of
//! messages from other kernels and system calls from its group's PEs, one
//! item at a time, each charged from the cost model.
//!
//! Must never hold back a message from another kernel (that is what keeps
//! cycles of kernels from deadlocking); only system calls wait for a free
//! kernel thread.

use std::collections::{BTreeMap, VecDeque};

use caps::distributed::{Envelope, Kernel, KernelId, Message, OpId, Outcome, ProcessId};

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

/// What handling `message` cost, given what it left: the messages it
/// queued and how many capabilities it removed (a revoke request for a
/// capability with children on other kernels only marks and asks on; a
/// revoke reply that is not the last only counts down).
fn message_cost(costs: &CostModel, message: &Message, outbox: &[Envelope], removed: u64) -> u64 {
    let replies = outbox.iter().any(|envelope| matches!(envelope.message, Message::RevokeReply { .. }));
    match message {
        Message::ObtainRequest { .. } => costs.handle_obtain_request,
        Message::ObtainReply { .. } => costs.handle_obtain_reply,
        Message::DelegateRequest { .. } => costs.handle_delegate_request,
        Message::DelegateReply { .. } => costs.handle_delegate_reply,
        Message::DelegateAck { .. } => costs.handle_delegate_ack,
        Message::RevokeRequest { .. } if replies => costs.handle_revoke_request,
        Message::RevokeRequest { .. } => costs.handle_revoke_request_inner,
        Message::RevokeReply { .. } if removed == 0 => costs.handle_unlink,
        Message::RevokeReply { .. } if replies => costs.handle_revoke_reply_inner,
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
        let parked = pe.parked && self.wait == KernelWait::Park;
        let costs = &self.costs;
        if let Some((from, message)) = pe.messages.pop_front() {
            if let Some(next) = self.fabric.take(from, kernel) {
                self.queue.schedule(self.now, Event::KernelMessage { kernel, from, message: next });
            }
            // A message to a parked kernel costs what Lamina's kernels pay
            // per message between them (kernel_hop, the handler apart: the
            // wake-up, the turns, the channel; the sender's send is charged
            // to the sender); to a running one, a turn and the receipt.
            let delivery = match parked {
                true => costs.kernel_hop.saturating_sub(costs.kernel_hop_handlers + costs.message_send),
                false => costs.kernel_turn + costs.message_receive,
            };
            self.kernel_run(kernel, delivery, Pe::Driver, |state| {
                state.receive(KernelId(from as u8), message.clone());
                Started::Nothing
            }, |costs, outbox, removed| message_cost(costs, &message, outbox, removed));
        } else if pe.open.len() < self.layout.threads && !pe.calls.is_empty() {
            let Some(WaitingCall { caller, pe: who, call }) = pe.calls.pop_front() else { return };
            // Every call costs a turn of the loop; waking from a park, the
            // wake-up and the empty turn that decided to park.
            let wake = costs.kernel_turn + if parked { costs.notify + costs.kernel_turn } else { 0 };
            let cost = wake + call_cost(costs, pe.state.id(), &call);
            let run = |state: &mut Kernel| match call {
                Call::Create => Started::Answered(state.create(caller).map_or(Outcome::Refused, |key| Outcome::Done(Some(key)))),
                Call::Obtain { parent } => Started::Op(state.obtain(caller, parent)),
                Call::Delegate { cap, to } => Started::Op(state.delegate(caller, cap, to)),
                Call::Revoke { cap } => Started::Op(state.revoke(caller, cap)),
                Call::Exit => {
                    state.kill(caller.number);
                    Started::Nothing
                }
            };
            self.kernel_run(kernel, cost, who, run, |_, _, _| 0);
        } else {
            pe.parked = true;
        }
    }

    /// Runs one item on `kernel` for `cost` plus what it did (capabilities
    /// removed, requests and messages sent, callers answered); its messages
    /// and answers leave when it ends.
    fn kernel_run(&mut self, kernel: usize, cost: u64, who: Pe, step: impl FnOnce(&mut Kernel) -> Started, price: impl FnOnce(&CostModel, &[Envelope], u64) -> u64) {
        let costs = &self.costs;
        let pe = &mut self.kernels[kernel];
        let before = pe.state.capability_count();
        let started = step(&mut pe.state);
        let removed = before.saturating_sub(pe.state.capability_count()) as u64;
        let outbox = pe.state.take_outbox();
        let mut cost = cost + price(costs, &outbox, removed) + costs.per_local_cap(removed) * removed.saturating_sub(1);
        let mut answers = Vec::new();
        match started {
            Started::Op(op) => {
                pe.open.insert(op, who);
                pe.most_open = pe.most_open.max(pe.open.len());
            }
            Started::Answered(outcome) => answers.push((who, outcome)),
            Started::Nothing => {}
        }
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
