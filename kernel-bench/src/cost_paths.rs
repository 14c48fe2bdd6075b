//! `costs/*`: the in-kernel part of the scale simulator's cost model
//! (`scale-sim`, issue 21), in guest instructions under `-icount shift=0`,
//! in a boot of its own (`kbench=costs`, 2 vCPUs). xtask writes these
//! records, with the Linux-personality ones of `user/bench/syscalls.c`,
//! to `scale-sim/costs.txt`.
//!
//! - `call_*` / `handle_*`: one step of one `caps::distributed::Kernel`
//!   built by hand on this CPU, with no channels: a system call
//!   (`obtain`, `delegate`, `revoke`) or the handler of one message
//!   (`receive`), with taking (and dropping) the outbox and completions it
//!   leaves. Each kernel also holds [`BACKGROUND`] capabilities of a
//!   bystander, so that its maps are not empty. Setting a step up is not
//!   measured; a step that does not leave what it should fails the record.
//! - `revoke_per_local_cap_short`: the slope between revokes of a chain of
//!   10 and one of 100 (smaller maps, no leaf path in it).
//! - `revoke_per_local_cap` / `revoke_per_remote_child`: slopes, per
//!   sample: (a revoke of a chain of [`CHAIN`] local copies / of a
//!   capability with [`REMOTE_CHILDREN`] children on other kernels, less
//!   the median leaf revoke) over the capabilities added.
//! - `message_send` / `message_receive`: `wire::encode` and a push into a
//!   channel's `WordRing`; a pop and `wire::decode`.
//! - `notify`: from `sched::unpark` of a kernel thread parked on the
//!   other, idle CPU until it runs, every CPU's instructions. The waker
//!   parks right after the unpark (QEMU runs the vCPUs in turn, so a
//!   spinning waker would hold up the other one): its going idle counts.
//! - `kernel_turn`: one turn of a multikernel kernel thread's loop that
//!   finds nothing to do (`multikernel_paths::turn`, the code `kernel_loop`
//!   runs), for a kernel with one peer: its requests lock taken and the
//!   queue empty, `Node::collect`, `receive` from the peer's empty ring,
//!   `send` of nothing, no completions, and the check that sends it to
//!   park (not the park), on this CPU with no other thread.
//! - `handle_revoke_request_inner` / `handle_revoke_reply_inner`: the
//!   middle of a chain across kernels, a copy delegated from another
//!   kernel with one child back there: its `RevokeRequest` (marked, the
//!   revocation recorded, one request queued onward, no reply yet), and
//!   the one `RevokeReply` that finishes that revocation (removed, no
//!   `Unlink`, the reply queued back).
//! - `kernel_hop`: one inter-kernel message with everything around it,
//!   every CPU's instructions: two kernel threads running the
//!   `multikernel` benchmark's real loop (`multikernel_paths::Cluster`:
//!   `turn`, and the park when a turn finds nothing) on CPUs 0 and 1. Per
//!   sample: [`ROUND_TRIPS`] obtains, one after another through
//!   `Cluster::call` (handed to kernel 0 by the benchmark thread and
//!   waited for), of a parent on kernel 1 (ObtainRequest, ObtainReply:
//!   kernel 1 answers, kernel 0 completes), less as many obtains of a
//!   parent on kernel 0 (the benchmark thread's hand-over, the call and
//!   its completion, with no message), less `ROUND_TRIPS` times
//!   (`call_obtain_remote` - `call_obtain_local`), over 2 x `ROUND_TRIPS`
//!   messages. It includes the handlers: `kernel_hop_handlers` is
//!   (`handle_obtain_request` + `handle_obtain_reply`) / 2 (the medians;
//!   one value, not sampled), what a simulator subtracts to charge a
//!   message besides its own handler.
//!
//! Every figure is less the clock's own cost (two reads back to back).
//! Must never share a `Kernel` between CPUs or time a step's set-up.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::hint::black_box;
use core::sync::atomic::{AtomicU64, Ordering};

