//! The group kernels (issue 20): with CPU groups, each group's part of the
//! distributed capability system runs as one kernel thread pinned to the
//! group's first CPU, holding a `caps::distributed::Node` (its `Kernel`,
//! its waiting messages) that no other thread touches. The kernels talk
//! only through `caps::distributed::Channels` — a `sync::WordRing` per
//! ordered pair, 4 slots, FIFO — and wake each other with `sched::unpark`
//! (the wake IPI when the peer's CPU is idle: SemperOS's notification).
//!
//! Code running in a group asks its own group's kernel: [`call`] takes one
//! of the kernel's [`CALLERS`] completion slots (`sync::Completions`, the
//! loom-checked one-shot hand-over: no answer or wake-up lost), posts the
//! request on that kernel's queue and parks until the answer comes (None
//! at once when every slot is taken: the caller fails cleanly);
//! [`post`] posts without waiting (a process's death, a released object's
//! revoke). The kernel thread never blocks on another kernel: a call that
//! needs one is recorded in its `Kernel` and goes on when the reply is
//! delivered. Counters per group feed `/proc/lamina/groups`.
//!
//! Must never hold the queue lock while waking or switching, and never
//! call into the Linux layer (it is below it).

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use caps::distributed::{CapKey, Channels, Kernel, KernelId, KernelView, Node, OpId, Outcome, ProcessId};
use machine::set_once::SetOnce;
use sched::Pinning;
use spinlock::kernel::KernelTicketLock;
use sync::{Completions, KernelBlocking};
use spinlock::Level;

/// Level of a group kernel's request queue and of a call's answer (leaf
/// locks: nothing is taken under them).
const QUEUE_LEVEL: Level = Level::new(8);

/// The process number a group kernel's own capabilities belong to (Linux
/// process ids start at 1): it never dies.
pub const KERNEL_PROCESS: u32 = 0;

/// What code in a group asks its group's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// A new capability with no parent, held by `owner`.
    Create { owner: ProcessId },
    /// `caller` obtains a copy of `parent` (on any group).
    Obtain { caller: ProcessId, parent: CapKey },
    /// `caller` delegates its `parent` to process `to` (on any group): the
    /// two-way handshake, committed only if `parent` is still live.
    Delegate { caller: ProcessId, parent: CapKey, to: ProcessId },
    /// `caller` revokes its `cap` and everything derived from it, everywhere.
    Revoke { caller: ProcessId, cap: CapKey },
    /// Process `number` of this group died: its capabilities are revoked.
    Kill { number: u32 },
    /// What the consistency audit needs of this kernel (answered with
    /// [`Answer::View`]).
    Snapshot,
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Done; the capability made, if the request makes one.
    Done(Option<CapKey>),
    /// Refused (no such capability, not the caller's, being revoked), or
    /// the caller died meanwhile.
    Refused,
    /// The kernel's state for the audit, and whether it had nothing left
    /// to send when it answered.
    View(KernelView, bool),
}

/// Calls one group kernel answers at once at most: more callers get None.
pub const CALLERS: usize = 64;

/// A posted request and, for [`call`], the completion slot of its answer.
struct Posted {
    request: Request,
    reply: Option<usize>,
}

/// What one group kernel has done, for `/proc/lamina/groups`.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    obtained: AtomicU64,
    revoked: AtomicU64,
    refused: AtomicU64,
    deaths: AtomicU64,
    handled: AtomicU64,
    sent: AtomicU64,
    malformed: AtomicU64,
    capabilities: AtomicU64,
    copies: AtomicU64,
}

/// One group's kernel as others see it: its queue, its thread, its counters.
struct GroupKernel {
    queue: KernelTicketLock<VecDeque<Posted>>,
    answers: Completions<Answer, KernelBlocking>,
    thread: SetOnce<Arc<sched::Thread>>,
    counters: Counters,
}

struct GroupKernels {
    kernels: Vec<GroupKernel>,
    channels: Channels,
}

static KERNELS: SetOnce<GroupKernels> = SetOnce::new();

