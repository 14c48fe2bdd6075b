//! One kernel's part of the distributed capability protocol: its
//! capabilities (with parent and children keys that may name other
//! kernels), its open revocations (mark, count outstanding replies, then
//! sweep), the exchanges it waits on, and what it has to send.
//!
//! Must never block, recurse over the tree, or answer a waiter before the
//! revocation it waits on has removed every capability it marked.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use super::{CapKey, Envelope, KernelId, Message, OpId, ProcessId};

/// Where a capability is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum CapState {
    /// Usable.
    Live,
    /// A delegated copy waiting for the delegator's acknowledgement: not
    /// usable, not revocable, entered under no parent yet.
    Granted,
    /// Being revoked by the revocation rooted at this kernel's `root`:
    /// refused to every exchange, removed when that revocation completes.
    Marked { root: u32 },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Cap {
    owner: ProcessId,
    parent: Option<CapKey>,
    children: Vec<CapKey>,
    state: CapState,
}

/// Who waits for a revocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Waiter {
    /// A `revoke` system call of this kernel.
    Call { op: OpId, caller: ProcessId },
    /// A revocation on another kernel (answered with `RevokeReply`).
    Remote { kernel: KernelId, root: CapKey },
    /// A revocation on this kernel that reached a capability this one had
    /// marked first, and counts it as outstanding.
    Local { root: u32 },
    /// Nobody (the clean-up of a process that died).
    Nobody,
}

/// An open revocation: replies it still needs, and who waits for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Revocation {
    outstanding: u32,
    /// Who waits: the one that started it (none once a flawed early
    /// acknowledgement answered it), then any that joined.
    first: Option<Waiter>,
    more: Vec<Waiter>,
    /// The capabilities it marked below its root, removed with the root
    /// when it finishes (so finishing costs what was marked, not every
    /// capability of the kernel; a revocation of one capability allocates
    /// neither list).
    below: Vec<u32>,
}

impl Revocation {
    fn waiters(&self) -> impl Iterator<Item = &Waiter> {
        self.first.iter().chain(&self.more)
    }
}

/// An exchange waiting for another kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Exchange {
    Obtain { caller: ProcessId },
    Delegate { caller: ProcessId },
}

/// How a system call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Done; for an exchange, the new capability.
    Done(Option<CapKey>),
    /// Refused: no such capability or process, not the caller's, or being
    /// revoked.
    Refused,
    /// The caller died before it ended.
    Aborted,
}

/// A system call that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Completion {
    /// Which call.
    pub op: OpId,
    /// Its caller.
    pub caller: ProcessId,
    /// How it ended.
    pub outcome: Outcome,
}

/// A capability as an audit sees it ([`Kernel::capabilities`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapView {
    /// Its key.
    pub key: CapKey,
    /// The process holding it.
    pub owner: ProcessId,
    /// What it was derived from.
    pub parent: Option<CapKey>,
    /// What was derived from it.
    pub children: Vec<CapKey>,
    /// Usable (neither being revoked nor a delegation not yet committed).
    pub live: bool,
}

/// Deliberate mistakes, off in the kernel: each one is a known way to get
/// the protocol wrong, kept so that the model checker shows it catches it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flaws {
    /// Acknowledge a revoke once the local part is marked, before the
    /// remote replies.
    pub early_ack: bool,
    /// Acknowledge a revoke that finds its capability already being
    /// revoked at once (SemperOS's "incomplete" anomaly).
    pub join_acks_at_once: bool,
    /// Commit a delegation without checking that its parent is still
    /// there and not being revoked.
    pub delegate_without_recheck: bool,
    /// Count each remote child twice when sending its revoke request (one
    /// reply comes back for it).
    pub count_twice: bool,
    /// Never tell a revoke that joined a revocation in progress.
    pub forget_joiners: bool,
}