use caps::distributed::wire::{decode, encode, WORDS};
use caps::distributed::{CapKey, Kernel, KernelId, Message, Node, OpId, Outcome, ProcessId, SLOTS};
use sched::{ParkState, Pinning};
use sync::WordRing;

use super::multikernel_paths::{process, turn, Cluster, Request, Shared};
use super::records::{now, report, ClockMode};

const GROUP: &str = "costs";
const SAMPLES: usize = 21;
/// Capabilities of a bystander in every kernel built here.
const BACKGROUND: u32 = 100;
/// Capabilities in the chain of `revoke_per_local_cap`.
const CHAIN: u32 = 1000;
/// The two chains whose difference is `revoke_per_local_cap_short`.
const SHORT_CHAINS: (u32, u32) = (10, 100);
/// Children of the capability of `revoke_per_remote_child`, spread over
/// [`REMOTE_KERNELS`] other kernels.
const REMOTE_CHILDREN: u32 = 96;
const REMOTE_KERNELS: u32 = 3;
/// How long `notify` lets both CPUs go idle before a round (ns of uptime).
const SETTLE: u64 = 200_000;
/// Obtains one after another in each of `kernel_hop`'s timings.
const ROUND_TRIPS: u32 = 100;

const HERE: KernelId = KernelId(0);
const THERE: KernelId = KernelId(1);
/// The caller of the system calls on `HERE`.
const OWNER: ProcessId = ProcessId { kernel: HERE, number: 0 };
/// Another process on `HERE`.
const NEIGHBOUR: ProcessId = ProcessId { kernel: HERE, number: 1 };
/// A process on `THERE`.
const RECEIVER: ProcessId = ProcessId { kernel: THERE, number: 0 };
/// A capability on `HERE` that `THERE`'s copies name as their parent.
const HOME_PARENT: CapKey = CapKey { kernel: HERE, index: 0 };
/// The message `message_send` and `message_receive` carry.
const SAMPLE_MESSAGE: Message = Message::ObtainRequest { op: OpId(7), parent: HOME_PARENT, child: CapKey { kernel: THERE, index: 42 } };

type Ring = WordRing<WORDS, SLOTS>;

/// Every `costs/*` record (see the module comment).
pub fn cost_model(mode: ClockMode) {
    let clock = Clock::calibrate(mode);
    let obtain_local = call_obtain_local(&clock);
    let obtain_remote = call_obtain_remote(&clock);
    call_delegate_local(&clock);
    call_delegate_remote(&clock);
    if let Some(leaf) = call_revoke_leaf(&clock) {
        revoke_per_local_cap(&clock, leaf);
        revoke_per_local_cap_short(&clock);
        revoke_per_remote_child(&clock, leaf);
    }
    let obtain_request = handle_obtain_request(&clock);
    let obtain_reply = handle_obtain_reply(&clock);
    handle_delegate_request(&clock);
    handle_delegate_reply(&clock);
    handle_delegate_ack(&clock);
    handle_revoke_request(&clock);
    handle_revoke_reply(&clock);
    handle_revoke_request_inner(&clock);
    handle_revoke_reply_inner(&clock);
    handle_unlink(&clock);
    message_send(&clock);
    message_receive(&clock);
    kernel_turn(&clock);
    notify(&clock);
    kernel_hop(&clock, obtain_local.zip(obtain_remote));
    if let Some((request, reply)) = obtain_request.zip(obtain_reply) {
        report(GROUP, "kernel_hop_handlers", clock.unit, &mut [(request + reply) / 2.0]);
    }
}

/// The benchmark clock, less its own cost.
struct Clock {
    unit: &'static str,
    overhead: u64,
}

impl Clock {
    fn calibrate(mode: ClockMode) -> Self {
        let mut reads: Vec<u64> = (0..SAMPLES)
            .map(|_| {
                let start = now();
                now() - start
            })
            .collect();
        reads.sort_unstable();
        Self { unit: mode.unit(), overhead: reads[SAMPLES / 2] }
    }

