//! The distributed capability protocol on real CPUs (issue 20's first
//! in-kernel step): 2 and 4 kernels, each a kernel thread pinned to its own
//! CPU (round robin when there are fewer CPUs), sharing nothing but
//! `sync::WordRing` channels in kernel memory — 4 slots per ordered pair,
//! SemperOS's in-flight limit — and running `caps::distributed`'s random
//! exercise: a tree over every kernel, then obtains, delegations, revokes
//! and deaths started on every kernel at once. At quiescence every call
//! has completed, the consistency audit of every kernel's part passes and
//! no revoked capability or descendant is left.
//!
//! A kernel with nothing to do parks; a sender wakes its receivers (and a
//! kernel that sees the end wakes everyone), through `sched::unpark` —
//! the wake IPI when the receiver's CPU is idle: SemperOS's notification.
//!
//! Not yet the groups themselves: the kernels here are threads of one
//! kernel (one scheduler, one heap).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use caps::distributed::exercise::{chain_scenario, check as check_run, scenario, Driver, Finished, Progress, Scenario, Summary};
use caps::distributed::Channels;
use machine::percpu;
use sched::Pinning;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use testkit::Rng;

use super::runner::{check, Outcome};
use super::waiting::wait_until;
use kernel_objects::SystemFacts;

const RESULTS_LEVEL: Level = Level::new(6);
const PROCESSES: u32 = 3;

type Results = KernelTicketLock<Vec<Option<Result<Finished, String>>>>;
type Threads = KernelTicketLock<Vec<Arc<sched::Thread>>>;

/// One run of `kernels` kernels on seed `seed`.
fn run(kernels: usize, seed: u64) -> Result<Summary, String> {
    let mut rng = Rng::new(seed);
    run_scenario(scenario(kernels, PROCESSES, |bound| rng.below(bound)), &format!("{kernels} kernels, seed {seed}"))
}

/// Runs `scenario`'s kernels, each on its own thread and CPU, to
/// quiescence, and checks the end; `what` names it in errors.
fn run_scenario(scenario: Scenario, what: &str) -> Result<Summary, String> {
    let kernels = scenario.kernels.len();
    let progress = Arc::new(Progress::new(&scenario));
    let channels = Arc::new(Channels::new(kernels));
    let results: Arc<Results> = Arc::new(KernelTicketLock::new(RESULTS_LEVEL, (0..kernels).map(|_| None).collect()));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Arc<Threads> = Arc::new(KernelTicketLock::new(RESULTS_LEVEL, Vec::new()));
    let cpus = percpu::online_count();
    for (me, (kernel, operations)) in scenario.kernels.into_iter().zip(scenario.operations).enumerate() {
        let (progress, channels, results, stop, peers) = (progress.clone(), channels.clone(), results.clone(), stop.clone(), threads.clone());
        let thread = sched::spawn_on(me % cpus, Pinning::Pinned, "group-kernel", move || {
            // Every peer's thread is known before the first wake.
            while peers.lock().len() < kernels {
                sched::yield_now();
            }
            let wake_peers = || peers.lock().iter().enumerate().filter(|(peer, _)| *peer != me).for_each(|(_, thread)| sched::unpark(thread));
            let mut driver = Driver::new(kernel, operations, kernels);
            let links = channels.links(me);
            let outcome = loop {
                if stop.load(Ordering::Acquire) {
                    break Err(format!("kernel {me}: stopped before quiescence"));
                }
                match driver.step(&links, &progress) {
                    Ok(turn) => {
                        if turn.done || turn.sent > 0 {
                            wake_peers();
                        }
                        if turn.done {
                            break Ok(());
                        }
                        if turn.may_wait {
                            sched::park();
                        }
                    }
                    Err(problem) => break Err(problem),
                }
            };
            if outcome.is_err() {
                stop.store(true, Ordering::Release);
                wake_peers();
            }
            results.lock()[me] = Some(outcome.map(|()| driver.finish()));
        })
        .map_err(|error| format!("spawn: {error:?}"))?;
        threads.lock().push(thread);
    }
    let all_done = || results.lock().iter().all(Option::is_some);
    if !wait_until(20_000, all_done) {
        stop.store(true, Ordering::Release);
        threads.lock().iter().for_each(sched::unpark);
        wait_until(20_000, all_done);
        return Err(format!("{what}: no quiescence (a message or a wake-up lost?)"));
    }
    let finished: Vec<Finished> = core::mem::take(&mut *results.lock()).into_iter().flatten().collect::<Result<_, _>>()?;
    check_run(&finished).map_err(|problem| format!("{what}: {problem}"))
}

/// 2 and 4 kernels, 8 seeds each: every run reaches quiescence and passes
/// its checks, and the runs did something (revokes acknowledged, tree left).
pub fn kernels_on_their_own_cpus_keep_one_capability_tree(_facts: &SystemFacts) -> Outcome {
    for kernels in [2, 4] {
        let (mut revoked, mut left) = (0, 0);
        for seed in 1..=8 {
            let summary = run(kernels, seed)?;
            revoked += summary.revoked;
            left += summary.left;
        }
        check(revoked >= 4 && left >= 8, || format!("{kernels} kernels: only {revoked} revokes acknowledged, {left} capabilities left"))?;
    }
    Ok(())
}

/// A chain of 200 copies going round 2 and then 4 kernels, revoked from its
/// root: once the revoke is acknowledged no copy is left anywhere (the
/// check) — the revocation crossed kernels 200 times.
pub fn a_revoke_of_a_chain_over_every_kernel_leaves_nothing(_facts: &SystemFacts) -> Outcome {
    for kernels in [2, 4] {
        let chain = chain_scenario(kernels, 200).ok_or_else(|| format!("{kernels} kernels: the chain was not built"))?;
        let built: usize = chain.kernels.iter().map(|kernel| kernel.capabilities().len()).sum();
        check(built == 201, || format!("{kernels} kernels: the chain holds {built} capabilities, not 201"))?;
        let summary = run_scenario(chain, &format!("chain over {kernels} kernels"))?;
        check(summary.revoked == 1 && summary.left == 0, || format!("{kernels} kernels: {} revokes acknowledged, {} capabilities left", summary.revoked, summary.left))?;
    }
    Ok(())
}

crate::kernel_tests! {
    "multikernel" => [kernels_on_their_own_cpus_keep_one_capability_tree, a_revoke_of_a_chain_over_every_kernel_leaves_nothing],
}