/// One kernel's capabilities and protocol state (see the module comment).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    id: KernelId,
    caps: BTreeMap<u32, Cap>,
    next_index: u32,
    dead: BTreeSet<u32>,
    exchanges: BTreeMap<OpId, Exchange>,
    next_op: u32,
    revocations: BTreeMap<u32, Revocation>,
    outbox: Vec<Envelope>,
    completions: Vec<Completion>,
    flaws: Flaws,
}

impl Kernel {
    /// Kernel `id` with no capabilities.
    pub fn new(id: KernelId) -> Self {
        Self::with_flaws(id, Flaws::default())
    }

    /// As [`Kernel::new`], with deliberate mistakes (for the model checker).
    pub fn with_flaws(id: KernelId, flaws: Flaws) -> Self {
        Self {
            id,
            caps: BTreeMap::new(),
            next_index: 0,
            dead: BTreeSet::new(),
            exchanges: BTreeMap::new(),
            next_op: 0,
            revocations: BTreeMap::new(),
            outbox: Vec::new(),
            completions: Vec::new(),
            flaws,
        }
    }

    /// This kernel.
    pub fn id(&self) -> KernelId {
        self.id
    }

    fn key(&self, index: u32) -> CapKey {
        CapKey { kernel: self.id, index }
    }

    fn fresh_key(&mut self) -> CapKey {
        let key = self.key(self.next_index);
        self.next_index += 1;
        key
    }

    fn fresh_op(&mut self) -> OpId {
        let op = OpId(self.next_op);
        self.next_op += 1;
        op
    }

    fn alive(&self, process: ProcessId) -> bool {
        process.kernel == self.id && !self.dead.contains(&process.number)
    }

    fn send(&mut self, to: KernelId, message: Message) {
        self.outbox.push(Envelope { from: self.id, to, message });
    }

    fn complete(&mut self, op: OpId, caller: ProcessId, outcome: Outcome) {
        let outcome = if self.alive(caller) { outcome } else { Outcome::Aborted };
        self.completions.push(Completion { op, caller, outcome });
    }

    fn usable(&self, key: CapKey) -> Option<&Cap> {
        (key.kernel == self.id).then(|| self.caps.get(&key.index)).flatten().filter(|cap| cap.state == CapState::Live)
    }

    /// Makes a new capability for `owner` (a process of this kernel) with
    /// no parent: a resource it created.
    pub fn create(&mut self, owner: ProcessId) -> Option<CapKey> {
        if !self.alive(owner) {
            return None;
        }
        let key = self.fresh_key();
        self.caps.insert(key.index, Cap { owner, parent: None, children: Vec::new(), state: CapState::Live });
        Some(key)
    }

    /// `caller` obtains a copy of `parent` (anywhere). Local: done at once;
    /// else the parent's kernel enters the copy's key under the parent
    /// first and the copy is made when it says so.
    pub fn obtain(&mut self, caller: ProcessId, parent: CapKey) -> OpId {
        let op = self.fresh_op();
        if !self.alive(caller) {
            self.complete(op, caller, Outcome::Refused);
        } else if parent.kernel == self.id {
            let outcome = match self.usable(parent) {
                Some(_) => Outcome::Done(Some(self.make_child(parent, caller))),
                None => Outcome::Refused,
            };
            self.complete(op, caller, outcome);
        } else {
            let child = self.fresh_key();
            self.exchanges.insert(op, Exchange::Obtain { caller });
            self.send(parent.kernel, Message::ObtainRequest { op, parent, child });
        }
        op
    }

    /// `caller` delegates its capability `parent` to process `to`
    /// (anywhere). Remote: the receiver's kernel makes the copy (not
    /// usable yet), this kernel enters it under the parent if the parent
    /// is still live, and tells the receiver's kernel to make it usable.
    pub fn delegate(&mut self, caller: ProcessId, parent: CapKey, to: ProcessId) -> OpId {
        let op = self.fresh_op();
        let owned = self.usable(parent).is_some_and(|cap| cap.owner == caller);
        if !self.alive(caller) || !owned {
            self.complete(op, caller, Outcome::Refused);
        } else if to.kernel == self.id {
            let outcome = if self.alive(to) { Outcome::Done(Some(self.make_child(parent, to))) } else { Outcome::Refused };
            self.complete(op, caller, outcome);
        } else {
            self.exchanges.insert(op, Exchange::Delegate { caller });
            self.send(to.kernel, Message::DelegateRequest { op, parent, to });
        }
        op
    }