    /// The time from `start` (a [`now`]) until now.
    fn since(&self, start: u64) -> f64 {
        (now() - start).saturating_sub(self.overhead) as f64
    }

    /// What `step` returns, and its time.
    fn time<T>(&self, step: impl FnOnce() -> T) -> (T, f64) {
        let start = now();
        let result = step();
        (result, self.since(start))
    }
}

/// How a step's system call ended, as far as the checks need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// No completion (waits for another kernel, or a handler of no call).
    NotYet,
    /// Done with a new capability.
    WithCap,
    /// Done (a revoke).
    Done,
    Refused,
}

/// What a step left for its kernel thread: messages and a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Left {
    messages: usize,
    ended: Ended,
}

const fn left(messages: usize, ended: Ended) -> Left {
    Left { messages, ended }
}

/// Takes (and drops) what the last step left, as a kernel thread does.
fn take_left(kernel: &mut Kernel) -> Left {
    let messages = kernel.drain_outbox().count();
    let ended = match kernel.take_completions().first().map(|completion| completion.outcome) {
        None => Ended::NotYet,
        Some(Outcome::Done(Some(_))) => Ended::WithCap,
        Some(Outcome::Done(None)) => Ended::Done,
        Some(Outcome::Refused | Outcome::Aborted) => Ended::Refused,
    };
    left(messages, ended)
}

/// `step`'s time, if it left `expected`.
fn checked(clock: &Clock, expected: Left, step: impl FnOnce() -> Left) -> Option<f64> {
    let (found, spent) = clock.time(step);
    (found == expected).then_some(spent)
}

/// [`SAMPLES`] samples reported as `costs/<name>`; their median, or
/// `None` (said on the console) when a sample failed.
fn measure(clock: &Clock, name: &str, mut sample: impl FnMut() -> Option<f64>) -> Option<f64> {
    let samples: Option<Vec<f64>> = (0..SAMPLES).map(|_| sample()).collect();
    let Some(mut samples) = samples else {
        machine::println!("kbench: costs: {name}: a step did not do what it should");
        return None;
    };
    report(GROUP, name, clock.unit, &mut samples)
}

/// Kernel `id` with [`BACKGROUND`] capabilities of a bystander.
fn populated(id: KernelId) -> Kernel {
    let mut kernel = Kernel::new(id);
    let bystander = ProcessId { kernel: id, number: 9 };
    for _ in 0..BACKGROUND {
        kernel.create(bystander);
    }
    kernel
}

fn remote_key(kernel: KernelId, index: u32) -> CapKey {
    CapKey { kernel, index }
}

/// Enters `child` (on another kernel) under `parent`, as an obtain from
/// there does.
fn link_remote_child(kernel: &mut Kernel, parent: CapKey, child: CapKey) {
    kernel.receive(child.kernel, Message::ObtainRequest { op: OpId(0), parent, child });
    kernel.take_outbox();
}

fn call_obtain_local(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let root = kernel.create(OWNER)?;
    measure(clock, "call_obtain_local", || {
        checked(clock, left(0, Ended::WithCap), || {
            kernel.obtain(NEIGHBOUR, root);
            take_left(&mut kernel)
        })
    })
}

fn call_obtain_remote(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let mut fresh = 0..;
    measure(clock, "call_obtain_remote", || {
        let parent = remote_key(THERE, fresh.next()?);
        checked(clock, left(1, Ended::NotYet), || {
            kernel.obtain(OWNER, parent);
            take_left(&mut kernel)
        })
    })
}

fn call_delegate_local(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let root = kernel.create(OWNER)?;
    measure(clock, "call_delegate_local", || {
        checked(clock, left(0, Ended::WithCap), || {
            kernel.delegate(OWNER, root, NEIGHBOUR);
            take_left(&mut kernel)
        })
    })
}

