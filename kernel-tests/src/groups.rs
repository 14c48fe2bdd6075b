//! The group kernels on CPU groups (issue 20): the ktest image booted with
//! `groups=2` and `groups=4` on 4 CPUs (`cargo xtask test --only ktest`
//! runs `groups::` and `multikernel::` there), each group's capability
//! kernel a thread on its own group's CPU, talking to the others only
//! through `WordRing` channels (`kernel_objects::group_kernels`). Each test
//! ends with the consistency audit of every group's database, taken once
//! every kernel is quiet (`caps::distributed::audit_views`).
//!
//! Booted without groups, each test checks instead that there are no
//! group kernels to ask (a call answers None).
//!
//! Process numbers here start at 1,000,000 per test so that they never
//! meet another test's (a killed number stays dead in its group).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::sync::atomic::{AtomicU32, Ordering};

use caps::distributed::{audit_views, CapKey, KernelId, KernelView, ProcessId};
use kernel_objects::group_kernels::{self, Answer, Request};
use kernel_objects::SystemFacts;

use super::runner::{check, Outcome};
use super::waiting::wait_until;

/// The next test process number (a fresh range per use).
static NEXT_NUMBER: AtomicU32 = AtomicU32::new(1_000_000);

fn fresh_process(group: usize) -> ProcessId {
    ProcessId { kernel: KernelId(group as u8), number: NEXT_NUMBER.fetch_add(1, Ordering::Relaxed) }
}

/// The group kernels, started (the ktest image starts no personality);
/// None when booted without groups, after checking that nothing answers.
fn groups() -> Result<Option<usize>, String> {
    group_kernels::start()?;
    let count = kernel_objects::groups::count();
    if count < 2 {
        check(!group_kernels::running(), || "group kernels run with one group".into())?;
        check(group_kernels::call(0, Request::Snapshot).is_none(), || "a call was answered with one group".into())?;
        return Ok(None);
    }
    check(group_kernels::running(), || "no group kernels with several groups".into())?;
    Ok(Some(count))
}

fn create(owner: ProcessId) -> Result<CapKey, String> {
    match group_kernels::call(owner.kernel.0 as usize, Request::Create { owner }) {
        Some(Answer::Done(Some(key))) => Ok(key),
        other => Err(format!("create for {owner:?}: {other:?}")),
    }
}

fn obtain(caller: ProcessId, parent: CapKey) -> Option<Answer> {
    group_kernels::call(caller.kernel.0 as usize, Request::Obtain { caller, parent })
}

/// Every group's view, once every kernel had nothing left to send and no
/// operation open; the audit's verdict on them (retried for up to 5 s
/// while messages are still in flight).
fn audited(count: usize) -> Result<Vec<KernelView>, String> {
    let last = RefCell::new(String::from("no snapshot"));
    let views = RefCell::new(Vec::new());
    let settled = wait_until(5_000, || match snapshot_all(count) {
        Ok(all) => match audit_views(&all) {
            Ok(()) => {
                *views.borrow_mut() = all;
                true
            }
            Err(problem) => {
                *last.borrow_mut() = problem;
                false
            }
        },
        Err(problem) => {
            *last.borrow_mut() = problem;
            false
        }
    });
    check(settled, || format!("the audit never passed: {}", last.borrow()))?;
    Ok(views.into_inner())
}

/// Every group's view, or why one is not quiet yet.
fn snapshot_all(count: usize) -> Result<Vec<KernelView>, String> {
    let mut views = Vec::new();
    for group in 0..count {
        match group_kernels::call(group, Request::Snapshot) {
            Some(Answer::View(view, true)) => views.push(view),
            Some(Answer::View(_, false)) => return Err(format!("group {group} still had messages to send")),
            other => return Err(format!("group {group}: snapshot answered {other:?}")),
        }
    }
    Ok(views)
}

/// Capabilities held by `owners` in every view.
fn held_by(views: &[KernelView], owners: &[ProcessId]) -> usize {
    views.iter().flat_map(|view| view.capabilities.iter()).filter(|cap| owners.contains(&cap.owner)).count()
}

/// A capability made in group 0 is obtained by a process of every other
/// group (an exchange across groups), then a chain of three copies per
/// group going round every kernel is built from it; the root's revoke is
/// acknowledged only when nothing of either is left anywhere.
pub fn an_exchange_and_a_chain_over_every_group_revoke_to_nothing(_facts: &SystemFacts) -> Outcome {
    let Some(count) = groups()? else { return Ok(()) };
    let owner = fresh_process(0);
    let root = create(owner)?;
    let mut owners = Vec::from([owner]);
    for group in 1..count {
        let caller = fresh_process(group);
        owners.push(caller);
        match obtain(caller, root) {
            Some(Answer::Done(Some(copy))) => check(copy.kernel == caller.kernel, || format!("group {group}'s copy {copy:?} is held elsewhere"))?,
            other => return Err(format!("group {group} obtaining the root: {other:?}")),
        }
    }
    let mut parent = root;
    for step in 0..3 * count {
        let caller = fresh_process((step + 1) % count);
        owners.push(caller);
        parent = match obtain(caller, parent) {
            Some(Answer::Done(Some(copy))) => copy,
            other => return Err(format!("chain step {step}: {other:?}")),
        };
    }
    let before = audited(count)?;
    let made = held_by(&before, &owners);
    check(made == 1 + (count - 1) + 3 * count, || format!("{made} capabilities made, not {}", 1 + (count - 1) + 3 * count))?;
    let revoked = group_kernels::call(0, Request::Revoke { caller: owner, cap: root });
    check(matches!(revoked, Some(Answer::Done(_))), || format!("the root's revoke: {revoked:?}"))?;
    let after = audited(count)?;
    let left = held_by(&after, &owners);
    check(left == 0, || format!("{left} capabilities left after the acknowledged revoke"))
}