/// Starts one kernel thread per group (nothing with one group). Called
/// once, from a thread that may spawn, after the groups were chosen.
pub fn start() -> Result<(), String> {
    let layout = crate::groups::layout();
    let count = layout.groups();
    if count < 2 || KERNELS.get().is_some() {
        return Ok(());
    }
    let kernels = GroupKernels {
        kernels: (0..count)
            .map(|_| GroupKernel { queue: KernelTicketLock::new(QUEUE_LEVEL, VecDeque::new()), answers: Completions::new(CALLERS), thread: SetOnce::new(), counters: Counters::default() })
            .collect(),
        channels: Channels::new(count),
    };
    let all: &'static GroupKernels = alloc::boxed::Box::leak(alloc::boxed::Box::new(kernels));
    for group in 0..count {
        let cpu = layout.cpus_of(group).start;
        let thread = sched::spawn_on(cpu, Pinning::Pinned, "group-kernel", move || serve(all, group)).map_err(|error| format!("group {group}'s kernel: {error:?}"))?;
        let _ = all.kernels[group].thread.set(alloc::boxed::Box::leak(alloc::boxed::Box::new(thread)));
    }
    // Published only once every kernel runs: until then nobody asks one.
    KERNELS.set(all).map_err(|_| String::from("group kernels started twice"))
}

/// Whether group kernels run (more than one group, started).
pub fn running() -> bool {
    KERNELS.get().is_some()
}

/// Asks group `group`'s kernel `request` and waits for the answer (None
/// when there are no group kernels or no such group). The caller parks:
/// call it from a thread that may block, holding no spinlock.
pub fn call(group: usize, request: Request) -> Option<Answer> {
    let kernel = KERNELS.get()?.kernels.get(group)?;
    let ticket = kernel.answers.begin().ok()?;
    if enqueue(group, Posted { request, reply: Some(ticket.number()) }).is_none() {
        kernel.answers.cancel(ticket);
        return None;
    }
    Some(kernel.answers.wait(ticket))
}

/// Posts `request` to group `group`'s kernel without waiting; false when
/// there are no group kernels, no such group or no memory for the queue.
pub fn post(group: usize, request: Request) -> bool {
    enqueue(group, Posted { request, reply: None }).is_some()
}

fn enqueue(group: usize, posted: Posted) -> Option<()> {
    let kernel = KERNELS.get()?.kernels.get(group)?;
    let request_kind = posted.request;
    {
        let mut queue = kernel.queue.lock();
        queue.try_reserve(1).ok()?;
        queue.push_back(posted);
    }
    let counters = &kernel.counters;
    counters.requests.fetch_add(1, Ordering::Relaxed);
    match request_kind {
        Request::Obtain { .. } | Request::Delegate { .. } => counters.obtained.fetch_add(1, Ordering::Relaxed),
        Request::Revoke { .. } => counters.revoked.fetch_add(1, Ordering::Relaxed),
        Request::Kill { .. } => counters.deaths.fetch_add(1, Ordering::Relaxed),
        Request::Create { .. } | Request::Snapshot => 0,
    };
    if let Some(thread) = kernel.thread.get() {
        sched::unpark(thread);
    }
    Some(())
}

/// Group `me`'s kernel thread: forever take requests, exchange messages,
/// answer, and park when there is nothing to do.
fn serve(all: &'static GroupKernels, me: usize) {
    let mine = &all.kernels[me];
    let mut node = Node::new(Kernel::new(KernelId(me as u8)), all.kernels.len());
    let links = all.channels.links(me);
    // At most one entry per completion slot in each: never reallocated.
    let mut open: Vec<(OpId, usize)> = Vec::with_capacity(CALLERS);
    let mut answered: Vec<(usize, Answer)> = Vec::with_capacity(CALLERS);
    loop {
        let posted: VecDeque<Posted> = core::mem::take(&mut *mine.queue.lock());
        let started = posted.len();
        for Posted { request, reply } in posted {
            start_request(&mut node, request, reply, &mut open, &mut answered);
        }
        node.collect();
        let round = node.poll(&links);
        let completions = node.kernel_mut().take_completions();
        for completion in &completions {
            let Some(index) = open.iter().position(|(op, _)| *op == completion.op) else { continue };
            let (_, reply) = open.swap_remove(index);
            let answer = match completion.outcome {
                Outcome::Done(made) => Answer::Done(made),
                Outcome::Refused | Outcome::Aborted => Answer::Refused,
            };
            answered.push((reply, answer));
        }
        // Relaxed: statistics.
        mine.counters.handled.fetch_add(round.handled as u64, Ordering::Relaxed);
        mine.counters.sent.fetch_add(round.sent as u64, Ordering::Relaxed);
        mine.counters.malformed.fetch_add(round.malformed as u64, Ordering::Relaxed);
        if started > 0 || round.handled > 0 || !completions.is_empty() {
            mine.counters.capabilities.store(node.kernel().capability_count() as u64, Ordering::Relaxed);
            mine.counters.copies.store(node.kernel().derived_count() as u64, Ordering::Relaxed);
        }
        // Answers last: a caller that reads the counters after its answer
        // sees what its request did.
        for (reply, answer) in answered.drain(..) {
            answer_to(mine, reply, answer);
        }
        // The kernels sent something, and those whose full channel to this
        // one a receive freed (they may wait for room).
        let wake = node.sent_to() | node.freed_for();
        for (peer, kernel) in all.kernels.iter().enumerate() {
            if peer != me && wake & caps::distributed::peer_bit(peer) != 0 {
                if let Some(thread) = kernel.thread.get() {
                    sched::unpark(thread);
                }
            }
        }
        // Messages waiting for room in a full channel do not keep it
        // spinning: the peer that frees a slot wakes it (`freed_for`).
        if started == 0 && round.handled == 0 && round.malformed == 0 && round.sent == 0 && completions.is_empty() {
            sched::park();
        }
    }
}