fn call_delegate_remote(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let root = kernel.create(OWNER)?;
    measure(clock, "call_delegate_remote", || {
        checked(clock, left(1, Ended::NotYet), || {
            kernel.delegate(OWNER, root, RECEIVER);
            take_left(&mut kernel)
        })
    })
}

/// A revoke of a capability without parent or children; the median.
fn call_revoke_leaf(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    measure(clock, "call_revoke_leaf", || {
        let root = kernel.create(OWNER)?;
        revoke_time(clock, &mut kernel, root, left(0, Ended::Done))
    })
}

fn revoke_time(clock: &Clock, kernel: &mut Kernel, cap: CapKey, expected: Left) -> Option<f64> {
    checked(clock, expected, || {
        kernel.revoke(OWNER, cap);
        take_left(kernel)
    })
}

/// A chain of `length` capabilities on `HERE`, each obtained from the
/// last, alternately by `NEIGHBOUR` and `OWNER`; its root (`OWNER`'s).
fn local_chain(kernel: &mut Kernel, length: u32) -> Option<CapKey> {
    let root = kernel.create(OWNER)?;
    let mut last = root;
    for link in 1..length {
        let holder = if link % 2 == 1 { NEIGHBOUR } else { OWNER };
        kernel.obtain(holder, last);
        last = match kernel.take_completions().first()?.outcome {
            Outcome::Done(Some(copy)) => copy,
            _ => return None,
        };
    }
    Some(root)
}

fn revoke_per_local_cap(clock: &Clock, leaf: f64) -> Option<f64> {
    let mut kernel = populated(HERE);
    measure(clock, "revoke_per_local_cap", || {
        let root = local_chain(&mut kernel, CHAIN)?;
        let spent = revoke_time(clock, &mut kernel, root, left(0, Ended::Done))?;
        Some((spent - leaf) / f64::from(CHAIN - 1))
    })
}

/// The slope between a chain of [`SHORT_CHAINS`]`.0` and one of `.1`:
/// (revoke of the longer - revoke of the shorter) / the difference, with
/// no leaf in it (a leaf's revoke takes a path of its own).
fn revoke_per_local_cap_short(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let (shorter, longer) = SHORT_CHAINS;
    measure(clock, "revoke_per_local_cap_short", || {
        let root = local_chain(&mut kernel, longer)?;
        let long = revoke_time(clock, &mut kernel, root, left(0, Ended::Done))?;
        let root = local_chain(&mut kernel, shorter)?;
        let short = revoke_time(clock, &mut kernel, root, left(0, Ended::Done))?;
        Some((long - short) / f64::from(longer - shorter))
    })
}

fn revoke_per_remote_child(clock: &Clock, leaf: f64) -> Option<f64> {
    let mut kernel = populated(HERE);
    let mut fresh = 0..;
    measure(clock, "revoke_per_remote_child", || {
        let root = kernel.create(OWNER)?;
        for child in 0..REMOTE_CHILDREN {
            let there = KernelId(1 + (child % REMOTE_KERNELS) as u8);
            link_remote_child(&mut kernel, root, remote_key(there, fresh.next()?));
        }
        let spent = revoke_time(clock, &mut kernel, root, left(REMOTE_CHILDREN as usize, Ended::NotYet))?;
        answer_revocation(&mut kernel, root)?;
        Some((spent - leaf) / f64::from(REMOTE_CHILDREN))
    })
}

/// Every remote child's reply to the revocation of `root` (not measured).
fn answer_revocation(kernel: &mut Kernel, root: CapKey) -> Option<()> {
    for child in 0..REMOTE_CHILDREN {
        kernel.receive(KernelId(1 + (child % REMOTE_KERNELS) as u8), Message::RevokeReply { root });
    }
    (take_left(kernel) == left(0, Ended::Done)).then_some(())
}