/// A process of every group obtains copies of a root over and over, and
/// delegates each copy it gets to a process of the next group, while the
/// root's revoke runs: every call is answered (a copy or a refusal), and
/// afterwards no copy of the root is left anywhere and the audit passes.
pub fn a_revoke_racing_obtains_and_delegations_on_every_group_leaves_nothing(_facts: &SystemFacts) -> Outcome {
    let Some(count) = groups()? else { return Ok(()) };
    let owner = fresh_process(0);
    let root = create(owner)?;
    let callers: Vec<ProcessId> = (0..count).map(fresh_process).collect();
    let receivers: Vec<ProcessId> = (0..count).map(|group| fresh_process((group + 1) % count)).collect();
    let answered = alloc::sync::Arc::new(AtomicU32::new(0));
    let delegated = alloc::sync::Arc::new(AtomicU32::new(0));
    let layout = kernel_objects::groups::layout();
    const ROUNDS: u32 = 20;
    for (&caller, &receiver) in callers.iter().zip(&receivers) {
        let (answered, delegated) = (answered.clone(), delegated.clone());
        let cpu = layout.cpus_of(caller.kernel.0 as usize).start;
        sched::spawn_on(cpu, sched::Pinning::Pinned, "obtainer", move || {
            let group = caller.kernel.0 as usize;
            for _ in 0..ROUNDS {
                let copy = obtain(caller, root);
                if let Some(Answer::Done(Some(copy))) = copy {
                    let given = group_kernels::call(group, Request::Delegate { caller, parent: copy, to: receiver });
                    if matches!(given, Some(Answer::Done(Some(_)))) {
                        delegated.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if copy.is_some() {
                    answered.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .map_err(|error| format!("spawn: {error:?}"))?;
    }
    // Let some obtains and delegations land first.
    wait_until(2_000, || delegated.load(Ordering::Relaxed) >= count as u32);
    let revoked = group_kernels::call(0, Request::Revoke { caller: owner, cap: root });
    check(matches!(revoked, Some(Answer::Done(_))), || format!("the root's revoke: {revoked:?}"))?;
    let everyone = ROUNDS * count as u32;
    check(wait_until(10_000, || answered.load(Ordering::Relaxed) == everyone), || format!("{} of {everyone} obtains answered", answered.load(Ordering::Relaxed)))?;
    check(delegated.load(Ordering::Relaxed) > 0, || "no delegation was committed before the revoke".into())?;
    let views = audited(count)?;
    let mut all = callers.clone();
    all.extend(&receivers);
    all.push(owner);
    let left = held_by(&views, &all);
    check(left == 0, || format!("{left} copies of the revoked root are left"))
}

/// A process of the last group obtains a capability of group 0 and dies
/// before its kernel has the answer (the kill is posted right behind the
/// obtain): the exchange ends, the copy is not left behind, and the
/// audit passes.
pub fn a_process_killed_mid_exchange_leaves_nothing(_facts: &SystemFacts) -> Outcome {
    let Some(count) = groups()? else { return Ok(()) };
    let owner = fresh_process(0);
    let root = create(owner)?;
    let mut victims = Vec::new();
    for _ in 0..8 {
        let victim = fresh_process(count - 1);
        victims.push(victim);
        let group = count - 1;
        check(group_kernels::post(group, Request::Obtain { caller: victim, parent: root }), || "the obtain was not posted".into())?;
        check(group_kernels::post(group, Request::Kill { number: victim.number }), || "the kill was not posted".into())?;
    }
    let views = audited(count)?;
    let left = held_by(&views, &victims);
    check(left == 0, || format!("{left} copies of dead processes are left"))?;
    let root_view = views.iter().flat_map(|view| view.capabilities.iter()).find(|cap| cap.key == root).ok_or("the root is gone")?;
    check(root_view.children.is_empty(), || format!("the root still lists {:?}", root_view.children))?;
    let revoked = group_kernels::call(0, Request::Revoke { caller: owner, cap: root });
    check(matches!(revoked, Some(Answer::Done(_))), || format!("the root's revoke: {revoked:?}"))
}

crate::kernel_tests! {
    "groups" => [
        an_exchange_and_a_chain_over_every_group_revoke_to_nothing,
        a_revoke_racing_obtains_and_delegations_on_every_group_leaves_nothing,
        a_process_killed_mid_exchange_leaves_nothing,
    ],
}