    /// `caller` revokes its capability `cap`: it and everything derived
    /// from it, on every kernel, are gone when the call completes.
    pub fn revoke(&mut self, caller: ProcessId, cap: CapKey) -> OpId {
        let op = self.fresh_op();
        let mine = cap.kernel == self.id && self.caps.get(&cap.index).is_some_and(|found| found.owner == caller && found.state != CapState::Granted);
        if !self.alive(caller) || !mine {
            self.complete(op, caller, Outcome::Refused);
        } else {
            self.start_revocation(cap.index, Waiter::Call { op, caller });
        }
        op
    }

    /// Process `number` of this kernel died: its capabilities are revoked
    /// (what it delegated elsewhere goes with them), its open exchanges end
    /// as aborted when their replies come.
    pub fn kill(&mut self, number: u32) {
        self.dead.insert(number);
        let process = ProcessId { kernel: self.id, number };
        let owned: Vec<u32> = self.caps.iter().filter(|(_, cap)| cap.owner == process).map(|(index, _)| *index).collect();
        for index in owned {
            if self.caps.get(&index).is_some_and(|cap| cap.state == CapState::Live) {
                self.start_revocation(index, Waiter::Nobody);
            }
        }
    }

    /// Handles `message` from kernel `from`.
    pub fn receive(&mut self, from: KernelId, message: Message) {
        match message {
            Message::ObtainRequest { op, parent, child } => {
                let granted = self.usable(parent).is_some();
                if granted {
                    self.link(parent, child);
                }
                self.send(from, Message::ObtainReply { op, parent, child, granted });
            }
            Message::ObtainReply { op, parent, child, granted } => {
                let Some(Exchange::Obtain { caller }) = self.exchanges.remove(&op) else { return };
                if !granted {
                    self.complete(op, caller, Outcome::Refused);
                } else if self.alive(caller) {
                    self.caps.insert(child.index, Cap { owner: caller, parent: Some(parent), children: Vec::new(), state: CapState::Live });
                    self.complete(op, caller, Outcome::Done(Some(child)));
                } else {
                    self.send(parent.kernel, Message::ObtainAbandoned { parent, child });
                    self.complete(op, caller, Outcome::Aborted);
                }
            }
            Message::ObtainAbandoned { parent, child } | Message::DelegateAbandoned { parent, child } | Message::Unlink { parent, child } => {
                self.unlink(parent, child);
            }
            Message::DelegateRequest { op, parent, to } => {
                let child = self.alive(to).then(|| {
                    let child = self.fresh_key();
                    self.caps.insert(child.index, Cap { owner: to, parent: Some(parent), children: Vec::new(), state: CapState::Granted });
                    child
                });
                self.send(from, Message::DelegateReply { op, parent, child });
            }
            Message::DelegateReply { op, parent, child } => {
                let Some(Exchange::Delegate { caller }) = self.exchanges.remove(&op) else { return };
                let Some(child) = child else {
                    self.complete(op, caller, Outcome::Refused);
                    return;
                };
                // The handshake's point: the parent may have been marked
                // or revoked since the request went out.
                let commit = self.flaws.delegate_without_recheck || self.usable(parent).is_some();
                if commit {
                    self.link(parent, child);
                }
                self.send(child.kernel, Message::DelegateAck { parent, child, commit });
                self.complete(op, caller, if commit { Outcome::Done(Some(child)) } else { Outcome::Refused });
            }
            Message::DelegateAck { parent, child, commit } => {
                let Some(cap) = self.caps.get(&child.index).filter(|cap| cap.state == CapState::Granted) else { return };
                let owner = cap.owner;
                if commit && self.alive(owner) {
                    if let Some(cap) = self.caps.get_mut(&child.index) {
                        cap.state = CapState::Live;
                    }
                } else {
                    self.caps.remove(&child.index);
                    if commit {
                        self.send(parent.kernel, Message::DelegateAbandoned { parent, child });
                    }
                }
            }
            Message::RevokeRequest { cap, reply_to } => self.start_revocation(cap.index, Waiter::Remote { kernel: from, root: reply_to }),
            Message::RevokeReply { root } => self.reply_arrived(root.index),
        }
    }