fn handle_obtain_request(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let parent = kernel.create(OWNER)?;
    let mut fresh = 0..;
    measure(clock, "handle_obtain_request", || {
        let index = fresh.next()?;
        let request = Message::ObtainRequest { op: OpId(index), parent, child: remote_key(THERE, index) };
        checked(clock, left(1, Ended::NotYet), || {
            kernel.receive(THERE, request);
            take_left(&mut kernel)
        })
    })
}

fn handle_obtain_reply(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let parent = remote_key(THERE, 0);
    measure(clock, "handle_obtain_reply", || {
        let op = kernel.obtain(OWNER, parent);
        let Message::ObtainRequest { child, .. } = kernel.take_outbox().first()?.message else { return None };
        let reply = Message::ObtainReply { op, parent, child, granted: true };
        checked(clock, left(0, Ended::WithCap), || {
            kernel.receive(THERE, reply);
            take_left(&mut kernel)
        })
    })
}

fn delegate_request(op: u32) -> Message {
    Message::DelegateRequest { op: OpId(op), parent: HOME_PARENT, to: RECEIVER }
}

fn handle_delegate_request(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(THERE);
    let mut fresh = 0..;
    measure(clock, "handle_delegate_request", || {
        let request = delegate_request(fresh.next()?);
        checked(clock, left(1, Ended::NotYet), || {
            kernel.receive(HERE, request);
            take_left(&mut kernel)
        })
    })
}

fn handle_delegate_reply(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let parent = kernel.create(OWNER)?;
    let mut fresh = 0..;
    measure(clock, "handle_delegate_reply", || {
        let op = kernel.delegate(OWNER, parent, RECEIVER);
        kernel.take_outbox();
        let reply = Message::DelegateReply { op, parent, child: Some(remote_key(THERE, fresh.next()?)) };
        checked(clock, left(1, Ended::WithCap), || {
            kernel.receive(THERE, reply);
            take_left(&mut kernel)
        })
    })
}

/// A copy `THERE` made for a delegation from `HOME_PARENT`, not usable
/// until acknowledged.
fn granted_copy(kernel: &mut Kernel, op: u32) -> Option<CapKey> {
    kernel.receive(HERE, delegate_request(op));
    match kernel.take_outbox().first()?.message {
        Message::DelegateReply { child, .. } => child,
        _ => None,
    }
}

fn acknowledgement(child: CapKey) -> Message {
    Message::DelegateAck { parent: HOME_PARENT, child, commit: true }
}

fn handle_delegate_ack(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(THERE);
    let mut fresh = 0..;
    measure(clock, "handle_delegate_ack", || {
        let child = granted_copy(&mut kernel, fresh.next()?)?;
        checked(clock, left(0, Ended::NotYet), || {
            kernel.receive(HERE, acknowledgement(child));
            take_left(&mut kernel)
        })
    })
}

/// A leaf delegated from `HOME_PARENT`, revoked at the request of its
/// parent's kernel: marked, removed, the reply queued (no `Unlink`: the
/// parent is being revoked there).
fn handle_revoke_request(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(THERE);
    let mut fresh = 0..;
    measure(clock, "handle_revoke_request", || {
        let cap = granted_copy(&mut kernel, fresh.next()?)?;
        kernel.receive(HERE, acknowledgement(cap));
        let request = Message::RevokeRequest { cap, reply_to: HOME_PARENT };
        checked(clock, left(1, Ended::NotYet), || {
            kernel.receive(HERE, request);
            take_left(&mut kernel)
        })
    })
}

/// The one reply a revoke of a capability with one remote child waits
/// for: the revocation finishes and the call completes.
fn handle_revoke_reply(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let mut fresh = 0..;
    measure(clock, "handle_revoke_reply", || {
        let root = kernel.create(OWNER)?;
        link_remote_child(&mut kernel, root, remote_key(THERE, fresh.next()?));
        kernel.revoke(OWNER, root);
        (take_left(&mut kernel) == left(1, Ended::NotYet)).then_some(())?;
        checked(clock, left(0, Ended::Done), || {
            kernel.receive(THERE, Message::RevokeReply { root });
            take_left(&mut kernel)
        })
    })
}