/// Starts `request` on the kernel; the answer of one that ends at once
/// goes to `answered`, a call that waits for other kernels to `open`.
fn start_request(node: &mut Node, request: Request, reply: Option<usize>, open: &mut Vec<(OpId, usize)>, answered: &mut Vec<(usize, Answer)>) {
    let kernel = node.kernel_mut();
    let op = match request {
        Request::Create { owner } => {
            let answer = kernel.create(owner).map_or(Answer::Refused, |key| Answer::Done(Some(key)));
            answer_later(reply, answer, answered);
            return;
        }
        Request::Kill { number } => {
            kernel.kill(number);
            answer_later(reply, Answer::Done(None), answered);
            return;
        }
        Request::Snapshot => {
            let view = KernelView::of(node.kernel());
            answer_later(reply, Answer::View(view, node.idle()), answered);
            return;
        }
        Request::Obtain { caller, parent } => kernel.obtain(caller, parent),
        Request::Delegate { caller, parent, to } => kernel.delegate(caller, parent, to),
        Request::Revoke { caller, cap } => kernel.revoke(caller, cap),
    };
    if let Some(reply) = reply {
        if open.try_reserve(1).is_ok() {
            open.push((op, reply));
        } else {
            // No room to remember the caller: it gets a refusal now (the
            // operation still runs to its end in the protocol).
            answer_later(Some(reply), Answer::Refused, answered);
        }
    }
}

/// Queues `answer` for `reply`'s caller (if any): it goes out at the end
/// of the kernel's turn (room for every slot was reserved).
fn answer_later(reply: Option<usize>, answer: Answer, answered: &mut Vec<(usize, Answer)>) {
    let Some(reply) = reply else { return };
    answered.push((reply, answer));
}

fn answer_to(kernel: &GroupKernel, reply: usize, answer: Answer) {
    if answer == Answer::Refused {
        kernel.counters.refused.fetch_add(1, Ordering::Relaxed);
    }
    kernel.answers.complete(reply, answer);
}

/// `/proc/lamina/groups`: per group, its CPUs, free memory, processes and
/// what its capability kernel holds and has done.
pub fn report() -> String {
    let layout = crate::groups::layout();
    let mut text = format!("groups {} placement {}\n", layout.groups(), crate::groups::policy_name());
    for group in 0..layout.groups() {
        let cpus = layout.cpus_of(group);
        text.push_str(&format!(
            "group {group} cpus {}-{} free_kib {} processes {}",
            cpus.start,
            cpus.end.saturating_sub(1),
            crate::physical_memory::free_frames_of(group) * 4,
            crate::groups::processes_in(group)
        ));
        if let Some(kernel) = KERNELS.get().and_then(|all| all.kernels.get(group)) {
            let c = &kernel.counters;
            let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
            text.push_str(&format!(
                " capabilities {} copies {} requests {} obtains {} revokes {} refused {} deaths {} messages_in {} messages_out {} malformed {}",
                read(&c.capabilities),
                read(&c.copies),
                read(&c.requests),
                read(&c.obtained),
                read(&c.revoked),
                read(&c.refused),
                read(&c.deaths),
                read(&c.handled),
                read(&c.sent),
                read(&c.malformed)
            ));
        }
        text.push('\n');
    }
    text
}