    /// Every capability this kernel holds, as an audit sees it.
    pub fn capabilities(&self) -> Vec<CapView> {
        self.caps
            .iter()
            .map(|(index, cap)| CapView {
                key: self.key(*index),
                owner: cap.owner,
                parent: cap.parent,
                children: cap.children.clone(),
                live: cap.state == CapState::Live,
            })
            .collect()
    }

    /// How many capabilities this kernel holds, in any state (cheap: for
    /// a simulator's cost accounting).
    pub fn capability_count(&self) -> usize {
        self.caps.len()
    }

    /// How many of them were derived from another (copies), without
    /// building their views (a running kernel's report).
    pub fn derived_count(&self) -> usize {
        self.caps.values().filter(|cap| cap.parent.is_some()).count()
    }

    /// Revocations and exchanges still open here.
    pub fn open_operations(&self) -> usize {
        self.revocations.len() + self.exchanges.len()
    }

    /// Messages for other kernels since the last call.
    pub fn take_outbox(&mut self) -> Vec<Envelope> {
        core::mem::take(&mut self.outbox)
    }

    /// Messages for other kernels since the last call, keeping the
    /// outbox's room for the next ones (no allocation per step).
    pub fn drain_outbox(&mut self) -> alloc::vec::Drain<'_, Envelope> {
        self.outbox.drain(..)
    }

    /// System calls that ended since the last call.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        core::mem::take(&mut self.completions)
    }

    fn make_child(&mut self, parent: CapKey, owner: ProcessId) -> CapKey {
        let child = self.fresh_key();
        self.caps.insert(child.index, Cap { owner, parent: Some(parent), children: Vec::new(), state: CapState::Live });
        self.link(parent, child);
        child
    }

    fn link(&mut self, parent: CapKey, child: CapKey) {
        if let Some(cap) = self.caps.get_mut(&parent.index).filter(|_| parent.kernel == self.id) {
            cap.children.push(child);
        }
    }

    fn unlink(&mut self, parent: CapKey, child: CapKey) {
        if let Some(cap) = self.caps.get_mut(&parent.index).filter(|_| parent.kernel == self.id) {
            cap.children.retain(|key| *key != child);
        }
    }

    /// Revokes the capability at `index` for `waiter`: joins the
    /// revocation that already marked it, or marks it and everything local
    /// below it (iteratively), asks the kernels of remote children to
    /// revoke theirs, and completes when no reply is outstanding.
    fn start_revocation(&mut self, index: u32, waiter: Waiter) {
        let state = match self.caps.get(&index) {
            Some(cap) => cap.state,
            // Gone already (revoked, or an exchange that never finished).
            None => return self.answer(waiter),
        };
        match state {
            CapState::Marked { root } => {
                if self.flaws.join_acks_at_once {
                    return self.answer(waiter);
                }
                if !self.flaws.forget_joiners {
                    if let Some(revocation) = self.revocations.get_mut(&root) {
                        revocation.more.push(waiter);
                    }
                }
                return;
            }
            // Not entered under its parent yet: nothing can be below it.
            CapState::Granted => return self.answer(waiter),
            CapState::Live => {}
        }
        if let Some(leaf) = self.caps.get(&index).filter(|cap| cap.children.is_empty()) {
            // Nothing below it: gone at once, with no revocation to record.
            let parent = leaf.parent;
            self.caps.remove(&index);
            self.leave_parent(index, parent, core::iter::once(&waiter));
            return self.answer(waiter);
        }
        let mut outstanding = 0;
        // `below` is also the work list after the root: a capability is
        // marked when it is found, its children looked at in its turn.
        let mut below = Vec::new();
        self.mark(index, index);
        let mut at = index;
        let mut next = 0;
        loop {
            // A marked capability's children are never looked at again.
            let children = self.caps.get_mut(&at).map(|cap| core::mem::take(&mut cap.children)).unwrap_or_default();
            for child in children {
                if child.kernel != self.id {
                    outstanding += if self.flaws.count_twice { 2 } else { 1 };
                    let reply_to = self.key(index);
                    self.send(child.kernel, Message::RevokeRequest { cap: child, reply_to });
                    continue;
                }
                // One look-up marks a live child or finds who has it.
                let state = match self.caps.get_mut(&child.index) {
                    Some(found) if found.state == CapState::Live => {
                        found.state = CapState::Marked { root: index };
                        below.push(child.index);
                        continue;
                    }
                    Some(found) => found.state,
                    None => continue,
                };
                if let CapState::Marked { root: other } = state {
                    if other != index {
                        // Another revocation has it: this one waits for it.
                        outstanding += 1;
                        if let Some(revocation) = self.revocations.get_mut(&other) {
                            revocation.more.push(Waiter::Local { root: index });
                        }
                    }
                }
            }
            let Some(&following) = below.get(next) else { break };
            next += 1;
            at = following;
        }
        let first = if self.flaws.early_ack {
            self.answer(waiter);
            None
        } else {
            Some(waiter)
        };
        self.revocations.insert(index, Revocation { outstanding, first, more: Vec::new(), below });
        if outstanding == 0 {
            self.finish(index);
        }
    }

    /// Capability `index` belongs to revocation `root` from now on.
    fn mark(&mut self, index: u32, root: u32) {
        if let Some(cap) = self.caps.get_mut(&index) {
            cap.state = CapState::Marked { root };
        }
    }

    /// One outstanding reply of revocation `root` arrived.
    fn reply_arrived(&mut self, root: u32) {
        let Some(revocation) = self.revocations.get_mut(&root) else { return };
        revocation.outstanding = revocation.outstanding.saturating_sub(1);
        if revocation.outstanding == 0 {
            self.finish(root);
        }
    }

    /// Revocation `root` has every reply: its marked capabilities go, its
    /// root leaves its parent's children, and its waiters are answered.
    fn finish(&mut self, root: u32) {
        let Some(revocation) = self.revocations.remove(&root) else { return };
        let parent = self.caps.remove(&root).and_then(|cap| cap.parent);
        for index in &revocation.below {
            self.caps.remove(index);
        }
        self.leave_parent(root, parent, revocation.waiters());
        for waiter in revocation.first.into_iter().chain(revocation.more) {
            self.answer(waiter);
        }
    }

    /// Revoked capability `index` leaves its parent's children. A revoke
    /// request from the parent's kernel among `waiters` means the parent is
    /// marked there and goes when that revocation ends: no `Unlink` (it
    /// would double the messages a tree's root must take).
    fn leave_parent<'a>(&mut self, index: u32, parent: Option<CapKey>, mut waiters: impl Iterator<Item = &'a Waiter>) {
        let key = self.key(index);
        match parent {
            Some(parent) if parent.kernel == self.id => self.unlink(parent, key),
            Some(parent) if waiters.any(|waiter| matches!(waiter, Waiter::Remote { kernel, .. } if *kernel == parent.kernel)) => {}
            Some(parent) => self.send(parent.kernel, Message::Unlink { parent, child: key }),
            None => {}
        }
    }

    fn answer(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::Call { op, caller } => self.complete(op, caller, Outcome::Done(None)),
            Waiter::Remote { kernel, root } => self.send(kernel, Message::RevokeReply { root }),
            Waiter::Local { root } => self.reply_arrived(root),
            Waiter::Nobody => {}
        }
    }
}