/// A copy on `THERE` delegated from `HOME_PARENT` (acknowledged), with
/// one child obtained from it on `HERE`: the middle of a chain that
/// alternates between two kernels.
fn middle_of_chain(kernel: &mut Kernel, op: u32) -> Option<CapKey> {
    let cap = granted_copy(kernel, op)?;
    kernel.receive(HERE, acknowledgement(cap));
    link_remote_child(kernel, cap, remote_key(HERE, op));
    Some(cap)
}

/// The revoke request from the parent's kernel for [`middle_of_chain`]:
/// marked, its revocation recorded, one `RevokeRequest` queued to its
/// child's kernel (no reply yet).
fn handle_revoke_request_inner(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(THERE);
    let mut fresh = 0..;
    measure(clock, "handle_revoke_request_inner", || {
        let cap = middle_of_chain(&mut kernel, fresh.next()?)?;
        let request = Message::RevokeRequest { cap, reply_to: HOME_PARENT };
        checked(clock, left(1, Ended::NotYet), || {
            kernel.receive(HERE, request);
            take_left(&mut kernel)
        })
    })
}

/// The child's reply that finishes the revocation of
/// [`middle_of_chain`] asked for by the parent's kernel: the capability
/// removed (no `Unlink`), the `RevokeReply` queued back.
fn handle_revoke_reply_inner(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(THERE);
    let mut fresh = 0..;
    measure(clock, "handle_revoke_reply_inner", || {
        let cap = middle_of_chain(&mut kernel, fresh.next()?)?;
        kernel.receive(HERE, Message::RevokeRequest { cap, reply_to: HOME_PARENT });
        match kernel.take_outbox().as_slice() {
            [onward] if matches!(onward.message, Message::RevokeRequest { .. }) => {}
            _ => return None,
        }
        let count = kernel.capability_count();
        let spent = checked(clock, left(1, Ended::NotYet), || {
            kernel.receive(HERE, Message::RevokeReply { root: cap });
            take_left(&mut kernel)
        })?;
        (kernel.capability_count() + 1 == count).then_some(spent)
    })
}

fn handle_unlink(clock: &Clock) -> Option<f64> {
    let mut kernel = populated(HERE);
    let mut fresh = 0..;
    measure(clock, "handle_unlink", || {
        let parent = kernel.create(OWNER)?;
        let child = remote_key(THERE, fresh.next()?);
        link_remote_child(&mut kernel, parent, child);
        checked(clock, left(0, Ended::NotYet), || {
            kernel.receive(THERE, Message::Unlink { parent, child });
            take_left(&mut kernel)
        })
    })
}

fn message_send(clock: &Clock) -> Option<f64> {
    let ring = Ring::new();
    measure(clock, "message_send", || {
        let (sent, spent) = clock.time(|| ring.try_send(&encode(black_box(&SAMPLE_MESSAGE))).is_ok());
        ring.try_receive()?;
        sent.then_some(spent)
    })
}

fn message_receive(clock: &Clock) -> Option<f64> {
    let ring = Ring::new();
    measure(clock, "message_receive", || {
        ring.try_send(&encode(&SAMPLE_MESSAGE)).ok()?;
        let (message, spent) = clock.time(|| black_box(ring.try_receive().map(|words| decode(&words))));
        (message? == Ok(SAMPLE_MESSAGE)).then_some(spent)
    })
}

/// `kernel_turn` (see the module comment): kernel 0 of 2, as the
/// multikernel benchmark's `kernel_loop` sets it up; a turn that did
/// something, or would not park, fails the record.
fn kernel_turn(clock: &Clock) -> Option<f64> {
    const KERNELS: usize = 2;
    let shared = Shared::new(KERNELS);
    let mut node = Node::new(Kernel::new(HERE), KERNELS);
    let links = shared.links(HERE.0 as usize);
    measure(clock, "kernel_turn", || {
        let (more, spent) = clock.time(|| turn(HERE.0 as usize, &mut node, &links, &shared));
        (!more).then_some(spent)
    })
}

/// `notify` (see the module comment): a kernel thread on the next CPU
/// parks, takes the time when it runs again and wakes this thread.
fn notify(clock: &Clock) -> Option<f64> {
    let cpus = machine::percpu::online_count();
    if cpus < 2 {
        machine::println!("kbench: costs: notify needs 2 CPUs, this boot has {cpus}");
        return None;
    }
    let woke_at = Arc::new(AtomicU64::new(0));
    let (woke, waker) = (woke_at.clone(), sched::current());
    let other = (machine::percpu::current_index() + 1) % cpus;
    let wakee = sched::spawn_on(other, Pinning::Pinned, "notified", move || {
        for _ in 0..SAMPLES {
            sched::park();
            woke.store(now(), Ordering::Release);
            sched::unpark(&waker);
        }
    })
    .ok()?;
    measure(clock, "notify", || notify_once(clock, &wakee, &woke_at))
}

/// One round of [`notify`]; `None` if the wakee never parked.
fn notify_once(clock: &Clock, wakee: &Arc<sched::Thread>, woke_at: &AtomicU64) -> Option<f64> {
    settle(wakee)?;
    woke_at.store(0, Ordering::Release);
    let start = now();
    sched::unpark(wakee);
    // A permit left over from the settling sleep ends a park early: park
    // until the wakee's time is there.
    while woke_at.load(Ordering::Acquire) == 0 {
        sched::park();
    }
    let spent = woke_at.load(Ordering::Acquire).saturating_sub(start + clock.overhead);
    Some(spent as f64)
}

/// Sleeps until `wakee` is parked and its CPU has had time to halt (this
/// CPU asleep meanwhile, so that QEMU runs the other vCPU).
fn settle(wakee: &sched::Thread) -> Option<()> {
    for _ in 0..10 {
        sched::sleep_until(now() + SETTLE, || false);
        if wakee.park_state() == ParkState::Parked {
            return Some(());
        }
    }
    None
}

/// `kernel_hop` (see the module comment), from the medians of
/// `call_obtain_local` and `call_obtain_remote`: kernels 0 and 1 of a
/// [`Cluster`] on CPUs 0 and 1.
fn kernel_hop(clock: &Clock, calls: Option<(f64, f64)>) -> Option<f64> {
    let Some((local_call, remote_call)) = calls else {
        machine::println!("kbench: costs: kernel_hop needs call_obtain_local and call_obtain_remote");
        return None;
    };
    let cpus = machine::percpu::online_count();
    if cpus < 2 {
        machine::println!("kbench: costs: kernel_hop needs 2 CPUs, this boot has {cpus}");
        return None;
    }
    let cluster = Cluster::start(2)?;
    let round_trips = f64::from(ROUND_TRIPS);
    measure(clock, "kernel_hop", || {
        let local = obtains(clock, &cluster, 0)?;
        let remote = obtains(clock, &cluster, 1)?;
        Some((remote - local - round_trips * (remote_call - local_call)) / (2.0 * round_trips))
    })
}

/// The time of [`ROUND_TRIPS`] obtains, one after another through
/// `cluster` (each handed to kernel 0 and waited for), by a process of
/// kernel 0 from a fresh root on kernel `home`; the root is revoked after
/// (not timed).
fn obtains(clock: &Clock, cluster: &Cluster, home: usize) -> Option<f64> {
    let owner = process(home, 0);
    let Outcome::Done(Some(root)) = cluster.call(home, Request::Create(owner)) else { return None };
    let caller = process(0, 1);
    let start = now();
    for _ in 0..ROUND_TRIPS {
        if !matches!(cluster.call(0, Request::Obtain { caller, parent: root }), Outcome::Done(Some(_))) {
            return None;
        }
    }
    let spent = clock.since(start);
    (cluster.call(home, Request::Revoke { caller: owner, cap: root }) == Outcome::Done(None)).then_some(spent)
}
